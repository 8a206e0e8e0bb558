/**
 * edge-auth: what authentication + Redis admission + the account read cost
 * on the edge's cheapest authenticated route.
 *
 * Two servers in this process, measured with autocannon on loopback:
 *   bare - a plain Fastify app with one route answering the same JSON object
 *          GET /v1/account answers (same bytes, same response schema);
 *   edge - a real Folio edge (startEdge) serving GET /v1/account with an API
 *          key of an account whose limits are so high nothing is refused.
 * Runs alternate bare/edge for BENCH_ROUNDS rounds, each a warm-up then a
 * measured run at BENCH_CONNECTIONS connections; the report gives the median
 * requests/s and p99 of each and the ratio edge/bare.
 *
 * autocannon runs in a worker thread (its own event loop, so it does not
 * steal the servers' loop), but on the same machine: it shares the CPUs with
 * the servers, Postgres and Redis.
 *
 * Environment: DATABASE_URL, REDIS_URL (required; the edge uses the database
 * `folio_bench` on that server, created and migrated when needed),
 * BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 5: the edge JIT-warms slower than a bare route), BENCH_ROUNDS
 * (default 3), BENCH_CONNECTIONS (default 64). FOLIO_* variables other than
 * the ones fixed below reach the edge's configuration (e.g. FOLIO_DB_POOL_SIZE).
 */
import { randomUUID } from "node:crypto";
import os from "node:os";
import autocannon from "autocannon";
import Fastify from "fastify";
import pg from "pg";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { startEdge, type RunningEdge } from "../internal/edge/index.ts";
import type { EdgeConfig } from "../internal/platform/config/index.ts";
import { migrateToLatest, openDatabase, redactUrl } from "../internal/platform/db/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { RedisRateLimiter } from "../internal/ratelimit/index.ts";
import type { Benchmark, BenchmarkReport } from "./run.ts";
import { benchEdgeConfig, median } from "./support.ts";

const BENCH_DATABASE = "folio_bench";
const ROUTE = "/v1/account";
/** The target. */
const TARGET = { minRatio: 0.4, maxEdgeP99Ms: 15 };

type Target = "bare" | "edge";

interface RunResult {
  round: number;
  target: Target;
  requestsPerSec: number;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
  totalRequests: number;
  durationSec: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  statusCodes: Record<string, number>;
}

interface Settings {
  durationSec: number;
  warmupSec: number;
  rounds: number;
  connections: number;
}

