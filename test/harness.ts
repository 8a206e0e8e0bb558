/**
 * Integration harness: real edges on loopback against the run's Postgres
 * database and Redis; each test makes its own account and keys.
 */
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, expect, inject } from "vitest";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream.ts";
import { startEdge, type RunningEdge } from "../internal/edge/index.ts";
import { conversionSchema, edgeSchema, extractionSchema, parseConfig, workerSchema, type Env } from "../internal/platform/config/index.ts";
import { startWorker, type RunningWorker } from "../internal/jobs/service.ts";
import { startConversion, type RunningConversion } from "../internal/conversion/index.ts";
import { startExtraction, type RunningExtraction } from "../internal/extraction/index.ts";
import { migrateToLatest, openDatabase, type DatabaseHandle, type DB } from "../internal/platform/db/index.ts";
import { newId } from "../internal/platform/ids/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { adminAddCredits, adminCreateAccount, adminCreateKey } from "../internal/cli/admin/index.ts";
import { RedisRateLimiter } from "../internal/ratelimit/index.ts";
import { DEFAULT_PERMISSIONS } from "../internal/auth/index.ts";
import { closeAll } from "./support.ts";

export const databaseUrl = () => inject("databaseUrl");
export const redisUrl = () => inject("redisUrl");

export interface TestEdgeOptions {
  /** Use Redis for rate limits and key fences (default true). */
  redis?: boolean;
  env?: Env;
}

export async function startTestEdge(opts: TestEdgeOptions = {}): Promise<RunningEdge> {
  const env: Env = {
    DATABASE_URL: databaseUrl(),
    ...(opts.redis === false ? {} : { REDIS_URL: redisUrl() }),
    FOLIO_HTTP_HOST: "127.0.0.1",
    FOLIO_HTTP_PORT: "0",
    FOLIO_METRICS_HOST: "127.0.0.1",
    FOLIO_METRICS_PORT: "0",
    FOLIO_DB_POOL_SIZE: "20",
    // Every test edge shares 127.0.0.1 and one Redis: many tests send unknown keys on purpose.
    FOLIO_AUTH_FAILURES_PER_MINUTE: "0",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    ...opts.env,
  };
  const config = parseConfig(edgeSchema, env);
  return startEdge({ config, log: createLogger(config.LOG_LEVEL) });
}

let shared: DatabaseHandle | undefined;
/**
 * One pooled connection set for test bookkeeping (creating accounts, reading
 * rows). A file that closes it at its end leaves the next file of the same
 * worker (the unit tier shares modules between files) a new one.
 */
export async function testDb(): Promise<DatabaseHandle> {
  if (!shared) {
    const handle = await openDatabase({ databaseUrl: databaseUrl(), poolSize: 5 });
    shared = {
      ...handle,
      close: async () => {
        if (shared?.db === handle.db) shared = undefined;
        await handle.close();
      },
    };
  }
  return shared;
}

/**
 * A database of the test's own on the test server, empty (not migrated):
 * for tests that change the schema or drop partitions, which the shared
 * database's other tests must not see. `close()` drops it.
 */
export async function privateDatabase(name: string): Promise<DatabaseHandle & { url: string }> {
  const { db } = await testDb();
  const dbName = `${new URL(databaseUrl()).pathname.slice(1)}_${name}`;
  await sql`drop database if exists ${sql.id(dbName)}`.execute(db);
  await sql`create database ${sql.id(dbName)}`.execute(db);
  const url = new URL(databaseUrl());
  url.pathname = `/${dbName}`;
  const handle = await openDatabase({ databaseUrl: url.toString(), poolSize: 3 });
  return {
    ...handle,
    url: url.toString(),
    close: async () => {
      await handle.close();
      await sql`drop database if exists ${sql.id(dbName)} with (force)`.execute(db);
    },
  };
}

let uniq = 0;
export interface TestAccount {
  accountId: string;
  /** Admin key with every permission. */
  adminKey: string;
  adminKeyId: string;
}

