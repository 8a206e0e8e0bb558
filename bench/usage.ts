/**
 * Usage at ten million rows (issue 13): one account with BENCH_USAGE_ROWS
 * usage rows (default 10,000,000) spread over the last 90 days, 8 models, 3
 * API keys, 5 % errors, in a database of its own (`folio_bench_usage`, kept
 * between runs: it is filled once, ~10 minutes here); then every usage
 * endpoint through a real `folio edge` (startEdge, real Postgres and
 * Redis), each asked once to warm up and BENCH_USAGE_RUNS times (default 5)
 * round-robin, medians reported. Also the raw-row summary of 90 days (what
 * every summary did before rollups), timed directly on the database, for
 * the ratio; and the export's rate.
 *
 * Rows are written in time order (as the service writes them, so an hour's
 * rows sit together on disk) with triggers off (session_replication_role = replica)
 * and the rollups built afterwards with one GROUP BY, as migration 0003 does
 * for existing rows: the trigger's cost per row is not what this measures.
 *
 * Environment: DATABASE_URL, REDIS_URL (make bench provides them),
 * BENCH_USAGE_ROWS, BENCH_USAGE_RUNS.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { sql } from "kysely";
import { adminCreateAccount, adminCreateKey } from "../internal/cli/admin/index.ts";
import { startEdge } from "../internal/edge/index.ts";
import { migrateToLatest, openDatabase, type DB } from "../internal/platform/db/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { UsagePartitions, buildRollups } from "../internal/usage/index.ts";
import type { Benchmark, BenchmarkReport } from "./run.ts";
import { benchDatabaseUrl } from "./edge-auth.ts";
import { benchEdgeConfig, median, positiveInt } from "./support.ts";

const DATABASE = "folio_bench_usage";
/** v2: rows written in time order, as a service writes them (v1's random order put every hour's rows all over the heap). */
const EMAIL = "bench-usage-v2@example.test";
const DAYS = 90;
/** The goal: every summary form and the first list page. */
const GOAL_MS = 50;


async function fill(db: DB, accountId: string, rows: number, log: (s: string) => void): Promise<void> {
  const now = Date.now();
  const from = new Date(now - DAYS * 86_400_000);
  await new UsagePartitions(db, 0).ensureMonths(from, 5);
  const keys = (await db.selectFrom("api_keys").select("id").where("account_id", "=", accountId).execute()).map((k) => k.id);
  const models = ["openai/gpt-4.1-mini", "openai/gpt-4.1", "google/gemini-2.0-flash-001", "anthropic/claude-3.5-sonnet", "local/tesseract", "local/auto", "local/ppocr", "mistral/pixtral-12b"];
  const batch = 1_000_000;
  // One connection: session_replication_role is per session.
  await db.connection().execute(async (c) => {
    await sql`set session_replication_role = replica`.execute(c);
    await sql`set statement_timeout = 0`.execute(c);
    for (let done = 0; done < rows; done += batch) {
      const n = Math.min(batch, rows - done);
      const started = Date.now();
      await sql`
        insert into usage_logs (id, account_id, api_key_id, created_at, endpoint, model, status, error_code, prompt_tokens, completion_tokens,
                                tokens_used, pages_processed, provider_cost_cents, platform_fee_cents, cost_cents, processing_time_ms)
        select 'req_bench' || lpad((${done} + i)::text, 11, '0'), ${accountId}, (${keys}::text[])[1 + (i % ${keys.length})],
          ${from.toISOString()}::timestamptz + ((${done} + i + random()) * ${(DAYS * 86_400) / rows}) * interval '1 second',
          '/v1/ocr', (${models}::text[])[1 + (i % ${models.length})],
          case when i % 20 = 0 then 'error' else 'success' end, case when i % 20 = 0 then 'upstream_error' end,
          900, 100, 1000, 1 + i % 3, round((random() * 3)::numeric, 9), round((random() * 0.15)::numeric, 10), 1 + i % 4, 100 + i % 900
        from generate_series(1, ${n}) i`.execute(c);
      log(`  ${done + n} rows (${Math.round((Date.now() - started) / 1000)} s for this batch)`);
    }
    await sql`set session_replication_role = origin`.execute(c);
    await buildRollups(c, accountId);
    await sql`vacuum analyze usage_logs`.execute(c);
    await sql`vacuum analyze usage_rollups`.execute(c);
  });
}

