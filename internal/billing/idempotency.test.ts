/**
 * Idempotency keys against real Postgres: claiming, replaying, refusing
 * another request, waiting for a running one, taking over a dead one's key,
 * expiry, and the answer written in the settlement's transaction.
 */
import { describe, expect, it } from "vitest";
import { createTestAccount, databaseUrl, testDb } from "../../test/harness.ts";
import { answerLost } from "../../test/faults.ts";
import { newId } from "../platform/ids/index.ts";
import { IdempotencyStore, keepsFailure, type ClaimOutcome } from "./idempotency.ts";
import { Billing } from "./ledger.ts";
import { chargeComponent, Decimal } from "./pricing.ts";

const store = async (leaseMs = 60_000) => new IdempotencyStore((await testDb()).db, { leaseMs });

function claimed(o: ClaimOutcome) {
  if (o.kind !== "run") throw new Error(`expected to run, got ${JSON.stringify(o)}`);
  return o.claim;
}

describe("IdempotencyStore", () => {
  it("lets the first request run, tells a retry to wait while it runs, and replays its answer once stored", async () => {
    const acc = await createTestAccount();
    const s = await store();
    const claim = claimed(await s.claim(acc.accountId, "k", "fp"));
    const during = await s.claim(acc.accountId, "k", "fp");
    expect(during.kind).toBe("in_progress");
    if (during.kind === "in_progress") expect(during.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    await s.complete(claim, { status: 200, body: '{"id":"req_1"}', requestId: "req_1" });
    expect(claim.finished).toBe(true);
    expect(await s.claim(acc.accountId, "k", "fp")).toEqual({ kind: "replay", answer: { status: 200, body: '{"id":"req_1"}', requestId: "req_1" } });
  });

  it("refuses another request under a key, running or done", async () => {
    const acc = await createTestAccount();
    const s = await store();
    claimed(await s.claim(acc.accountId, "k", "fp"));
    expect((await s.claim(acc.accountId, "k", "other")).kind).toBe("mismatch");
  });

  it("gives a released key to the next request", async () => {
    const acc = await createTestAccount();
    const s = await store();
    const first = claimed(await s.claim(acc.accountId, "k", "fp"));
    await s.release(first);
    const second = claimed(await s.claim(acc.accountId, "k", "fp"));
    expect(second.owner).not.toBe(first.owner);
  });

  it("takes over a running key whose lease ran out (its request died), and the dead request can no longer store its answer", async () => {
    const acc = await createTestAccount();
    const s = await store(50);
    const dead = claimed(await s.claim(acc.accountId, "k", "fp"));
    await new Promise((r) => setTimeout(r, 80));
    const next = claimed(await s.claim(acc.accountId, "k", "fp"));
    await s.complete(dead, { status: 200, body: "dead", requestId: null });
    await s.complete(next, { status: 200, body: "alive", requestId: null });
    const o = await s.claim(acc.accountId, "k", "fp");
    expect(o.kind === "replay" && o.answer.body).toBe("alive");
  });

  it("forgets answers older than its TTL: the key runs again, and the sweeper deletes them", async () => {
    const acc = await createTestAccount();
    const s = new IdempotencyStore((await testDb()).db, { leaseMs: 60_000, ttlMs: 50 });
    const first = claimed(await s.claim(acc.accountId, "k", "fp"));
    await s.complete(first, { status: 200, body: "{}", requestId: null });
    await new Promise((r) => setTimeout(r, 80));
    claimed(await s.claim(acc.accountId, "k", "another body is fine after expiry"));
    const other = claimed(await s.claim(acc.accountId, "k2", "fp"));
    await s.complete(other, { status: 200, body: "{}", requestId: null });
    await new Promise((r) => setTimeout(r, 80));
    expect(await s.sweep()).toBeGreaterThanOrEqual(2);
  });
});

/** An account with 100 cents, a claimed key and a 5-cent hold: a paid request under way. */
async function underWay() {
  const acc = await createTestAccount({ creditsCents: 100 });
  const { db } = await testDb();
  const s = await store();
  const billing = new Billing(db);
  const claim = claimed(await s.claim(acc.accountId, "k", "fp"));
  const hold = await billing.hold(acc.accountId, null, 5);
  const requestId = newId("req");
  /** Settles the hold as a successful 2-cent /v1/ocr request whose answer is `body`; `errorCode` goes into its usage row. */
  const settle = (body: string, errorCode?: string) =>
    billing.settle(hold, {
      requestId,
      endpoint: "/v1/ocr",
      model: "m",
      status: "success",
      ...(errorCode === undefined ? {} : { errorCode }),
      processingTimeMs: 1,
      charge: chargeComponent(new Decimal(2)),
      answer: { store: s, claim, status: 200, body },
    });
  return { acc, db, claim, requestId, settle };
}

describe("a claim whose INSERT was applied but its answer lost (a restart, a frozen database resuming)", () => {
  // Found by test/fault-suite.test.ts (Postgres freeze): the key stayed running with no request behind it,
  // and every retry got 409 until the lease ran out (FOLIO_HOLD_TTL_SECONDS + 60 s, 16 min by default).
  it("is given back in the background once the database answers: a retry then runs", async () => {
    const acc = await createTestAccount();
    const lossy = answerLost(databaseUrl());
    try {
      lossy.loseNext(/^insert into "idempotency_keys"/);
      const err = await new IdempotencyStore(lossy.db, { leaseMs: 60_000 }).claim(acc.accountId, "k", "fp").catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "service_unavailable" });
      const s = await store();
      expect((await s.claim(acc.accountId, "k", "fp")).kind, "the lost INSERT holds the key").toBe("in_progress");
      await expect.poll(async () => (await s.claim(acc.accountId, "k", "fp")).kind, { timeout: 8000, interval: 250 }).toBe("run");
    } finally {
      await lossy.close();
    }
  });
});