/** A new account with an admin key; `creditsCents` default 1000. */
export async function createTestAccount(o: { creditsCents?: number; requestsPerMinute?: number; requestsPerDay?: number; plan?: string } = {}): Promise<TestAccount> {
  const { db } = await testDb();
  const limiter = new RedisRateLimiter(redisUrl(), { onError: "local", log: createLogger("silent") });
  try {
    const r = await adminCreateAccount(
      { db, limiter },
      {
        email: `t${process.pid}.${Date.now()}.${uniq++}@example.test`,
        name: "test account",
        plan: o.plan,
        creditsCents: o.creditsCents ?? 1000,
        requestsPerMinute: o.requestsPerMinute ?? 10_000,
        requestsPerDay: o.requestsPerDay ?? 1_000_000,
      },
    );
    return { accountId: r.account.id, adminKey: r.api_key.key, adminKeyId: r.api_key.id };
  } finally {
    await limiter.close();
  }
}

export async function createTestKey(accountId: string, permissions?: string[]): Promise<{ id: string; key: string }> {
  const { db } = await testDb();
  // Default: what the API gives a key created without permissions (no admin).
  const r = await adminCreateKey({ db }, { accountId, name: "test", permissions: permissions ?? [...DEFAULT_PERMISSIONS] });
  return { id: r.id, key: r.key };
}

export async function addCredits(accountId: string, cents: number): Promise<void> {
  const { db } = await testDb();
  await adminAddCredits({ db }, { accountId, cents });
}