/** The benchmark account, filled to `rows` rows (once: later runs reuse it). */
async function prepare(databaseUrl: string, rows: number, log: (s: string) => void): Promise<{ accountId: string; key: string }> {
  const handle = await openDatabase({ databaseUrl, poolSize: 2 });
  try {
    await migrateToLatest(handle.db);
    const old = await handle.db.selectFrom("accounts").select("id").where("email", "=", EMAIL).executeTakeFirst();
    if (old) {
      const { n } = await handle.db
        .selectFrom("usage_rollups")
        .select(sql<string>`coalesce(sum(requests), 0)`.as("n"))
        .where("account_id", "=", old.id)
        .where("grain", "=", "day")
        .executeTakeFirstOrThrow();
      if (Number(n) === rows) {
        log(`reusing the ${rows} rows of ${EMAIL}`);
        // A new key each run: the stored ones are only hashes.
        const k = await adminCreateKey({ db: handle.db }, { accountId: old.id, name: "bench run" });
        return { accountId: old.id, key: k.key };
      }
      // Another size: this database is the benchmark's own, start it over.
      await sql`truncate usage_logs, usage_rollups`.execute(handle.db);
      await handle.db.deleteFrom("accounts").where("id", "=", old.id).execute();
    }
    return await create(handle.db, rows, log);
  } finally {
    await handle.close();
  }
}

async function create(db: DB, rows: number, log: (s: string) => void): Promise<{ accountId: string; key: string }> {
  const r = await adminCreateAccount({ db }, { email: EMAIL, name: "usage benchmark", requestsPerMinute: 100_000_000, requestsPerDay: 1_000_000_000 });
  for (const name of ["bench key 2", "bench key 3"]) await adminCreateKey({ db }, { accountId: r.account.id, name, permissions: ["ocr:write"] });
  log(`filling ${rows} usage rows for ${EMAIL}`);
  await fill(db, r.account.id, rows, log);
  return { accountId: r.account.id, key: r.api_key.key };
}

interface Timing {
  name: string;
  path: string;
  medianMs: number;
  runsMs: number[];
  goal: boolean;
}

interface ExportMemory {
  days: number;
  bytes: number;
  heap_limit_mib: number;
  rss_base_mib: number;
  rss_peak_mib: number;
  heap_base_mib: number;
  heap_peak_mib: number;
  heap_after_gc_mib: number;
}

