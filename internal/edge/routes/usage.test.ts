/**
 * GET /v1/usage and GET /v1/usage/summary over HTTP against real Postgres.
 * Usage rows are written the way the service writes them (hold → settle
 * through Billing), then moved in time with SQL (usage_logs is not
 * append-only) so that date windows can be tested exactly.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningEdge } from "../index.ts";
import { Billing, NO_CHARGE, chargeComponent } from "../../billing/index.ts";
import { newId } from "../../platform/ids/index.ts";
import { call, createTestAccount, createTestKey, databaseUrl, expectRefused, startTestEdge, testDb } from "../../../test/harness.ts";

const DAY = 86_400;

let edge: RunningEdge;

beforeAll(async () => {
  edge = await startTestEdge();
});
afterAll(async () => {
  await edge?.close();
});

interface SeedRow {
  /** Unix seconds, may be fractional. */
  at: number;
  model?: string;
  status?: "success" | "error";
  apiKeyId?: string | null;
  /** Exact provider cost in cents; omitted = nothing billed (NO_CHARGE). */
  provider?: string;
  prompt?: number;
  completion?: number;
  pages?: number;
  ms?: number;
}

/** Writes one usage row through Billing (hold → settle) and places it at `at`. Returns its id. */
async function seed(accountId: string, r: SeedRow): Promise<string> {
  const { db } = await testDb();
  const billing = new Billing(db);
  const hold = await billing.hold(accountId, r.apiKeyId ?? null, 1);
  const id = newId("req");
  await billing.settle(hold, {
    requestId: id,
    endpoint: "/v1/ocr",
    model: r.model ?? "test/model-a",
    status: r.status ?? "success",
    errorCode: r.status === "error" ? "upstream_error" : null,
    promptTokens: r.prompt ?? 10,
    completionTokens: r.completion ?? 5,
    pagesProcessed: r.pages ?? 1,
    processingTimeMs: r.ms ?? 100,
    charge: r.provider === undefined ? NO_CHARGE : chargeComponent(r.provider),
  });
  const moved = await sql`update usage_logs set created_at = to_timestamp(${r.at}::double precision) where id = ${id}`.execute(db);
  expect(Number(moved.numAffectedRows)).toBe(1);
  return id;
}

const nowSec = () => Math.floor(Date.now() / 1000);
const utc = (iso: string) => Date.parse(iso) / 1000;
const ids = (body: { data: { id: string }[] }) => body.data.map((e) => e.id);