function intEnv(name: string, def: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min} (got ${JSON.stringify(raw)})`);
  return n;
}

function settings(): Settings {
  return {
    durationSec: intEnv("BENCH_DURATION", 10, 1),
    warmupSec: intEnv("BENCH_WARMUP", 5, 0),
    rounds: Math.floor(intEnv("BENCH_ROUNDS", 3, 1)),
    connections: Math.floor(intEnv("BENCH_CONNECTIONS", 64, 1)),
  };
}


/** The dedicated benchmark database on DATABASE_URL's server, created when absent. */
export async function benchDatabaseUrl(base: string, name = BENCH_DATABASE): Promise<string> {
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [name]);
    if (found.rowCount === 0) {
      try {
        await client.query(`create database ${name}`);
      } catch (err) {
        // Created concurrently by another run: fine.
        if ((err as { code?: string }).code !== "42P04") throw err;
      }
    }
  } finally {
    await client.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Migrates the benchmark database and creates an account no limit will refuse; returns its admin key. */
export async function prepareAccount(databaseUrl: string, redisUrl: string): Promise<{ accountId: string; key: string; email: string }> {
  const handle = await openDatabase({ databaseUrl, poolSize: 2 });
  const limiter = new RedisRateLimiter(redisUrl, { onError: "deny", log: createLogger("silent") });
  try {
    await migrateToLatest(handle.db);
    const email = `bench-edge-auth.${Date.now()}.${process.pid}.${randomUUID().slice(0, 8)}@example.test`;
    const r = await adminCreateAccount(
      { db: handle.db, limiter },
      { email, name: "edge-auth benchmark", requestsPerMinute: 100_000_000, requestsPerDay: 1_000_000_000 },
    );
    return { accountId: r.account.id, key: r.api_key.key, email };
  } finally {
    await limiter.close();
    await handle.close();
  }
}

/** The edge as configured for the run, with FOLIO_* settings from the environment (e.g. FOLIO_KEY_CACHE_TTL_SECONDS). */
function edgeConfig(databaseUrl: string, redisUrl: string): EdgeConfig {
  const { DATABASE_URL: _d, REDIS_URL: _r, FOLIO_HTTP_HOST: _h, FOLIO_HTTP_PORT: _p, FOLIO_METRICS_ENABLED: _m, ...passthrough } = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k.startsWith("FOLIO_")),
  );
  return benchEdgeConfig(databaseUrl, redisUrl, passthrough);
}

/** Response schema of GET /v1/account, so the bare app serializes the same way (fast-json-stringify). */
const ACCOUNT_SCHEMA = {
  type: "object",
  properties: {
    id: { type: "string" },
    email: { type: "string" },
    name: { type: "string" },
    plan: { type: "string" },
    created_at: { type: "integer" },
    rate_limits: {
      type: "object",
      properties: { requests_per_minute: { type: "integer" }, requests_per_day: { type: "integer" } },
      required: ["requests_per_minute", "requests_per_day"],
    },
  },
  required: ["id", "email", "name", "plan", "created_at", "rate_limits"],
} as const;

async function startBare(body: unknown): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get(ROUTE, { schema: { response: { 200: ACCOUNT_SCHEMA } } }, async () => body);
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  return { url: address, close: () => app.close() };
}

async function fetchOnce(url: string, key?: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: res.status, text: await res.text() };
}

function cannon(url: string, key: string | undefined, connections: number, durationSec: number): Promise<autocannon.Result> {
  return autocannon({
    url,
    connections,
    duration: durationSec,
    pipelining: 1,
    // One worker thread: autocannon gets its own event loop instead of sharing the servers'.
    workers: 1,
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
}

function toRun(round: number, target: Target, r: autocannon.Result): RunResult {
  const statusCodes: Record<string, number> = {};
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = s.count ?? 0;
  return {
    round,
    target,
    requestsPerSec: r.requests.average,
    latencyMs: { mean: r.latency.mean, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    totalRequests: r.requests.total,
    durationSec: r.duration,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    statusCodes,
  };
}

function clean(r: RunResult): boolean {
  const onlyOk = Object.keys(r.statusCodes).every((c) => c === "200");
  return r.non2xx === 0 && r.errors === 0 && r.timeouts === 0 && onlyOk && r.totalRequests > 0;
}

const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

async function run(): Promise<BenchmarkReport> {
  const baseDatabaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!baseDatabaseUrl || !redisUrl) throw new Error("DATABASE_URL and REDIS_URL must be set: run `make bench`");
  const s = settings();
  const loadAtStart = os.loadavg()[0] ?? 0;

  const databaseUrl = await benchDatabaseUrl(baseDatabaseUrl);
  const account = await prepareAccount(databaseUrl, redisUrl);
  const config = edgeConfig(databaseUrl, redisUrl);

  let edge: RunningEdge | undefined;
  let bare: { url: string; close(): Promise<void> } | undefined;
  const runs: RunResult[] = [];
  const warmups: RunResult[] = [];
  let bodies: { bare: number; edge: number };
  try {
    edge = await startEdge({ config, log: createLogger("silent") });
    const edgeUrl = edge.url + ROUTE;
    const first = await fetchOnce(edgeUrl, account.key);
    if (first.status !== 200) throw new Error(`GET ${ROUTE} on the edge answered ${first.status}: ${first.text}`);
    // The bare route answers the very object the edge answered: same size, same shape.
    bare = await startBare(JSON.parse(first.text));
    const bareUrl = bare.url + ROUTE;
    const bareFirst = await fetchOnce(bareUrl);
    if (bareFirst.status !== 200) throw new Error(`bare app answered ${bareFirst.status}: ${bareFirst.text}`);
    bodies = { bare: Buffer.byteLength(bareFirst.text), edge: Buffer.byteLength(first.text) };

    const targets: Array<[Target, string, string | undefined]> = [
      ["bare", bareUrl, undefined],
      ["edge", edgeUrl, account.key],
    ];
    for (let round = 1; round <= s.rounds; round++) {
      for (const [target, url, key] of targets) {
        if (s.warmupSec > 0) warmups.push(toRun(round, target, await cannon(url, key, s.connections, s.warmupSec)));
        const r = toRun(round, target, await cannon(url, key, s.connections, s.durationSec));
        runs.push(r);
        console.log(
          `  round ${round} ${target}: ${fmt(r.requestsPerSec)} req/s, p99 ${r.latencyMs.p99} ms, non2xx ${r.non2xx}, errors ${r.errors}`,
        );
      }
    }
  } finally {
    await bare?.close();
    await edge?.close();
  }

  const of = (t: Target) => runs.filter((r) => r.target === t);
  const summary = (t: Target) => ({
    medianRequestsPerSec: median(of(t).map((r) => r.requestsPerSec)),
    medianP99Ms: median(of(t).map((r) => r.latencyMs.p99)),
    medianP50Ms: median(of(t).map((r) => r.latencyMs.p50)),
  });
  const bareSum = summary("bare");
  const edgeSum = summary("edge");
  const ratio = edgeSum.medianRequestsPerSec / bareSum.medianRequestsPerSec;
  const ratioMet = ratio >= TARGET.minRatio;
  const p99Met = edgeSum.medianP99Ms < TARGET.maxEdgeP99Ms;

  const edgeRuns = [...of("edge"), ...warmups.filter((r) => r.target === "edge")];
  const edgeNon2xx = edgeRuns.reduce((n, r) => n + r.non2xx, 0);
  const edgeErrors = edgeRuns.reduce((n, r) => n + r.errors + r.timeouts, 0);
  const edgeTotal = edgeRuns.reduce((n, r) => n + r.totalRequests, 0);
  const allClean = [...runs, ...warmups].every(clean);

  const cpus = os.cpus();
  const machine = {
    cpus: cpus.length,
    availableParallelism: os.availableParallelism(),
    cpuModel: cpus[0]?.model ?? "unknown",
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    loadAverage1m: { start: loadAtStart, end: os.loadavg()[0] ?? 0 },
  };
  // Only the load before the start says something about other processes: the end value includes this benchmark.
  const busy = machine.loadAverage1m.start > machine.cpus / 2;
  const edgeSettings = {
    database: redactUrl(databaseUrl),
    redis: redactUrl(redisUrl),
    dbPoolSize: config.FOLIO_DB_POOL_SIZE,
    keyCacheTtlSeconds: config.FOLIO_KEY_CACHE_TTL_SECONDS,
    rateLimitOnRedisError: config.FOLIO_RATELIMIT_ON_REDIS_ERROR,
    metricsListener: config.FOLIO_METRICS_ENABLED,
    logLevel: config.LOG_LEVEL,
    account: { id: account.accountId, email: account.email, requestsPerMinute: 100_000_000, requestsPerDay: 1_000_000_000 },
  };

  const pad = (v: string, n: number) => v.padStart(n);
  const lines: string[] = [];
  lines.push(
    `machine: ${machine.cpus} CPU(s) (${machine.cpuModel}), node ${machine.node}, ${machine.platform}`,
    `NOTE: autocannon (one worker thread of this process), both servers, Postgres and Redis all share these ${machine.cpus} cores:`,
    `      absolute req/s are a lower bound for a dedicated edge host; the edge/bare ratio is the comparable number.`,
    `load average (1 min): ${fmt(machine.loadAverage1m.start, 2)} before the start` +
      (busy ? ` - other processes were already using the CPUs, expect noisy numbers` : "") +
      `, ${fmt(machine.loadAverage1m.end, 2)} at the end (includes this benchmark)`,
    `load: ${s.connections} connections, pipelining 1, ${s.warmupSec} s warm-up + ${s.durationSec} s measured per run, ${s.rounds} rounds alternating bare/edge`,
    `bare: Fastify ${"GET " + ROUTE} returning a fixed object (${bodies.bare} B body, same response schema), logger off`,
    `edge: startEdge, GET ${ROUTE} (${bodies.edge} B body): API key (cached) + Redis GCRA admission (1 EVALSHA) + account read (1 Postgres query)`,
    `      db ${edgeSettings.database} (pool ${edgeSettings.dbPoolSize}), redis ${edgeSettings.redis}, metrics listener off, log silent`,
    "",
    `round  target   req/s      p50 ms  p90 ms  p99 ms  max ms  requests   non2xx  errors  timeouts`,
  );
  for (const r of runs) {
    lines.push(
      [
        pad(String(r.round), 5),
        "  " + r.target.padEnd(6),
        pad(fmt(r.requestsPerSec), 9),
        pad(String(r.latencyMs.p50), 8),
        pad(String(r.latencyMs.p90), 7),
        pad(String(r.latencyMs.p99), 7),
        pad(String(r.latencyMs.max), 7),
        pad(fmt(r.totalRequests), 10),
        pad(String(r.non2xx), 8),
        pad(String(r.errors), 7),
        pad(String(r.timeouts), 9),
      ].join(" "),
    );
  }
  lines.push(
    "",
    `median bare: ${fmt(bareSum.medianRequestsPerSec)} req/s, p50 ${bareSum.medianP50Ms} ms, p99 ${bareSum.medianP99Ms} ms`,
    `median edge: ${fmt(edgeSum.medianRequestsPerSec)} req/s, p50 ${edgeSum.medianP50Ms} ms, p99 ${edgeSum.medianP99Ms} ms`,
    `ratio edge/bare (req/s): ${fmt(ratio, 3)} (${fmt(ratio * 100, 1)} %)`,
    "",
    `target: edge >= ${TARGET.minRatio * 100} % of bare req/s: ${ratioMet ? "MET" : "MISSED"} (${fmt(ratio * 100, 1)} %)`,
    `target: edge p99 < ${TARGET.maxEdgeP99Ms} ms at ${s.connections} connections: ${p99Met ? "MET" : "MISSED"} (${edgeSum.medianP99Ms} ms)`,
    `check: every edge response 200: ${edgeNon2xx === 0 && edgeErrors === 0 ? "yes" : "NO"} (non2xx ${edgeNon2xx}, errors+timeouts ${edgeErrors}, over ${fmt(edgeTotal)} requests incl. warm-ups)`,
    `       (latencies are whole milliseconds as autocannon records them)`,
  );
  if (!allClean) lines.push(`check FAILED: a run saw a non-200 answer or a connection error; see the table and the JSON`);

  return {
    ok: allClean,
    text: lines.join("\n"),
    json: {
      benchmark: "edge-auth",
      finishedAt: new Date().toISOString(),
      machine,
      note: `autocannon (worker thread), servers, Postgres and Redis share ${machine.cpus} cores`,
      settings: { ...s, pipelining: 1, route: ROUTE, bodyBytes: bodies },
      edge: edgeSettings,
      runs,
      warmups,
      summary: {
        bare: bareSum,
        edge: edgeSum,
        ratio,
        target: { ...TARGET, ratioMet, p99Met, met: ratioMet && p99Met },
      },
      checks: { edgeNon2xx, edgeErrorsAndTimeouts: edgeErrors, edgeRequests: edgeTotal, allRunsClean: allClean },
    },
  };
}

const benchmark: Benchmark = {
  name: "edge-auth",
  description: "bare Fastify vs authenticated, Redis-rate-limited GET /v1/account (autocannon)",
  run,
};
export default benchmark;