describe("the answer and the charge in one transaction", () => {
  it("stores the answer with the usage row and the debit", async () => {
    const { acc, db, claim, requestId, settle } = await underWay();
    await settle('{"ok":true}');
    expect(claim).toMatchObject({ finished: true, answer: { status: 200, body: '{"ok":true}', requestId } });
    const row = await db.selectFrom("idempotency_keys").selectAll().where("account_id", "=", acc.accountId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: "done", request_id: requestId, response_status: 200, response_body: '{"ok":true}' });
    expect(await db.selectFrom("usage_logs").select("id").where("id", "=", requestId).executeTakeFirst()).toBeDefined();
  });

  it("stores neither the answer nor the charge when the settlement fails (its transaction rolls back whole)", async () => {
    const { acc, db, claim, settle } = await underWay();
    // An error code Postgres cannot store (a NUL): the usage row, written after the debit, is refused.
    await expect(settle("{}", "bad\u0000code")).rejects.toThrow(/0x00/);
    expect(claim.finished).toBe(false);
    const row = await db.selectFrom("idempotency_keys").select(["status", "response_body"]).where("account_id", "=", acc.accountId).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: "running", response_body: null });
    const account = await db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", acc.accountId).executeTakeFirstOrThrow();
    expect(account).toEqual({ balance_cents: 100, held_cents: 5 });
  });
});

describe("keepsFailure", () => {
  it("keeps billed failures and unbilled ones a retry cannot change; gives back unbilled 5xx, 402, 409 and 429", () => {
    expect(keepsFailure(502, 1)).toBe(true);
    expect(keepsFailure(500, 3)).toBe(true);
    expect(keepsFailure(400, 0)).toBe(true);
    expect(keepsFailure(413, 0)).toBe(true);
    for (const status of [402, 409, 429, 500, 502, 503]) expect(keepsFailure(status, 0), String(status)).toBe(false);
  });
});