describe("GET /v1/usage", () => {
  it("defaults to the last 7 days, newest first, with exactly the spec's fields", async () => {
    const acc = await createTestAccount();
    const key2 = await createTestKey(acc.accountId);
    const now = nowSec();
    const r1 = await seed(acc.accountId, { at: now - 60, model: "test/model-a", apiKeyId: acc.adminKeyId, provider: "2.345678901234", prompt: 300, completion: 45, ms: 812 });
    const r2 = await seed(acc.accountId, { at: now - 3600, model: "test/model-b", status: "error", apiKeyId: key2.id, prompt: 0, completion: 0, ms: 33 });
    const r3 = await seed(acc.accountId, { at: now - 7 * DAY + 120, model: "test/model-a", apiKeyId: acc.adminKeyId, provider: "100" });
    await seed(acc.accountId, { at: now - 7 * DAY - 120, model: "test/model-a", apiKeyId: acc.adminKeyId, provider: "1" });
    await seed(acc.accountId, { at: now - 30 * DAY, model: "test/model-a", provider: "1" });

    const res = await call(edge, "GET", "/v1/usage", acc.adminKey);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.object).toBe("list");
    expect(ids(res.body), JSON.stringify(res.body)).toEqual([r1, r2, r3]);
    expect(res.body.total_count).toBe(3);
    expect(res.body.has_more).toBe(false);
    expect(Object.keys(res.body).sort()).toEqual(["data", "has_more", "object", "total_count"]);
    for (const e of res.body.data) {
      expect(Object.keys(e).sort(), JSON.stringify(e)).toEqual(["api_key_id", "cost_cents", "created_at", "id", "model", "processing_time_ms", "status", "tokens_used"]);
      expect(e.id).toMatch(/^req_[0-9A-Za-z]{20}$/);
    }
    expect(res.body.data[0]).toEqual({
      id: r1,
      created_at: now - 60,
      model: "test/model-a",
      status: "success",
      tokens_used: 345,
      cost_cents: 3,
      processing_time_ms: 812,
      api_key_id: acc.adminKeyId,
    });
    expect(res.body.data[1]).toEqual({
      id: r2,
      created_at: now - 3600,
      model: "test/model-b",
      status: "error",
      tokens_used: 0,
      cost_cents: 0,
      processing_time_ms: 33,
      api_key_id: key2.id,
    });
    expect(res.body.data[2]).toMatchObject({ id: r3, created_at: now - 7 * DAY + 120, cost_cents: 105 });
  });

  it("returns 50 entries by default and at most `limit`", async () => {
    const acc = await createTestAccount();
    const now = nowSec();
    const seeded = await Promise.all(Array.from({ length: 55 }, (_, i) => seed(acc.accountId, { at: now - 100 - i * 10, provider: "0.5" })));
    const res = await call(edge, "GET", "/v1/usage", acc.adminKey);
    expect(res.status).toBe(200);
    expect(res.body.data.length).toBe(50);
    expect(res.body.total_count).toBe(55);
    expect(res.body.has_more).toBe(true);
    // seeded[i] is i*10 s older than seeded[0]: newest first is seeding order.
    expect(ids(res.body)).toEqual(seeded.slice(0, 50));

    const max = await call(edge, "GET", "/v1/usage?limit=100", acc.adminKey);
    expect(max.status).toBe(200);
    expect(ids(max.body)).toEqual(seeded);
    expect(max.body.has_more).toBe(false);
  });

  it("filters by status, model, api_key_id, start_date and end_date, alone and combined", async () => {
    const acc = await createTestAccount();
    const other = await createTestKey(acc.accountId);
    const now = nowSec();
    const t = (h: number) => now - h * 3600;
    const a = await seed(acc.accountId, { at: t(1), model: "m/a", status: "success", apiKeyId: acc.adminKeyId, provider: "1" });
    const b = await seed(acc.accountId, { at: t(2), model: "m/b", status: "error", apiKeyId: acc.adminKeyId });
    const c = await seed(acc.accountId, { at: t(3), model: "m/a", status: "error", apiKeyId: other.id });
    const d = await seed(acc.accountId, { at: t(4), model: "m/b", status: "success", apiKeyId: other.id, provider: "1" });
    const e = await seed(acc.accountId, { at: t(5), model: "m/a", status: "success", apiKeyId: null, provider: "1" });

    const list = async (q: string) => {
      const r = await call(edge, "GET", `/v1/usage?${q}`, acc.adminKey);
      expect(r.status, `${q}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body.total_count, q).toBe(r.body.data.length);
      return ids(r.body);
    };
    expect(await list("")).toEqual([a, b, c, d, e]);
    expect(await list("status=success")).toEqual([a, d, e]);
    expect(await list("status=error")).toEqual([b, c]);
    expect(await list("model=m/a")).toEqual([a, c, e]);
    expect(await list(`model=${encodeURIComponent("m/b")}`)).toEqual([b, d]);
    expect(await list("model=m/none")).toEqual([]);
    expect(await list(`api_key_id=${acc.adminKeyId}`)).toEqual([a, b]);
    expect(await list(`api_key_id=${other.id}`)).toEqual([c, d]);
    expect(await list(`start_date=${t(3)}`)).toEqual([a, b, c]);
    expect(await list(`end_date=${t(3)}`)).toEqual([c, d, e]);
    expect(await list(`start_date=${t(4)}&end_date=${t(2)}`)).toEqual([b, c, d]);
    expect(await list(`start_date=${t(3) + 1}&end_date=${t(2) - 1}`)).toEqual([]);
    expect(await list(`status=success&model=m/a`)).toEqual([a, e]);
    expect(await list(`status=error&api_key_id=${other.id}&model=m/a`)).toEqual([c]);
    expect(await list(`status=success&api_key_id=${other.id}&start_date=${t(3)}`)).toEqual([]);
  });

  it("reaches back past 7 days when start_date says so", async () => {
    const acc = await createTestAccount();
    const now = nowSec();
    const old = await seed(acc.accountId, { at: now - 20 * DAY, provider: "1" });
    const recent = await seed(acc.accountId, { at: now - DAY, provider: "1" });
    expect(ids((await call(edge, "GET", "/v1/usage", acc.adminKey)).body)).toEqual([recent]);
    const r = await call(edge, "GET", `/v1/usage?start_date=${now - 21 * DAY}`, acc.adminKey);
    expect(ids(r.body)).toEqual([recent, old]);
    // end_date alone moves the 7-day window back with it.
    const r2 = await call(edge, "GET", `/v1/usage?end_date=${now - 19 * DAY}`, acc.adminKey);
    expect(ids(r2.body)).toEqual([old]);
  });

  it("paginates with limit and offset, has_more and total_count", async () => {
    const acc = await createTestAccount();
    const now = nowSec();
    const rows: string[] = [];
    for (let i = 0; i < 5; i++) rows.push(await seed(acc.accountId, { at: now - 60 * (i + 1), provider: "1" }));
    const page = async (q: string) => {
      const r = await call(edge, "GET", `/v1/usage?${q}`, acc.adminKey);
      expect(r.status, `${q}: ${JSON.stringify(r.body)}`).toBe(200);
      return { ids: ids(r.body), has_more: r.body.has_more, total: r.body.total_count };
    };
    expect(await page("limit=2")).toEqual({ ids: rows.slice(0, 2), has_more: true, total: 5 });
    expect(await page("limit=2&offset=2")).toEqual({ ids: rows.slice(2, 4), has_more: true, total: 5 });
    expect(await page("limit=2&offset=4")).toEqual({ ids: rows.slice(4, 5), has_more: false, total: 5 });
    expect(await page("limit=5")).toEqual({ ids: rows, has_more: false, total: 5 });
    expect(await page("limit=1&offset=3")).toEqual({ ids: [rows[3]], has_more: true, total: 5 });
    expect(await page("offset=10")).toEqual({ ids: [], has_more: false, total: 5 });
    // Pagination composes with filters.
    expect(await page(`limit=2&offset=1&start_date=${now - 240}`)).toEqual({ ids: rows.slice(1, 3), has_more: true, total: 4 });
  });

  it("answers 400 naming the parameter for a bad limit, offset, status, dates or an inverted window", async () => {
    const acc = await createTestAccount();
    const now = nowSec();
    const cases: [string, string][] = [
      ["limit=101", "limit"],
      ["limit=0", "limit"],
      ["limit=-5", "limit"],
      ["limit=abc", "limit"],
      ["limit=2.5", "limit"],
      ["offset=-1", "offset"],
      ["status=pending", "status"],
      ["status=SUCCESS", "status"],
      ["start_date=yesterday", "start_date"],
      [`start_date=${now}&end_date=${now - 10}`, "start_date"],
    ];
    for (const [q, param] of cases) {
      const r = await call(edge, "GET", `/v1/usage?${q}`, acc.adminKey);
      expect(r.status, `${q}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error.code, q).toBe("invalid_request");
      expect(r.body.error.param, `${q}: ${JSON.stringify(r.body)}`).toBe(param);
      expect(typeof r.body.error.message).toBe("string");
    }
    const over = await call(edge, "GET", "/v1/usage?limit=101", acc.adminKey);
    expect(over.body.error.message, "the message names the maximum").toMatch(/100/);
    expect(over.body.error.message).toMatch(/limit/);
    const inverted = await call(edge, "GET", `/v1/usage?start_date=${now}&end_date=${now - 10}`, acc.adminKey);
    expect(inverted.body.error.message).toMatch(/start_date.*end_date/);
  });

  it("needs a key: 401 without one", async () => {
    expectRefused(await call(edge, "GET", "/v1/usage"), 401, "invalid_api_key");
  });

  it("never shows another account's rows, even when filtering by that account's key id", async () => {
    const mine = await createTestAccount();
    const theirs = await createTestAccount();
    const now = nowSec();
    const m = await seed(mine.accountId, { at: now - 100, model: "shared/model", apiKeyId: mine.adminKeyId, provider: "1" });
    const t1 = await seed(theirs.accountId, { at: now - 50, model: "shared/model", apiKeyId: theirs.adminKeyId, provider: "1" });
    const t2 = await seed(theirs.accountId, { at: now - 150, model: "shared/model", apiKeyId: theirs.adminKeyId, status: "error" });

    const all = await call(edge, "GET", "/v1/usage", mine.adminKey);
    expect(ids(all.body)).toEqual([m]);
    expect(all.body.total_count).toBe(1);
    const byTheirKey = await call(edge, "GET", `/v1/usage?api_key_id=${theirs.adminKeyId}`, mine.adminKey);
    expect(byTheirKey.status).toBe(200);
    expect(byTheirKey.body).toEqual({ object: "list", data: [], has_more: false, total_count: 0 });
    const byModel = await call(edge, "GET", "/v1/usage?model=shared/model&limit=100", mine.adminKey);
    expect(ids(byModel.body)).toEqual([m]);

    const theirView = await call(edge, "GET", "/v1/usage", theirs.adminKey);
    expect(ids(theirView.body)).toEqual([t1, t2]);

    const summary = await call(edge, "GET", "/v1/usage/summary", mine.adminKey);
    expect(summary.body.total_requests).toBe(1);
    expect(summary.body.cost.total_cents).toBe(2);
  });

  // BUG: the API reports created_at in whole seconds (floored), but the window
  // compares the stored sub-second timestamp with end_date: an entry whose
  // created_at equals end_date is left out (and so is a request logged earlier
  // in the very second a default-window query is made).
  it("includes an entry whose reported created_at equals end_date", async () => {
    const acc = await createTestAccount();
    const at = nowSec() - 500;
    const id = await seed(acc.accountId, { at: at + 0.5, provider: "1" });
    const all = await call(edge, "GET", "/v1/usage", acc.adminKey);
    expect(all.body.data.map((e: { id: string; created_at: number }) => [e.id, e.created_at])).toEqual([[id, at]]);
    const r = await call(edge, "GET", `/v1/usage?start_date=${at}&end_date=${at}`, acc.adminKey);
    expect(ids(r.body), `entry created_at=${at}, queried start_date=end_date=${at}: ${JSON.stringify(r.body)}`).toEqual([id]);
  });
  // BUG (same cause): end_date defaults to the current whole second, so a request logged
  // earlier in the very second of the query is missing from the default listing.
  it("lists a request logged earlier in the same second by default", async () => {
    const acc = await createTestAccount();
    for (let attempt = 0; ; attempt++) {
      // Start just after a second boundary so the write and the read share one second.
      await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
      const second = nowSec();
      const id = await seed(acc.accountId, { at: second + 0.001, provider: "1" });
      const r = await call(edge, "GET", "/v1/usage", acc.adminKey);
      if (nowSec() !== second && attempt < 3) continue; // crossed a second boundary: the case did not arise
      expect(ids(r.body), `row at ${second}.001, listed at ${second}: ${JSON.stringify(r.body)}`).toContain(id);
      return;
    }
  });
});

