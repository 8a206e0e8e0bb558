/**
 * Summaries and counts read from the rollups (and the raw rows at the
 * edges) are exact: they equal the same figures computed from the raw rows
 * alone (the implementation before rollups, kept here as the oracle), for
 * every summary form and for ranges that start and end on and around hour,
 * day, week and month boundaries. Also: keyset pages, the rollups' trigger
 * under moves and deletes, and a row written while a summary runs. Real
 * Postgres.
 */
import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestAccount, createTestKey, testDb } from "../../test/harness.ts";
import type { DB } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import { cover } from "./sources.ts";
import { listUsage, summarize, type GroupBy } from "./index.ts";

const utc = (iso: string) => Date.parse(iso);
const MODELS = ["test/a", "test/b", "local/tesseract"];

interface Row {
  at: number;
  model: string;
  status: "success" | "error";
  apiKeyId: string | null;
  tokens: number;
  pages: number;
  provider: string;
  fee: string;
  cost: string;
}

async function insert(db: DB, accountId: string, rows: Row[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto("usage_logs")
      .values(
        rows.slice(i, i + 500).map((r) => ({
          id: newId("req"),
          account_id: accountId,
          api_key_id: r.apiKeyId,
          created_at: new Date(r.at).toISOString(),
          endpoint: "/v1/ocr",
          model: r.model,
          status: r.status,
          prompt_tokens: r.tokens,
          completion_tokens: 0,
          tokens_used: r.tokens,
          processing_time_ms: 10,
          pages_processed: r.pages,
          provider_cost_cents: r.provider,
          platform_fee_cents: r.fee,
          cost_cents: r.cost,
        })),
      )
      .execute();
  }
}

/** A deterministic pseudo-random sequence (the test must fail the same way twice). */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

/** The instants every boundary test needs: the last millisecond before and the first of an hour, a day, a week, a month. */
const EDGES = [
  "2026-03-31T23:59:59.999Z", // a Tuesday, month's end
  "2026-04-01T00:00:00.000Z",
  "2026-04-05T23:59:59.999Z", // a Sunday: the week's last instant
  "2026-04-06T00:00:00.000Z", // Monday
  "2026-04-06T00:59:59.999Z",
  "2026-04-06T01:00:00.000Z",
  "2026-04-30T23:59:59.999Z",
  "2026-05-01T00:00:00.000Z",
  "2026-05-01T00:00:00.001Z",
].map(utc);

/** The summary computed from the raw rows only: the oracle. */
async function oracle(db: DB, accountId: string, start: number, end: number, groupBy?: GroupBy) {
  const cols = sql`count(*)::int as requests, (count(*) filter (where status = 'success'))::int as ok, (count(*) filter (where status = 'error'))::int as failed,
    coalesce(sum(tokens_used), 0)::int as tokens, coalesce(sum(pages_processed), 0)::int as pages,
    coalesce(sum(provider_cost_cents), 0)::text as provider, coalesce(sum(platform_fee_cents), 0)::text as fee, coalesce(sum(cost_cents), 0)::text as cost`;
  const where = sql`account_id = ${accountId} and created_at >= ${new Date(start * 1000).toISOString()} and created_at < ${new Date((end + 1) * 1000).toISOString()}`;
  const totals = (await sql<Record<string, unknown>>`select ${cols} from usage_logs where ${where}`.execute(db)).rows[0];
  const models = (await sql<Record<string, unknown>>`select model, ${cols} from usage_logs where ${where} group by model order by model`.execute(db)).rows;
  const unit = groupBy && groupBy !== "model" ? groupBy : undefined;
  const buckets = unit
    ? (await sql<Record<string, unknown>>`select extract(epoch from date_trunc(${sql.lit(unit)}, created_at at time zone 'UTC'))::bigint::int as bucket, ${cols}
        from usage_logs where ${where} group by 1 order by 1`.execute(db)).rows
    : [];
  return { totals, models, buckets };
}

/** The same figures from summarize(), in the oracle's shape (money as exact decimal text). */
async function viaRollups(db: DB, accountId: string, start: number, end: number, groupBy?: GroupBy) {
  const s = await summarize(db, accountId, start, end, groupBy);
  const totals = {
    requests: s.total_requests,
    ok: s.successful_requests,
    failed: s.failed_requests,
    tokens: s.total_tokens_used,
    pages: s.total_pages_processed,
    provider: String(s.cost.provider_cost_cents),
    fee: String(s.cost.platform_fee_cents),
    cost: String(s.cost.total_cents),
  };
  return { s, totals };
}

