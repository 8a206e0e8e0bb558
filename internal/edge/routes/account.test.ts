/**
 * GET /v1/account and GET /v1/account/balance over HTTP against real
 * Postgres: details and rate limits, balance after credits, holds and a
 * settled charge.
 */
import { sql } from "kysely";
import { adminUpdateAccount } from "../../cli/admin/index.ts";
import { RedisRateLimiter } from "../../ratelimit/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningEdge } from "../index.ts";
import { Billing, chargeComponent } from "../../billing/index.ts";
import { newId } from "../../platform/ids/index.ts";
import { addCredits, call, createTestAccount, createTestKey, redisUrl, startTestEdge, testDb } from "../../../test/harness.ts";

let edge: RunningEdge;

beforeAll(async () => {
  edge = await startTestEdge();
});
afterAll(async () => {
  await edge?.close();
});

const nowSec = () => Math.floor(Date.now() / 1000);

async function balance(key: string) {
  const r = await call(edge, "GET", "/v1/account/balance", key);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

describe("GET /v1/account", () => {
  it("returns id, email, name, plan, created_at and this account's rate limits", async () => {
    const before = nowSec();
    const acc = await createTestAccount({ requestsPerMinute: 123, requestsPerDay: 45_678 });
    const after = nowSec();
    const { db } = await testDb();
    const row = await db.selectFrom("accounts").selectAll().where("id", "=", acc.accountId).executeTakeFirstOrThrow();

    const r = await call(edge, "GET", "/v1/account", acc.adminKey);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["created_at", "email", "id", "name", "plan", "rate_limits"]);
    expect(r.body).toEqual({
      id: acc.accountId,
      email: row.email,
      name: "test account",
      plan: "developer",
      created_at: Math.floor(row.created_at.getTime() / 1000),
      rate_limits: { requests_per_minute: 123, requests_per_day: 45_678 },
    });
    expect(r.body.id).toMatch(/^acc_[0-9A-Za-z]{20}$/);
    expect(r.body.email).toMatch(/^t\d+\.\d+\.\d+@example\.test$/);
    expect(r.body.created_at).toBeGreaterThanOrEqual(before);
    expect(r.body.created_at).toBeLessThanOrEqual(after);
  });

  it("reports the plan, and rate limits changed by an operator (folio admin account update) on the next request", async () => {
    const acc = await createTestAccount({ plan: "pro", requestsPerMinute: 600, requestsPerDay: 200_000 });
    const r = await call(edge, "GET", "/v1/account", acc.adminKey);
    expect(r.body).toMatchObject({ plan: "pro", rate_limits: { requests_per_minute: 600, requests_per_day: 200_000 } });
    const { db } = await testDb();
    const limiter = new RedisRateLimiter(redisUrl(), { onError: "deny", log: createLogger("silent") });
    try {
      await adminUpdateAccount({ db, limiter }, acc.accountId, { requestsPerMinute: 900, requestsPerDay: 300_000, name: "renamed" });
    } finally {
      await limiter.close();
    }
    const r2 = await call(edge, "GET", "/v1/account", acc.adminKey);
    expect(r2.body.rate_limits, JSON.stringify(r2.body)).toEqual({ requests_per_minute: 900, requests_per_day: 300_000 });
    expect(r2.body.name).toBe("renamed");
    expect(r2.headers.get("ratelimit-policy")).toContain("900;w=60");
  });

  it("shows each key its own account only", async () => {
    const a = await createTestAccount();
    const b = await createTestAccount();
    const ra = await call(edge, "GET", "/v1/account", a.adminKey);
    const rb = await call(edge, "GET", "/v1/account", b.adminKey);
    expect(ra.body.id).toBe(a.accountId);
    expect(rb.body.id).toBe(b.accountId);
    expect(ra.body.email).not.toBe(rb.body.email);
  });

  it("answers 401 without a key and 403 for a key lacking admin", async () => {
    const acc = await createTestAccount();
    const none = await call(edge, "GET", "/v1/account");
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("invalid_api_key");
    const k = await createTestKey(acc.accountId, ["account:read"]);
    const weak = await call(edge, "GET", "/v1/account/balance", k.key);
    expect(weak.status, JSON.stringify(weak.body)).toBe(403);
    expect(weak.body.error.code).toBe("permission_denied");
  });
});

