/**
 * usage_logs partitioned by month (migration 0003): existing rows survive
 * the migration with their rollups built; the upkeep creates months ahead,
 * moves rows waiting in the default partition into a month created later
 * without changing any sum, and drops months past the retention with their
 * rollups. A private database on the test server (partitions are dropped
 * here, which the shared database's other tests must not see).
 */
import { Migrator, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { privateDatabase } from "../../test/harness.ts";
import { migrateToLatest, type DatabaseHandle, type DB } from "../platform/db/index.ts";
import { migrations } from "../platform/db/migrations/index.ts";
import { newId } from "../platform/ids/index.ts";
import { MONTHS_AHEAD, UsagePartitions } from "./partitions.ts";
import { listUsage, summarize } from "./index.ts";

let handle: DatabaseHandle;
let db: DB;
const ACCOUNT = "acc_partitions";
/** Rows of the old (unpartitioned) table: long ago, last month, now. */
const now = new Date();
const monthsAgo = (n: number, day = 15) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - n, day, 12));
const OLD_ROWS = [monthsAgo(30), monthsAgo(30, 28), monthsAgo(1), now];

function row(at: Date, cost = "3") {
  return {
    id: newId("req"),
    account_id: ACCOUNT,
    api_key_id: null,
    created_at: at.toISOString(),
    endpoint: "/v1/ocr",
    model: "test/a",
    status: "success" as const,
    prompt_tokens: 5,
    completion_tokens: 2,
    tokens_used: 7,
    processing_time_ms: 10,
    pages_processed: 1,
    provider_cost_cents: "2.5",
    platform_fee_cents: "0.125",
    cost_cents: cost,
  };
}

const partitions = async () =>
  (
    await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'usage_logs'::regclass order by 1`.execute(db)
  ).rows.map((r) => r.name);
const partitionOf = async (id: string) => (await sql<{ p: string }>`select tableoid::regclass::text as p from usage_logs where id = ${id}`.execute(db)).rows[0]?.p;
const monthName = (d: Date) => `usage_logs_${d.toISOString().slice(0, 7).replace("-", "_")}`;

beforeAll(async () => {
  handle = await privateDatabase("partitions");
  db = handle.db;
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const to2 = await migrator.migrateTo("0002_idempotency");
  if (to2.error) throw to2.error;
  await db.insertInto("accounts").values({ id: ACCOUNT, email: "p@example.test", name: "p", plan: "developer", requests_per_minute: 60, requests_per_day: 1000 }).execute();
  await db.insertInto("usage_logs").values(OLD_ROWS.map((at) => row(at))).execute();
  await migrateToLatest(db);
}, 60_000);

afterAll(async () => {
  await handle?.close();
});

describe("migration 0003 on a database with usage rows", () => {
  it("keeps every row, in a partition of its month, and builds the rollups from them", async () => {
    const rows = await db.selectFrom("usage_logs").select(["id", "created_at"]).orderBy("created_at").execute();
    expect(rows.map((r) => r.created_at.toISOString())).toEqual(OLD_ROWS.map((d) => d.toISOString()));
    for (const r of rows) expect(await partitionOf(r.id)).toBe(monthName(r.created_at));
    const names = await partitions();
    for (let m = 0; m <= MONTHS_AHEAD; m++) expect(names).toContain(monthName(monthsAgo(-m, 1)));
    expect(names).toContain("usage_logs_default");
    const s = await summarize(db, ACCOUNT, Math.floor(monthsAgo(31).getTime() / 1000), Math.floor(Date.now() / 1000) + 1, "month");
    expect({ requests: s.total_requests, cost: s.cost.total_cents, provider: s.cost.provider_cost_cents, months: s.groups!.map((g) => g.requests) }).toEqual({
      requests: 4,
      cost: 12,
      provider: 10,
      months: [2, 1, 1],
    });
  });
});

describe("partition upkeep", () => {
  it("creates the months ahead, and a month created later takes its rows from the default partition with the sums unchanged", async () => {
    const future = monthsAgo(-6);
    const early = row(future, "11");
    await db.insertInto("usage_logs").values(early).execute();
    expect(await partitionOf(early.id)).toBe("usage_logs_default");
    const window = [Math.floor(future.getTime() / 1000) - 86_400, Math.floor(future.getTime() / 1000) + 86_400] as const;
    const before = await summarize(db, ACCOUNT, ...window);
    expect(before.total_requests).toBe(1);

    const report = await new UsagePartitions(db, 0).upkeep(monthsAgo(-5));
    expect(report.created).toEqual([monthName(monthsAgo(-5)), monthName(monthsAgo(-6)), monthName(monthsAgo(-7))]);
    expect(await partitionOf(early.id)).toBe(monthName(future));
    expect(await summarize(db, ACCOUNT, ...window)).toEqual(before);
    expect((await new UsagePartitions(db, 0).upkeep(monthsAgo(-5))).created, "a second run finds it done").toEqual([]);
  });

  it("drops whole months past the retention with their rollups, and keeps the rest", async () => {
    const report = await new UsagePartitions(db, 2).upkeep(now);
    expect(report.dropped).toContain(monthName(monthsAgo(30)));
    expect(report.dropped).not.toContain(monthName(monthsAgo(2)));
    expect(await partitions()).not.toContain(monthName(monthsAgo(30)));
    const all = await listUsage(db, ACCOUNT, { start: 0, end: Math.floor(monthsAgo(-8).getTime() / 1000), limit: 100, offset: 0 });
    expect(all.data).toHaveLength(3);
    expect(all.total_count).toBe(3);
    const old = await db.selectFrom("usage_rollups").select("period").where("account_id", "=", ACCOUNT).where("period", "<", monthsAgo(2, 1)).execute();
    expect(old).toEqual([]);
    const s = await summarize(db, ACCOUNT, 0, Math.floor(monthsAgo(-8).getTime() / 1000));
    expect(s.total_requests).toBe(3);
  });
});