describe("cover: how a range is split", () => {
  it("reads whole days and hours from rollups and under an hour at each edge from raw rows", () => {
    const c = cover(utc("2026-04-05T22:30:00Z"), utc("2026-04-08T01:15:00Z"));
    const iso = (r: [number, number][]) => r.map(([a, b]) => `${new Date(a).toISOString()}..${new Date(b).toISOString()}`);
    expect({ raw: iso(c.raw), hours: iso(c.hours), days: iso(c.days) }).toEqual({
      raw: ["2026-04-05T22:30:00.000Z..2026-04-05T23:00:00.000Z", "2026-04-08T01:00:00.000Z..2026-04-08T01:15:00.000Z"],
      hours: ["2026-04-05T23:00:00.000Z..2026-04-06T00:00:00.000Z", "2026-04-08T00:00:00.000Z..2026-04-08T01:00:00.000Z"],
      days: ["2026-04-06T00:00:00.000Z..2026-04-08T00:00:00.000Z"],
    });
  });

  it("covers every millisecond once, whatever the range", () => {
    const next = random(7);
    for (let i = 0; i < 500; i++) {
      const from = utc("2026-01-01T00:00:00Z") + Math.floor(next() * 90 * 86_400_000);
      const to = from + 1 + Math.floor(next() ** 3 * 40 * 86_400_000);
      const c = cover(from, to);
      const all = [...c.raw, ...c.hours, ...c.days].sort((a, b) => a[0] - b[0]);
      expect(all[0]![0]).toBe(from);
      expect(all.at(-1)![1]).toBe(to);
      for (let k = 1; k < all.length; k++) expect(all[k]![0], `no gap or overlap in ${JSON.stringify(all)}`).toBe(all[k - 1]![1]);
      expect(c.raw.reduce((n, [a, b]) => n + b - a, 0), "under two hours of raw rows").toBeLessThan(2 * 3_600_000);
      for (const [a, b] of c.hours) expect(a % 3_600_000 === 0 && b % 3_600_000 === 0 && b - a < 2 * 86_400_000, `${a}..${b}`).toBe(true);
      for (const [a, b] of c.days) expect(a % 86_400_000 === 0 && b % 86_400_000 === 0).toBe(true);
    }
  });
});

