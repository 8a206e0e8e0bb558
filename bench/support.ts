import { Writable } from "node:stream";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { edgeSchema, parseConfig, type EdgeConfig, type Env } from "../internal/platform/config/index.ts";
import { openDatabase } from "../internal/platform/db/index.ts";
import { adminAddCredits } from "../internal/cli/admin/index.ts";
import type { RunscBackend } from "../internal/sandbox/runsc.ts";
import type { Benchmark, BenchmarkReport } from "./run.ts";

/** Adds credits to a benchmark account. */
export async function addCredits(databaseUrl: string, accountId: string, cents: number): Promise<void> {
  const handle = await openDatabase({ databaseUrl, poolSize: 1 });
  try {
    await adminAddCredits({ db: handle.db }, { accountId, cents });
  } finally {
    await handle.close();
  }
}

/** The median of some figures (NaN for none). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The q-quantile (0..1) of some figures, the nearest rank at or above it (NaN for none). */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/** A positive whole number from the environment, or `fallback` when unset. */
export function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

/**
 * An edge for a benchmark: loopback, any free port, the run's Postgres and
 * Redis, no metrics listener, silent; `extra` on top.
 */
export function benchEdgeConfig(databaseUrl: string, redisUrl: string, extra: Env = {}): EdgeConfig {
  return parseConfig(edgeSchema, {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    FOLIO_HTTP_HOST: "127.0.0.1",
    FOLIO_HTTP_PORT: "0",
    FOLIO_METRICS_ENABLED: "false",
    LOG_LEVEL: "silent",
    ...extra,
  });
}

/** Collects the `timings` the sandbox program reports (the backends log them at debug level). */
export class TimingsSink extends Writable {
  last: Record<string, number> | undefined;
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line) continue;
      const entry = JSON.parse(line) as { timings?: Record<string, number> };
      if (entry.timings) this.last = entry.timings;
    }
    done();
  }
}

/** Waits until a pre-started runsc backend has `size` ready sandboxes idle; gives up after `limitMs`. */
export async function waitForPool(backend: RunscBackend, size: number, limitMs: number): Promise<void> {
  const until = Date.now() + limitMs;
  for (;;) {
    const idle = backend.idleSandboxes();
    if (idle.length >= size && idle.every((s) => s.ready)) return;
    if (Date.now() > until) throw new Error(`the pre-started pool did not get ready: ${JSON.stringify(idle)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether `moduleUrl` is the script node was started with (`npx tsx bench/<name>.ts`, by any path). */
function isMain(moduleUrl: string): boolean {
  return !!process.argv[1] && resolve(process.argv[1]) === fileURLToPath(moduleUrl);
}

/**
 * For a benchmark file run directly (`npx tsx bench/<name>.ts`): when
 * `moduleUrl` is the script node started with, runs it, prints the report
 * (text, then JSON) and exits 1 when a correctness check failed.
 */
export async function runIfMain(moduleUrl: string, run: () => Promise<BenchmarkReport>): Promise<void> {
  if (!isMain(moduleUrl)) return;
  const report = await run();
  console.log(report.text);
  console.log(JSON.stringify(report.json));
  process.exit(report.ok ? 0 : 1);
}

/**
 * A benchmark file's entry: the {@link Benchmark} bench/run.ts lists, run at
 * once ({@link runIfMain}) when the file is the script node started with,
 * by `direct` when given (a run that reads the command line), else by its
 * own `run`.
 */
export async function benchmarkEntry(moduleUrl: string, benchmark: Benchmark, direct: () => Promise<BenchmarkReport> = benchmark.run): Promise<Benchmark> {
  await runIfMain(moduleUrl, direct);
  return benchmark;
}

/**
 * For an evaluation run directly (`npx tsx bench/eval-<name>.ts`, `make
 * eval`): when `moduleUrl` is the script node started with, runs `main` and
 * exits with the code it answers; a failure is printed and exits 1. Exiting
 * also ends what the run left open (engines' workers, resident programs).
 */
export function exitWithMain(moduleUrl: string, main: () => Promise<number>): void {
  if (!isMain(moduleUrl)) return;
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/** A free TCP port on 127.0.0.1 (the tests' helper): for a child process that cannot be told to pick one and report it. */
export { freePort } from "../test/support.ts";

/**
 * A benchmark database `name` on DATABASE_URL's server, dropped (with
 * whatever an earlier, interrupted run left in it) and created empty; not
 * migrated. Drop it with {@link dropBenchDatabase}.
 */
export async function emptyBenchDatabaseUrl(base: string, name: string): Promise<string> {
  await onServer(base, name, [`drop database if exists ${name} with (force)`, `create database ${name}`]);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database made by {@link emptyBenchDatabaseUrl}, closing its connections. */
export async function dropBenchDatabase(base: string, name: string): Promise<void> {
  await onServer(base, name, [`drop database if exists ${name} with (force)`]);
}

/** Runs `statements` about database `name` on `base`'s server, in turn, over one connection; `name` must be a plain name (it is spliced into them). */
async function onServer(base: string, name: string, statements: readonly string[]): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: '${name}'`);
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}