export interface Call {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Calls the edge with a key; `body` objects are sent as JSON; `more` adds headers (an Idempotency-Key) and a signal. */
export async function call(
  edge: { url: string },
  method: string,
  path: string,
  key?: string,
  body?: unknown,
  more: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Call> {
  const headers: Record<string, string> = { ...more.headers };
  if (key) headers.authorization = `Bearer ${key}`;
  let payload: string | undefined;
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = typeof body === "string" ? body : JSON.stringify(body);
  }
  const res = await fetch(edge.url + path, { method, headers, body: payload, ...(more.signal ? { signal: more.signal } : {}) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Fails unless the call was refused with `status` and the error `code` of the one error shape; the message shows the body. */
export function expectRefused(r: Call, status: number, code: string): void {
  expect({ status: r.status, code: r.body?.error?.code }, JSON.stringify(r.body)).toEqual({ status, code });
}

/** A running extraction service and an edge wired to it over loopback gRPC. */
export interface TestStack {
  edge: RunningEdge;
  /** A test that kills it and starts another in its place puts the new one here; close() closes that. */
  extraction: RunningExtraction;
  /** Present when `conversion` was asked for. */
  conversion?: RunningConversion;
  close(): Promise<void>;
}

/** A gRPC service of a test: loopback, any free ports, quiet. */
function loopbackService(): Env {
  return {
    FOLIO_GRPC_HOST: "127.0.0.1",
    FOLIO_GRPC_PORT: "0",
    FOLIO_METRICS_HOST: "127.0.0.1",
    FOLIO_METRICS_PORT: "0",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
  };
}

/**
 * Starts the conversion service on loopback with the given environment
 * (FOLIO_SANDBOX etc.). Without warm runsc sandboxes unless `env` asks for
 * them: a pool per test stack, restored or pre-started, would keep
 * LibreOffices starting on the run's few cores for documents that mostly
 * never come (the pools have tests of their own: runsc.prestart and
 * runsc.restore, and the fault suite's pre-started one).
 */
export async function startTestConversion(env: Env = {}): Promise<RunningConversion> {
  const config = parseConfig(conversionSchema, {
    ...loopbackService(),
    FOLIO_RUNSC_PRESTART: "false",
    FOLIO_RUNSC_RESTORE: "false",
    ...env,
  });
  return startConversion({ config, log: createLogger(config.LOG_LEVEL) });
}

/**
 * Starts the extraction service on loopback (local engines; the fake upstream
 * when given); `env` may name its port (FOLIO_GRPC_PORT), to start it again
 * where an edge already dials.
 */
export async function startTestExtraction(opts: { upstream?: { baseUrl: string; apiKey: string }; env?: Env } = {}): Promise<RunningExtraction> {
  const config = parseConfig(extractionSchema, {
    ...loopbackService(),
    ...(opts.upstream ? { FOLIO_UPSTREAM_BASE_URL: opts.upstream.baseUrl, FOLIO_UPSTREAM_API_KEY: opts.upstream.apiKey } : {}),
    ...opts.env,
  });
  return startExtraction({ config, log: createLogger(config.LOG_LEVEL) });
}

/**
 * Starts the extraction service (local engines; the fake upstream when given)
 * and an edge that talks to it, like `folio dev` does.
 */
export async function startStack(
  opts: { upstream?: { baseUrl: string; apiKey: string }; extractionEnv?: Env; edgeEnv?: Env; conversion?: Env } = {},
): Promise<TestStack> {
  const extraction = await startTestExtraction({ ...(opts.upstream ? { upstream: opts.upstream } : {}), ...(opts.extractionEnv ? { env: opts.extractionEnv } : {}) });
  const conversion = opts.conversion ? await startTestConversion(opts.conversion) : undefined;
  const edge = await startTestEdge({
    env: { FOLIO_EXTRACTION_ADDRESS: extraction.grpc.address, ...(conversion ? { FOLIO_CONVERSION_ADDRESS: conversion.grpc.address } : {}), ...opts.edgeEnv },
  });
  const stack: TestStack = {
    edge,
    extraction,
    ...(conversion ? { conversion } : {}),
    // What the fields hold when closing: a test may have replaced a service it killed.
    close: async () => {
      await stack.edge.close();
      await stack.extraction.close();
      await stack.conversion?.close();
    },
  };
  return stack;
}

/**
 * A jobs worker in this process against `databaseUrl` (quiet, no metrics
 * listener, polling every 100 ms), reading through `extractionAddress`;
 * `env` adds or overrides its variables (a conversion address, range size).
 */
export async function startTestWorker(databaseUrl: string, extractionAddress: string, env: Env = {}): Promise<RunningWorker> {
  const config = parseConfig(workerSchema, {
    DATABASE_URL: databaseUrl,
    FOLIO_EXTRACTION_ADDRESS: extractionAddress,
    FOLIO_METRICS_ENABLED: "false",
    FOLIO_WORKER_POLL_SECONDS: "0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    ...env,
  });
  return startWorker({ config, log: createLogger(config.LOG_LEVEL) });
}

/**
 * A running OCR job of `accountId` written straight into `db` (local/tesseract,
 * `pageCount` pages, no key, no ranges), for tests of what happens to a job
 * (its charges, its events) without the queue; its id.
 */
export async function insertRunningJob(db: DB, accountId: string, o: { pageCount: number; holdId?: string | null }): Promise<string> {
  const id = newId("job");
  await db
    .insertInto("ocr_jobs")
    .values({ id, account_id: accountId, api_key_id: null, status: "running", model: "local/tesseract", request: "{}", metadata: "{}", page_count: o.pageCount, hold_id: o.holdId ?? null, error_code: null, error_message: null, started_at: new Date(), finished_at: null, expires_at: null })
    .execute();
  return id;
}

/** The account's usage log rows, oldest first. */
export async function usageRows(accountId: string) {
  const { db } = await testDb();
  return db.selectFrom("usage_logs").selectAll().where("account_id", "=", accountId).orderBy("created_at").execute();
}

/** What GET /v1/account/balance shows for the key's account: spendable and held cents. */
export async function balanceOf(edge: { url: string }, key: string): Promise<{ balance_cents: number; held_cents: number }> {
  const { balance_cents, held_cents } = (await call(edge, "GET", "/v1/account/balance", key)).body as { balance_cents: number; held_cents: number };
  return { balance_cents, held_cents };
}

/**
 * A fake upstream (a test double of OpenRouter) for the file's tests:
 * started before them, its scripts reset after each, closed after all.
 */
export function fakeUpstreamForFile(): () => FakeUpstream {
  let fake: FakeUpstream | undefined;
  beforeAll(async () => {
    fake = await startFakeUpstream();
  });
  afterAll(async () => {
    await fake?.close();
  });
  afterEach(() => fake?.reset());
  return () => fake!;
}

/**
 * A stack (see {@link startStack}) started before the tests of the file or
 * `describe` it is called in and closed after them; read `stack` inside the
 * tests.
 */
export function stackForTests(opts: Parameters<typeof startStack>[0] = {}): { stack: TestStack } {
  const ctx = {} as { stack: TestStack };
  beforeAll(async () => {
    ctx.stack = await startStack(opts);
  });
  afterAll(async () => {
    await ctx.stack?.close();
  });
  return ctx;
}

/**
 * A stack wired to a fresh fake upstream (a test double of OpenRouter),
 * started before the file's tests and closed after them; read `stack` and
 * `upstream` inside the tests.
 */
export function upstreamStack(opts: { edgeEnv?: Env; extractionEnv?: Env } = {}): { stack: TestStack; upstream: FakeUpstream } {
  const ctx = {} as { stack: TestStack; upstream: FakeUpstream };
  beforeAll(async () => {
    ctx.upstream = await startFakeUpstream();
    ctx.stack = await startStack({ ...opts, upstream: ctx.upstream });
  });
  afterAll(async () => {
    await ctx.stack?.close();
    await ctx.upstream?.close();
  });
  return ctx;
}

/** What {@link jobsStack} starts beyond the database, the extraction service and the edge. */
export interface JobsStackOptions {
  /** The OpenRouter test double, with the extraction service sending upstream models' pages to it. */
  upstream?: boolean;
  /** The conversion service, with this environment (FOLIO_SANDBOX…); the edge and the worker are given its address. */
  conversion?: Env;
  /**
   * The edge's own variables (its database and the services' addresses are
   * set); a function is called once the services run, for a value found
   * only then (a free port).
   */
  edgeEnv?: Env | (() => Promise<Env>);
  /** The jobs worker's own variables (its database and the services' addresses are set). */
  workerEnv?: Env;
  /** Whether the worker starts with the rest (the default) or only when a test calls `startWorker()`: without one a job stays queued. */
  workerAtStart?: boolean;
  /** How long starting may take, in ms (default 60 s). */
  timeoutMs?: number;
}

/** The running services of a {@link jobsStack}: read them inside the tests. */
export interface JobsStack {
  /** The file's own database, migrated; dropped once the tests have run. */
  database: DatabaseHandle & { url: string };
  extraction: RunningExtraction;
  edge: RunningEdge;
  /** Present when `upstream` was asked for. */
  upstream?: FakeUpstream;
  /** Present when `conversion` was asked for. */
  conversion?: RunningConversion;
  /** The jobs worker while one runs. */
  worker?: RunningWorker;
  /** Starts the worker unless one runs. */
  startWorker(): Promise<RunningWorker>;
  /** Closes the worker, if one runs: from then on a job stays queued. */
  stopWorker(): Promise<void>;
}

/**
 * The services a durable-jobs test reads its jobs with: a Postgres database
 * of its own (so that no other file's worker takes its jobs, nor its worker
 * theirs), the extraction service (local engines; the fake upstream, the
 * conversion service where asked), an edge and a jobs worker on them.
 * Registers a `beforeAll` that starts them in that order and an `afterAll`
 * that closes them the last started first, where it is called: a file, or a
 * `describe`.
 */
export function jobsStack(name: string, opts: JobsStackOptions = {}): JobsStack {
  // The edge and the worker alike are given the conversion service, where one runs.
  const conversionAddress = (): Env => (stack.conversion ? { FOLIO_CONVERSION_ADDRESS: stack.conversion.grpc.address } : {});
  const stack = {
    startWorker: async () => (stack.worker ??= await startTestWorker(stack.database.url, stack.extraction.grpc.address, { ...conversionAddress(), ...opts.workerEnv })),
    stopWorker: async () => {
      const running = stack.worker;
      stack.worker = undefined;
      await running?.close();
    },
  } as JobsStack;
  beforeAll(async () => {
    stack.database = await privateDatabase(name);
    await migrateToLatest(stack.database.db);
    if (opts.upstream) stack.upstream = await startFakeUpstream();
    stack.extraction = await startTestExtraction(stack.upstream ? { upstream: { baseUrl: stack.upstream.baseUrl, apiKey: stack.upstream.apiKey } } : {});
    if (opts.conversion) stack.conversion = await startTestConversion(opts.conversion);
    const edgeEnv = typeof opts.edgeEnv === "function" ? await opts.edgeEnv() : opts.edgeEnv;
    stack.edge = await startTestEdge({ env: { DATABASE_URL: stack.database.url, FOLIO_EXTRACTION_ADDRESS: stack.extraction.grpc.address, ...conversionAddress(), ...edgeEnv } });
    if (opts.workerAtStart !== false) await stack.startWorker();
  }, opts.timeoutMs ?? 60_000);
  afterAll(() => closeAll(stack.worker, stack.edge, stack.conversion, stack.extraction, stack.upstream, stack.database));
  return stack;
}