describe("summaries from rollups equal summaries from raw rows", () => {
  let db: DB;
  let accountId: string;
  beforeAll(async () => {
    db = (await testDb()).db;
    const acc = await createTestAccount();
    accountId = acc.accountId;
    const key = await createTestKey(accountId);
    const next = random(42);
    const rows: Row[] = [];
    const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]!;
    const row = (at: number): Row => {
      const provider = (next() * 3).toFixed(9);
      return {
        at,
        model: pick(MODELS),
        status: next() < 0.85 ? "success" : "error",
        apiKeyId: pick([acc.adminKeyId, key.id, null]),
        tokens: Math.floor(next() * 3000),
        pages: 1 + Math.floor(next() * 4),
        provider,
        fee: (Number(provider) * 0.05).toFixed(10),
        cost: String(Math.ceil(Number(provider) * 1.05)),
      };
    };
    for (let i = 0; i < 3000; i++) rows.push(row(utc("2026-03-01T00:00:00Z") + Math.floor(next() * 92 * 86_400_000)));
    for (const at of EDGES) for (let k = 0; k < 3; k++) rows.push(row(at));
    await insert(db, accountId, rows);
  }, 60_000);

  const ranges: [string, string][] = [
    ["2026-03-31T23:59:59Z", "2026-04-01T00:00:00Z"], // two seconds across a month boundary
    ["2026-04-01T00:00:00Z", "2026-04-30T23:59:59Z"], // exactly April
    ["2026-04-05T23:59:59Z", "2026-04-06T00:59:59Z"], // across a week's start, ending at an hour's last second
    ["2026-04-06T00:00:00Z", "2026-04-06T00:00:00Z"], // one second
    ["2026-03-01T00:00:00Z", "2026-06-01T00:00:00Z"], // everything
    ["2026-03-15T13:27:41Z", "2026-05-20T08:03:09Z"], // ragged edges, many days
    ["2026-04-10T05:10:00Z", "2026-04-10T17:50:00Z"], // within one day
  ];

  for (const [from, to] of ranges) {
    for (const groupBy of [undefined, "day", "week", "month", "model"] as const) {
      it(`${from} – ${to}, group_by=${groupBy ?? "none"}`, async () => {
        const [start, end] = [utc(from) / 1000, utc(to) / 1000];
        const want = await oracle(db, accountId, start, end, groupBy);
        const got = await viaRollups(db, accountId, start, end, groupBy);
        expect(got.totals).toEqual({
          ...want.totals,
          provider: String(Number(want.totals!.provider)),
          fee: String(Number(want.totals!.fee)),
          cost: String(Number(want.totals!.cost)),
        });
        expect(got.s.by_model).toEqual(
          Object.fromEntries(want.models.map((m) => [m.model, { requests: m.requests, tokens: m.tokens, cost_cents: Number(m.cost) }])),
        );
        if (groupBy && groupBy !== "model") {
          expect(got.s.groups!.map((g) => [g.start, g.requests, g.successful_requests, g.failed_requests, g.tokens, g.pages, g.cost_cents])).toEqual(
            want.buckets.map((b) => [b.bucket, b.requests, b.ok, b.failed, b.tokens, b.pages, Number(b.cost)]),
          );
        }
      });
    }
  }

  it("counts the list's total from rollups exactly, with every filter", async () => {
    const next = random(3);
    for (let i = 0; i < 40; i++) {
      const start = Math.floor((utc("2026-02-25T00:00:00Z") + next() * 100 * 86_400_000) / 1000);
      const end = start + Math.floor(next() ** 2 * 60 * 86_400);
      const f = { status: next() < 0.3 ? ("error" as const) : undefined, model: next() < 0.5 ? pick(MODELS, next) : undefined };
      const page = await listUsage(db, accountId, { start, end, limit: 1, offset: 0, ...f });
      const { n } = (await sql<{ n: string }>`select count(*) as n ${rawWindow(accountId, start, end, f)}`.execute(db)).rows[0]!;
      expect(page.total_count, `${start}..${end} ${JSON.stringify(f)}`).toBe(Number(n));
    }
  });

  it("finds a deep offset's page through the rollups, the same entries as walking to it, with every filter", async () => {
    const next = random(11);
    for (let i = 0; i < 30; i++) {
      const start = Math.floor((utc("2026-02-25T00:00:00Z") + next() * 20 * 86_400_000) / 1000);
      const end = start + Math.floor((0.3 + next()) * 80 * 86_400);
      const f = { status: next() < 0.2 ? ("success" as const) : undefined, model: next() < 0.3 ? pick(MODELS, next) : undefined };
      const offset = 1000 + Math.floor(next() * 2200);
      const page = await listUsage(db, accountId, { start, end, limit: 7, offset, ...f });
      const walked = (await sql<{ id: string }>`select id ${rawWindow(accountId, start, end, f)} order by created_at desc, id desc offset ${offset} limit 8`.execute(db)).rows;
      expect(page.data.map((e) => e.id), `offset ${offset} of ${start}..${end} ${JSON.stringify(f)}`).toEqual(walked.slice(0, 7).map((r) => r.id));
      expect(page.has_more).toBe(walked.length > 7);
    }
  });
});

/** The oracle's FROM and WHERE: the window and filters on usage_logs alone. */
function rawWindow(accountId: string, start: number, end: number, f: { status?: string | undefined; model?: string | undefined }) {
  const iso = (s: number) => new Date(s * 1000).toISOString();
  const status = f.status ? sql`and status = ${f.status}` : sql``;
  const model = f.model ? sql`and model = ${f.model}` : sql``;
  return sql`from usage_logs where account_id = ${accountId} and created_at >= ${iso(start)} and created_at < ${iso(end + 1)} ${status} ${model}`;
}

function pick<T>(xs: T[], next: () => number): T {
  return xs[Math.floor(next() * xs.length)]!;
}

/** The account's rollups recomputed from its raw rows, and as the trigger kept them. */
async function rollupsAgree(db: DB, accountId: string): Promise<{ kept: unknown[]; recomputed: unknown[] }> {
  const kept = await sql`select grain, period, model, api_key_id, status, requests::int, tokens::int, pages::int, cost_cents::text, provider_cost_cents::text
    from usage_rollups where account_id = ${accountId} order by 1, 2, 3, 4, 5`.execute(db);
  const recomputed = await sql`select g as grain, date_trunc(g, created_at, 'UTC') as period, model, coalesce(api_key_id, '') as api_key_id, status,
      count(*)::int as requests, sum(tokens_used)::int as tokens, sum(pages_processed)::int as pages, sum(cost_cents)::text as cost_cents,
      sum(provider_cost_cents)::text as provider_cost_cents
    from usage_logs, unnest(array['day', 'hour']) g where account_id = ${accountId} group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5`.execute(db);
  return { kept: kept.rows, recomputed: recomputed.rows };
}