/** Runs bench/usage-export-memory.ts in a child process with a small heap; its JSON line. */
function exportMemory(databaseUrl: string, redisUrl: string, key: string): Promise<ExportMemory> {
  const heapMb = process.env.BENCH_EXPORT_HEAP_MB ?? "96";
  const script = fileURLToPath(new URL("./usage-export-memory.ts", import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--expose-gc", `--max-old-space-size=${heapMb}`, "--import", "tsx", script],
      { env: { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, BENCH_EXPORT_KEY: key, BENCH_EXPORT_HEAP_MB: heapMb }, maxBuffer: 1 << 20 },
      (err, stdout, stderr) => (err ? reject(new Error(`usage-export-memory: ${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout.trim().split("\n").at(-1)!) as ExportMemory)),
    );
  });
}

async function run(): Promise<BenchmarkReport> {
  const base = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!base || !redisUrl) throw new Error("DATABASE_URL and REDIS_URL must be set (make bench provides them)");
  const rows = positiveInt("BENCH_USAGE_ROWS", 10_000_000);
  const runs = positiveInt("BENCH_USAGE_RUNS", 5);
  const databaseUrl = await benchDatabaseUrl(base, DATABASE);
  const lines: string[] = [];
  const log = (s: string) => console.log(s);
  const { accountId, key } = await prepare(databaseUrl, rows, log);
  const edge = await startEdge({ config: benchEdgeConfig(databaseUrl, redisUrl), log: createLogger("silent") });
  const direct = new pg.Client({ connectionString: databaseUrl });
  await direct.connect();
  try {
    const now = Math.floor(Date.now() / 1000);
    const d90 = `start_date=${now - DAYS * 86_400}&end_date=${now}`;
    // The list's depth of the measurement (offset 999,900), or 90 % of a smaller fill.
    const depth = Math.min(999_900, Math.floor((rows * 0.9) / 100) * 100);
    const deep = await direct.query<{ id: string }>(
      "select id from usage_logs where account_id = $1 and created_at >= to_timestamp($2) order by created_at desc, id desc offset $3 limit 1",
      [accountId, now - DAYS * 86_400, depth - 1],
    );
    const deepId = deep.rows[0]?.id ?? "";
    const cases: Omit<Timing, "medianMs" | "runsMs">[] = [
      { name: "summary, default 30 days", path: "/v1/usage/summary", goal: true },
      { name: "summary, 90 days", path: `/v1/usage/summary?${d90}`, goal: true },
      { name: "group_by=day, 90 days", path: `/v1/usage/summary?${d90}&group_by=day`, goal: true },
      { name: "group_by=week, 90 days", path: `/v1/usage/summary?${d90}&group_by=week`, goal: true },
      { name: "group_by=month, 90 days", path: `/v1/usage/summary?${d90}&group_by=month`, goal: true },
      { name: "group_by=model, 90 days", path: `/v1/usage/summary?${d90}&group_by=model`, goal: true },
      { name: "list, first page of 100, 90 days", path: `/v1/usage?${d90}&limit=100`, goal: true },
      { name: "list, filtered by model and status", path: `/v1/usage?${d90}&limit=100&model=local/auto&status=success`, goal: false },
      { name: `list, starting_after the ${depth.toLocaleString("en")}th entry`, path: `/v1/usage?${d90}&limit=100&starting_after=${deepId}`, goal: false },
      { name: `list, offset ${depth.toLocaleString("en")}`, path: `/v1/usage?${d90}&limit=100&offset=${depth}`, goal: false },
    ];
    const timings: Timing[] = cases.map((c) => ({ ...c, medianMs: 0, runsMs: [] }));
    const ask = async (path: string): Promise<number> => {
      const t = performance.now();
      const res = await fetch(edge.url + path, { headers: { authorization: `Bearer ${key}` } });
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 300)}`);
      return performance.now() - t;
    };
    for (const t of timings) await ask(t.path);
    for (let r = 0; r < runs; r++) for (const t of timings) t.runsMs.push(await ask(t.path));
    for (const t of timings) t.medianMs = median(t.runsMs);

    // What every summary did before rollups: the raw rows of 90 days.
    const rawMs: number[] = [];
    for (let r = 0; r < runs; r++) {
      const t = performance.now();
      await direct.query(
        `select count(*), sum(tokens_used), sum(pages_processed), sum(provider_cost_cents), sum(platform_fee_cents), sum(cost_cents)
         from usage_logs where account_id = $1 and created_at >= to_timestamp($2) and created_at < to_timestamp($3)`,
        [accountId, now - DAYS * 86_400, now + 1],
      );
      rawMs.push(performance.now() - t);
    }

    // The export's rate, one day and a week, read as they stream.
    const exports: { days: number; entries: number; bytes: number; ms: number }[] = [];
    for (const days of [1, 7]) {
      const t = performance.now();
      const res = await fetch(edge.url + `/v1/usage/export?start_date=${now - days * 86_400}&end_date=${now}&format=csv`, { headers: { authorization: `Bearer ${key}` } });
      let bytes = 0;
      let newlines = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.length;
        for (const b of chunk) if (b === 10) newlines++;
      }
      if (res.status !== 200) throw new Error(`export: ${res.status}`);
      exports.push({ days, entries: newlines - 1, bytes, ms: performance.now() - t });
    }
    // Its memory: the week again, by an edge in a process whose heap is limited (bench/usage-export-memory.ts).
    const memory = await exportMemory(databaseUrl, redisUrl, key);

    lines.push(`${rows.toLocaleString("en")} rows, one account, ${DAYS} days; medians of ${runs} through the edge (goal < ${GOAL_MS} ms):`);
    for (const x of timings) lines.push(`  ${x.name.padEnd(44)} ${x.medianMs.toFixed(1).padStart(8)} ms${x.goal ? (x.medianMs < GOAL_MS ? "  ok" : "  MISSED") : ""}`);
    lines.push(`  raw-row totals of 90 days (before rollups), on the database: ${median(rawMs).toFixed(0)} ms`);
    for (const e of exports) {
      lines.push(`  export, ${e.days} day(s): ${e.entries} entries, ${(e.bytes / 1e6).toFixed(1)} MB in ${e.ms.toFixed(0)} ms (${Math.round(e.entries / (e.ms / 1000))} entries/s)`);
    }
    lines.push(
      `  export of ${memory.days} days by an edge limited to ${memory.heap_limit_mib} MiB of heap: ${(memory.bytes / 1e6).toFixed(1)} MB; heap ${memory.heap_base_mib} → peak ${memory.heap_peak_mib} → ${memory.heap_after_gc_mib} MiB after a collection; resident ${memory.rss_base_mib} → peak ${memory.rss_peak_mib} MiB`,
    );
    const ok = exports.every((e) => e.entries > 0);
    return {
      text: lines.join("\n"),
      ok,
      json: {
        rows,
        days: DAYS,
        runs,
        goal_ms: GOAL_MS,
        timings: timings.map((x) => ({ name: x.name, path: x.path, median_ms: x.medianMs, runs_ms: x.runsMs, goal: x.goal })),
        raw_summary_90_days_median_ms: median(rawMs),
        exports,
        export_memory: memory,
      },
    };
  } finally {
    await direct.end();
    await edge.close();
  }
}

export default { name: "usage", description: "usage endpoints at 10M rows: summaries, list pages, export (issue 13)", run } satisfies Benchmark;