describe("GET /v1/account/balance", () => {
  it("returns balance_cents, balance_usd, formatted, currency USD, held_cents and auto_recharge", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const b = await balance(acc.adminKey);
    expect(Object.keys(b).sort()).toEqual(["auto_recharge", "balance_cents", "balance_usd", "currency", "formatted", "held_cents"]);
    expect(b).toEqual({
      balance_cents: 1000,
      balance_usd: 10,
      formatted: "$10.00",
      currency: "USD",
      held_cents: 0,
      auto_recharge: { enabled: false, threshold_cents: 0, amount_cents: 0 },
    });
  });

  it("shows an empty account as $0.00", async () => {
    const acc = await createTestAccount({ creditsCents: 0 });
    expect(await balance(acc.adminKey)).toMatchObject({ balance_cents: 0, balance_usd: 0, formatted: "$0.00", held_cents: 0 });
  });

  it("goes up with credits (thousands separated in formatted)", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    await addCredits(acc.accountId, 123_456);
    expect(await balance(acc.adminKey)).toMatchObject({ balance_cents: 124_456, balance_usd: 1244.56, formatted: "$1,244.56" });
    await addCredits(acc.accountId, 7);
    expect(await balance(acc.adminKey)).toMatchObject({ balance_cents: 124_463, balance_usd: 1244.63, formatted: "$1,244.63" });
  });

  it("shows a hold in held_cents without spending it, then the settled charge in the balance", async () => {
    const acc = await createTestAccount({ creditsCents: 500 });
    const { db } = await testDb();
    const billing = new Billing(db);
    const hold = await billing.hold(acc.accountId, acc.adminKeyId, 40);
    expect(await balance(acc.adminKey)).toMatchObject({ balance_cents: 500, held_cents: 40, formatted: "$5.00" });

    // 12.5 + 5% = 13.125 → 14 cents.
    const settled = await billing.settle(hold, {
      requestId: newId("req"),
      endpoint: "/v1/ocr",
      model: "test/model",
      status: "success",
      promptTokens: 10,
      completionTokens: 10,
      pagesProcessed: 1,
      processingTimeMs: 50,
      charge: chargeComponent("12.5"),
    });
    expect(settled.chargedCents).toBe(14);
    expect(await balance(acc.adminKey)).toMatchObject({ balance_cents: 486, balance_usd: 4.86, formatted: "$4.86", held_cents: 0 });

    // A released hold changes nothing in the balance.
    const h2 = await billing.hold(acc.accountId, null, 100);
    expect(await balance(acc.adminKey)).toMatchObject({ balance_cents: 486, held_cents: 100 });
    await billing.release(h2);
    expect(await balance(acc.adminKey)).toMatchObject({ balance_cents: 486, held_cents: 0 });

    // The usage log shows the same charge, with the default window.
    const usage = await call(edge, "GET", "/v1/usage", acc.adminKey);
    expect(usage.body.data.map((e: { cost_cents: number }) => e.cost_cents), JSON.stringify(usage.body)).toEqual([14]);
  });

  it("reports the account's auto_recharge settings", async () => {
    const acc = await createTestAccount();
    const { db } = await testDb();
    await sql`update accounts set auto_recharge_enabled = true, auto_recharge_threshold_cents = 500, auto_recharge_amount_cents = 2500 where id = ${acc.accountId}`.execute(db);
    expect((await balance(acc.adminKey)).auto_recharge).toEqual({ enabled: true, threshold_cents: 500, amount_cents: 2500 });
  });
});