describe("the rollups follow every change to usage_logs", () => {
  it("inserts, updates that move a row to another hour, day or month partition, and deletes", async () => {
    const { db } = await testDb();
    const acc = await createTestAccount();
    const base = { model: "test/a", status: "success" as const, apiKeyId: acc.adminKeyId, tokens: 10, pages: 1, provider: "1.5", fee: "0.075", cost: "2" };
    await insert(db, acc.accountId, EDGES.map((at) => ({ ...base, at })));
    expect((await rollupsAgree(db, acc.accountId)).kept.length).toBeGreaterThan(0);
    await sql`update usage_logs set created_at = created_at + interval '1 hour 1 second' where account_id = ${acc.accountId} and created_at < '2026-04-06Z'`.execute(db);
    await sql`update usage_logs set model = 'test/b', cost_cents = 5 where account_id = ${acc.accountId} and created_at > '2026-04-30Z'`.execute(db);
    await sql`delete from usage_logs where account_id = ${acc.accountId} and created_at >= '2026-04-06Z' and created_at < '2026-04-07Z'`.execute(db);
    const { kept, recomputed } = await rollupsAgree(db, acc.accountId);
    expect(kept).toEqual(recomputed);
  });
});

describe("a row written while a summary runs", () => {
  it("is in the summary once committed, both in the raw rows and in the rollups (one snapshot), and not before", async () => {
    const { db } = await testDb();
    const acc = await createTestAccount();
    const now = Date.now();
    const hourAgo = now - 3_600_000 * 5;
    await insert(db, acc.accountId, [{ at: hourAgo, model: "test/a", status: "success", apiKeyId: null, tokens: 1, pages: 1, provider: "1", fee: "0.05", cost: "2" }]);
    const window = [Math.floor(now / 1000) - 86_400, Math.floor(now / 1000) + 1] as const;
    const before = await summarize(db, acc.accountId, ...window);
    let during: number | undefined;
    await db.transaction().execute(async (trx) => {
      await insert(trx, acc.accountId, [{ at: now, model: "test/a", status: "success", apiKeyId: null, tokens: 1, pages: 1, provider: "1", fee: "0.05", cost: "2" }]);
      during = (await summarize(db, acc.accountId, ...window)).total_requests;
    });
    const after = await summarize(db, acc.accountId, ...window);
    expect([before.total_requests, during, after.total_requests, after.cost.total_cents]).toEqual([1, 1, 2, 4]);
    // Rows of the last second: read from the raw rows at the range's edge.
    const list = await listUsage(db, acc.accountId, { start: window[0], end: Math.floor(now / 1000), limit: 10, offset: 0 });
    expect(list.total_count).toBe(2);
  });
});

describe("keyset pages (starting_after)", () => {
  it("walks the same entries as offset pages, ties in created_at broken by id, and is refused for an unknown id", async () => {
    const { db } = await testDb();
    const acc = await createTestAccount();
    const base = { model: "test/a", status: "success" as const, apiKeyId: null, tokens: 0, pages: 1, provider: "0", fee: "0", cost: "0" };
    const t = utc("2026-04-06T00:00:00Z");
    // 37 rows, many on the same microsecond.
    await insert(db, acc.accountId, Array.from({ length: 37 }, (_, i) => ({ ...base, at: t + Math.floor(i / 4) * 1000 })));
    const window = { start: t / 1000 - 10, end: t / 1000 + 100, limit: 5 };
    const byOffset: string[] = [];
    for (let offset = 0; ; offset += 5) {
      const p = await listUsage(db, acc.accountId, { ...window, offset });
      byOffset.push(...p.data.map((e) => e.id));
      if (!p.has_more) break;
    }
    const byCursor: string[] = [];
    let after: string | undefined;
    for (;;) {
      const p = await listUsage(db, acc.accountId, { ...window, offset: 0, startingAfter: after });
      expect(p.total_count).toBe(37);
      byCursor.push(...p.data.map((e) => e.id));
      if (!p.has_more) break;
      after = p.data.at(-1)!.id;
    }
    expect(byOffset).toHaveLength(37);
    expect(new Set(byOffset).size).toBe(37);
    expect(byCursor).toEqual(byOffset);
    const other = await createTestAccount();
    const err = await listUsage(db, other.accountId, { ...window, offset: 0, startingAfter: byOffset[0] }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "invalid_request", param: "starting_after" });
  });
});