describe("GET /v1/usage/summary", () => {
  it("defaults to the last 30 days and sums requests, tokens, pages and exact costs", async () => {
    const acc = await createTestAccount();
    const now = nowSec();
    // 100 → 105 charged; 2.345678901234 → 3; 14.2857142857 → 14.999999999985 → 15; error → 0.
    await seed(acc.accountId, { at: now - DAY, model: "m/a", provider: "100", prompt: 1000, completion: 200, pages: 3 });
    await seed(acc.accountId, { at: now - 2 * DAY, model: "m/b", provider: "2.345678901234", prompt: 50, completion: 7, pages: 1 });
    await seed(acc.accountId, { at: now - 10 * DAY, model: "m/a", status: "error", prompt: 0, completion: 0, pages: 0 });
    await seed(acc.accountId, { at: now - 29 * DAY, model: "m/b", provider: "14.2857142857", prompt: 20, completion: 3, pages: 2 });
    // Outside the default window.
    await seed(acc.accountId, { at: now - 31 * DAY, model: "m/c", provider: "500", prompt: 9999, pages: 9 });

    const before = nowSec();
    const r = await call(edge, "GET", "/v1/usage/summary", acc.adminKey);
    const after = nowSec();
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    expect(b, JSON.stringify(b)).toMatchObject({
      total_requests: 4,
      successful_requests: 3,
      failed_requests: 1,
      total_tokens_used: 1280,
      total_pages_processed: 6,
      cost: {
        provider_cost_cents: 116.631393186934,
        platform_fee_cents: 5.8315696593467,
        total_cents: 123,
        total_usd: 1.23,
        formatted: "$1.23",
      },
      by_model: {
        "m/a": { requests: 2, tokens: 1200, cost_cents: 105 },
        "m/b": { requests: 2, tokens: 80, cost_cents: 18 },
      },
    });
    expect(Object.keys(b.by_model).sort()).toEqual(["m/a", "m/b"]);
    expect(Object.keys(b.cost).sort()).toEqual(["formatted", "platform_fee_cents", "provider_cost_cents", "total_cents", "total_usd"]);
    expect(b.period.end).toBeGreaterThanOrEqual(before);
    expect(b.period.end).toBeLessThanOrEqual(after);
    expect(b.period.end - b.period.start).toBe(30 * DAY);
    expect(b.groups, "no groups without group_by").toBeUndefined();

    // An explicit window reaching further back includes the older row.
    const wide = await call(edge, "GET", `/v1/usage/summary?start_date=${now - 40 * DAY}&end_date=${now}`, acc.adminKey);
    expect(wide.status).toBe(200);
    expect(wide.body.period).toEqual({ start: now - 40 * DAY, end: now });
    expect(wide.body.total_requests).toBe(5);
    expect(wide.body.cost.total_cents).toBe(123 + 525);
    expect(wide.body.cost.formatted).toBe("$6.48");
    expect(wide.body.by_model["m/c"]).toEqual({ requests: 1, tokens: 10004, cost_cents: 525 });
  });

  it("answers zeros and an empty by_model for an account with no usage", async () => {
    const acc = await createTestAccount();
    const r = await call(edge, "GET", "/v1/usage/summary", acc.adminKey);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      total_requests: 0,
      successful_requests: 0,
      failed_requests: 0,
      total_tokens_used: 0,
      total_pages_processed: 0,
      cost: { provider_cost_cents: 0, platform_fee_cents: 0, total_cents: 0, total_usd: 0, formatted: "$0.00" },
      by_model: {},
    });
  });

  it("group_by=model adds one group per model with key and counts", async () => {
    const acc = await createTestAccount();
    const now = nowSec();
    await seed(acc.accountId, { at: now - 100, model: "z/last", provider: "1", prompt: 10, completion: 0, pages: 1 });
    await seed(acc.accountId, { at: now - 200, model: "a/first", provider: "3", prompt: 7, completion: 3, pages: 2 });
    await seed(acc.accountId, { at: now - 300, model: "a/first", status: "error", prompt: 1, completion: 0, pages: 0 });
    const r = await call(edge, "GET", "/v1/usage/summary?group_by=model", acc.adminKey);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.group_by).toBe("model");
    expect(r.body.groups).toEqual([
      { key: "a/first", requests: 2, successful_requests: 1, failed_requests: 1, tokens: 11, pages: 2, cost_cents: 4 },
      { key: "z/last", requests: 1, successful_requests: 1, failed_requests: 0, tokens: 10, pages: 1, cost_cents: 2 },
    ]);
    // The flat fields stay.
    expect(r.body.total_requests).toBe(3);
    expect(r.body.by_model).toEqual({ "a/first": { requests: 2, tokens: 11, cost_cents: 4 }, "z/last": { requests: 1, tokens: 10, cost_cents: 2 } });
  });

  describe("group_by day, week, month (UTC; weeks start on Monday)", () => {
    // 2023-12-31 is a Sunday, 2024-01-01 a Monday, 2024-01-07 a Sunday, 2024-01-08 a Monday, 2024 a leap year.
    const rows: SeedRow[] = [
      { at: utc("2023-12-31T12:00:00Z"), model: "m/a", provider: "1", prompt: 1, completion: 0, pages: 1 }, // 2
      { at: utc("2024-01-01T10:00:00Z"), model: "m/a", provider: "1", prompt: 2, completion: 0, pages: 1 }, // 2
      { at: utc("2024-01-07T23:30:00Z"), model: "m/b", status: "error", prompt: 4, completion: 0, pages: 0 }, // 0
      { at: utc("2024-01-08T00:30:00Z"), model: "m/a", provider: "3", prompt: 8, completion: 0, pages: 2 }, // 4
      { at: utc("2024-02-29T12:00:00Z"), model: "m/b", provider: "10", prompt: 16, completion: 0, pages: 3 }, // 11
    ];
    const window = `start_date=${utc("2023-12-31T00:00:00Z")}&end_date=${utc("2024-03-01T00:00:00Z")}`;
    const g = (startIso: string, endIso: string, requests: number, ok: number, tokens: number, pages: number, cost: number) => ({
      start: utc(startIso),
      end: utc(endIso),
      requests,
      successful_requests: ok,
      failed_requests: requests - ok,
      tokens,
      pages,
      cost_cents: cost,
    });
    const expected = {
      day: [
        g("2023-12-31T00:00:00Z", "2024-01-01T00:00:00Z", 1, 1, 1, 1, 2),
        g("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", 1, 1, 2, 1, 2),
        g("2024-01-07T00:00:00Z", "2024-01-08T00:00:00Z", 1, 0, 4, 0, 0),
        g("2024-01-08T00:00:00Z", "2024-01-09T00:00:00Z", 1, 1, 8, 2, 4),
        g("2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z", 1, 1, 16, 3, 11),
      ],
      week: [
        g("2023-12-25T00:00:00Z", "2024-01-01T00:00:00Z", 1, 1, 1, 1, 2),
        g("2024-01-01T00:00:00Z", "2024-01-08T00:00:00Z", 2, 1, 6, 1, 2),
        g("2024-01-08T00:00:00Z", "2024-01-15T00:00:00Z", 1, 1, 8, 2, 4),
        g("2024-02-26T00:00:00Z", "2024-03-04T00:00:00Z", 1, 1, 16, 3, 11),
      ],
      month: [
        g("2023-12-01T00:00:00Z", "2024-01-01T00:00:00Z", 1, 1, 1, 1, 2),
        g("2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", 3, 2, 14, 3, 6),
        g("2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z", 1, 1, 16, 3, 11),
      ],
    } as const;

    let acc: Awaited<ReturnType<typeof createTestAccount>>;
    beforeAll(async () => {
      acc = await createTestAccount();
      for (const r of rows) await seed(acc.accountId, r);
    });

    for (const unit of ["day", "week", "month"] as const) {
      it(`group_by=${unit}`, async () => {
        const r = await call(edge, "GET", `/v1/usage/summary?${window}&group_by=${unit}`, acc.adminKey);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.group_by).toBe(unit);
        expect(r.body.groups, JSON.stringify(r.body.groups)).toEqual(expected[unit]);
        expect(r.body.total_requests).toBe(5);
        expect(r.body.cost.total_cents).toBe(19);
        expect(r.body.period).toEqual({ start: utc("2023-12-31T00:00:00Z"), end: utc("2024-03-01T00:00:00Z") });
      });
    }

    it("buckets by UTC even when the database session runs in another time zone", async () => {
      const url = new URL(databaseUrl());
      url.searchParams.set("options", "-c TimeZone=Pacific/Kiritimati");
      const tzEdge = await startTestEdge({ env: { DATABASE_URL: url.toString() } });
      try {
        const { rows: tz } = await sql<{ tz: string }>`select current_setting('TimeZone') as tz`.execute(tzEdge.deps.db);
        expect(tz[0]?.tz, "the session time zone option took effect").toBe("Pacific/Kiritimati");
        for (const unit of ["day", "week", "month"] as const) {
          const r = await call(tzEdge, "GET", `/v1/usage/summary?${window}&group_by=${unit}`, acc.adminKey);
          expect(r.status, JSON.stringify(r.body)).toBe(200);
          expect(r.body.groups, `${unit}: ${JSON.stringify(r.body.groups)}`).toEqual(expected[unit]);
        }
      } finally {
        await tzEdge.close();
      }
    });
  });

  it("answers 400 for a bad group_by, bad dates or an inverted window", async () => {
    const acc = await createTestAccount();
    const now = nowSec();
    for (const [q, param] of [
      ["group_by=year", "group_by"],
      ["group_by=", "group_by"],
      ["group_by=DAY", "group_by"],
      ["start_date=-1", "start_date"],
      ["end_date=soon", "end_date"],
      [`start_date=${now}&end_date=${now - 1}`, "start_date"],
    ] as const) {
      const r = await call(edge, "GET", `/v1/usage/summary?${q}`, acc.adminKey);
      expect(r.status, `${q}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error.code).toBe("invalid_request");
      expect(r.body.error.param, `${q}: ${JSON.stringify(r.body)}`).toBe(param);
    }
  });

  // BUG: a value outside a union of literals is refused with the bare Ajv text
  // "must be equal to constant"; the allowed values are never named.
  it("names the allowed values when group_by or status is not one of them", async () => {
    const acc = await createTestAccount();
    const bad = await call(edge, "GET", "/v1/usage/summary?group_by=year", acc.adminKey);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message, JSON.stringify(bad.body)).toMatch(/day.*week.*month.*model/);
    const status = await call(edge, "GET", "/v1/usage?status=pending", acc.adminKey);
    expect(status.status).toBe(400);
    expect(status.body.error.message, JSON.stringify(status.body)).toMatch(/success.*error/);
  });

  // BUG (same as for /v1/usage): the window compares sub-second created_at with whole-second end_date.
  it("counts an entry whose whole-second created_at equals end_date", async () => {
    const acc = await createTestAccount();
    const at = nowSec() - 500;
    await seed(acc.accountId, { at: at + 0.5, model: "m/edge", provider: "1" });
    const r = await call(edge, "GET", `/v1/usage/summary?start_date=${at}&end_date=${at}`, acc.adminKey);
    expect(r.status).toBe(200);
    expect(r.body.total_requests, `start_date=end_date=${at}, row at ${at}.5: ${JSON.stringify(r.body)}`).toBe(1);
  });
});
