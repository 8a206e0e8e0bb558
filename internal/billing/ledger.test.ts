/**
 * The billing core against real Postgres: atomic holds under concurrency,
 * settle (ledger debit + usage log in one transaction), release, expiry,
 * credits, the append-only ledger and the 402 when credits are short.
 */
import { sql } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { createTestAccount, databaseUrl, testDb } from "../../test/harness.ts";
import { answerLost } from "../../test/faults.ts";
import { openDatabase, type DB } from "../platform/db/index.ts";
import { FolioError, errorBody, httpStatusOf } from "../platform/errors/index.ts";
import { newId } from "../platform/ids/index.ts";
import { Billing, type Settlement } from "./ledger.ts";
import { NO_CHARGE, chargeComponent, type ComponentCharge } from "./pricing.ts";

const db = async (): Promise<DB> => (await testDb()).db;

async function accountRow(accountId: string) {
  return (await db()).selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", accountId).executeTakeFirstOrThrow();
}

async function ledgerRows(accountId: string) {
  return (await db()).selectFrom("ledger_entries").selectAll().where("account_id", "=", accountId).orderBy("created_at").orderBy("id").execute();
}

async function usageRows(accountId: string) {
  return (await db()).selectFrom("usage_logs").selectAll().where("account_id", "=", accountId).orderBy("created_at").orderBy("id").execute();
}

function settlement(charge: ComponentCharge, over: Partial<Settlement> = {}): Settlement {
  return {
    requestId: newId("req"),
    endpoint: "/v1/ocr",
    model: "test/model",
    status: "success",
    promptTokens: 100,
    completionTokens: 20,
    pagesProcessed: 1,
    processingTimeMs: 1234,
    charge,
    ...over,
  };
}

/** Runs `p` and returns what it threw (fails the test when it resolves). */
async function thrown(p: Promise<unknown>): Promise<unknown> {
  try {
    const v = await p;
    expect.unreachable(`expected a rejection, got ${JSON.stringify(v)}`);
  } catch (err) {
    return err;
  }
}

afterAll(async () => {
  await (await testDb()).close();
});

describe("hold under concurrency", () => {
  it("200 concurrent 1-cent holds on exactly 100 cents: 100 taken, 100 refused with insufficient_credits, never overdrawn", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 100, held_cents: 0 });

    const handle = await openDatabase({ databaseUrl: databaseUrl(), poolSize: 20 });
    try {
      const billing = new Billing(handle.db, { holdTtlMs: 900_000 });
      const results = await Promise.allSettled(Array.from({ length: 200 }, () => billing.hold(acc.accountId, null, 1)));
      const fulfilled = results.filter((r) => r.status === "fulfilled").map((r) => r.value);
      const rejected = results.filter((r) => r.status === "rejected").map((r) => r.reason as unknown);
      expect(fulfilled.length, `fulfilled=${fulfilled.length} rejected=${rejected.length}`).toBe(100);
      expect(rejected.length).toBe(100);
      const badRejections = rejected.filter((e) => !(e instanceof FolioError) || e.code !== "insufficient_credits");
      expect(badRejections.map(String), "every refusal is insufficient_credits").toEqual([]);
      expect(new Set(fulfilled.map((h) => h.id)).size).toBe(100);

      expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 100, held_cents: 100 });
      const open = await handle.db.selectFrom("holds").select((eb) => eb.fn.countAll<string>().as("n")).where("account_id", "=", acc.accountId).where("status", "=", "held").executeTakeFirstOrThrow();
      expect(Number(open.n)).toBe(100);

      // Nothing is left to hold.
      const more = await thrown(billing.hold(acc.accountId, null, 1));
      expect((more as FolioError).code).toBe("insufficient_credits");

      // Settle every hold concurrently at 1 cent each.
      const settled = await Promise.allSettled(fulfilled.map((h) => billing.settle(h, settlement(chargeComponent("0.5")))));
      const failedSettles = settled.filter((r) => r.status === "rejected").map((r) => String(r.reason));
      expect(failedSettles).toEqual([]);
      const balances = settled.map((r) => (r.status === "fulfilled" ? r.value.balanceCents : NaN));
      expect(Math.min(...balances), `balances after each settle: ${balances.join(",")}`).toBeGreaterThanOrEqual(0);
      expect([...balances].sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i));

      expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 0, held_cents: 0 });
      const ledger = await ledgerRows(acc.accountId);
      const debits = ledger.filter((l) => l.kind === "debit");
      expect(debits.length).toBe(100);
      expect(debits.reduce((s, l) => s + l.amount_cents, 0)).toBe(-100);
      expect(debits.every((l) => l.balance_after_cents >= 0), "no debit left a negative balance").toBe(true);
      expect((await usageRows(acc.accountId)).length).toBe(100);
    } finally {
      await handle.close();
    }
  });

  it("refuses with 402 insufficient_credits when available (balance - held) is short, even though the balance alone would cover it", async () => {
    const acc = await createTestAccount({ creditsCents: 10 });
    const billing = new Billing(await db());
    const first = await billing.hold(acc.accountId, acc.adminKeyId, 7);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 10, held_cents: 7 });

    const err = await thrown(billing.hold(acc.accountId, acc.adminKeyId, 5));
    expect(err).toBeInstanceOf(FolioError);
    const fe = err as FolioError;
    expect(fe.code).toBe("insufficient_credits");
    expect(httpStatusOf(fe.code)).toBe(402);
    expect(fe.message).toBe("insufficient credits: this request needs 5 cents of available balance");
    expect(errorBody(fe)).toEqual({
      error: { code: "insufficient_credits", message: "insufficient credits: this request needs 5 cents of available balance", required_cents: 5 },
    });
    // The refused hold changed nothing.
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 10, held_cents: 7 });

    // Exactly the available 3 cents can still be held; then nothing, not even 0 cents.
    const second = await billing.hold(acc.accountId, acc.adminKeyId, 3);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 10, held_cents: 10 });
    expect(((await thrown(billing.hold(acc.accountId, null, 1))) as FolioError).code).toBe("insufficient_credits");
    expect(((await thrown(billing.hold(acc.accountId, null, 0))) as FolioError).code).toBe("insufficient_credits");

    await billing.release(first);
    await billing.release(second);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 10, held_cents: 0 });
  });

  it("refuses a hold on an account with no credits at all, and on an unknown account", async () => {
    const acc = await createTestAccount({ creditsCents: 0 });
    const billing = new Billing(await db());
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 0, held_cents: 0 });
    const err = (await thrown(billing.hold(acc.accountId, null, 1))) as FolioError;
    expect(err.code).toBe("insufficient_credits");
    expect(err.extra).toEqual({ required_cents: 1 });
    expect(((await thrown(billing.hold("acc_doesnotexist", null, 1))) as FolioError).code).toBe("insufficient_credits");
    const holds = await (await db()).selectFrom("holds").select("id").where("account_id", "=", acc.accountId).execute();
    expect(holds).toEqual([]);
  });

  it("rejects negative or fractional hold amounts before touching the database", async () => {
    const acc = await createTestAccount();
    const billing = new Billing(await db());
    await expect(billing.hold(acc.accountId, null, -1)).rejects.toThrow(RangeError);
    await expect(billing.hold(acc.accountId, null, 1.5)).rejects.toThrow(RangeError);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 1000, held_cents: 0 });
  });
});

describe("a hold whose COMMIT was applied but its answer lost (a restart, a frozen database resuming)", () => {
  // Found by test/fault-suite.test.ts (Postgres restart and freeze): such a hold stayed open until the sweeper (its TTL, 15 min).
  it("is given back in the background once the database answers, not left until it expires", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const { db } = await testDb();
    const held = async () => (await db.selectFrom("accounts").select("held_cents").where("id", "=", acc.accountId).executeTakeFirstOrThrow()).held_cents;
    const lossy = answerLost(databaseUrl());
    try {
      lossy.loseNext(/^commit$/i);
      const err = await new Billing(lossy.db, { holdTtlMs: 900_000 }).hold(acc.accountId, null, 7).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "service_unavailable" });
      expect(await held(), "the hold was committed although its caller got a 503").toBe(7);
      await expect.poll(held, { timeout: 8000, interval: 200 }).toBe(0);
      const holds = await db.selectFrom("holds").select("status").where("account_id", "=", acc.accountId).execute();
      expect(holds.map((h) => h.status)).toEqual(["released"]);
    } finally {
      await lossy.close();
    }
  });
});

describe("settle", () => {
  it("writes exactly one usage log and one ledger debit in one transaction, with exact numeric provider and fee", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const billing = new Billing(await db());
    const hold = await billing.hold(acc.accountId, acc.adminKeyId, 20);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 1000, held_cents: 20 });

    const charge = chargeComponent("2.345678901234");
    // 2.345678901234 + 5% = 2.4629628462957 → rounded up to 3 cents.
    expect(charge.platformFeeCents.toFixed()).toBe("0.1172839450617");
    expect(charge.chargedCents).toBe(3);
    const s = settlement(charge, { model: "openai/gpt-x", promptTokens: 1500, completionTokens: 250, pagesProcessed: 2, processingTimeMs: 987.6 });
    const ledgerBefore = await ledgerRows(acc.accountId);
    expect(ledgerBefore.map((l) => l.kind)).toEqual(["credit"]);

    const res = await billing.settle(hold, s);
    expect(res).toEqual({ requestId: s.requestId, chargedCents: 3, balanceCents: 997 });
    // The hold is gone, only the charge left the balance.
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 997, held_cents: 0 });

    const usage = await usageRows(acc.accountId);
    expect(usage.length, JSON.stringify(usage)).toBe(1);
    const u = usage[0]!;
    expect(u).toMatchObject({
      id: s.requestId,
      account_id: acc.accountId,
      api_key_id: acc.adminKeyId,
      endpoint: "/v1/ocr",
      model: "openai/gpt-x",
      status: "success",
      error_code: null,
      prompt_tokens: 1500,
      completion_tokens: 250,
      tokens_used: 1750,
      pages_processed: 2,
      provider_cost_cents: "2.345678901234",
      platform_fee_cents: "0.1172839450617",
      cost_cents: "3",
      processing_time_ms: 988,
    });

    const ledger = (await ledgerRows(acc.accountId)).filter((l) => l.kind === "debit");
    expect(ledger.length, JSON.stringify(ledger)).toBe(1);
    const d = ledger[0]!;
    expect(d).toMatchObject({
      account_id: acc.accountId,
      kind: "debit",
      amount_cents: -3,
      provider_cost_cents: "2.345678901234",
      platform_fee_cents: "0.1172839450617",
      balance_after_cents: 997,
      request_id: s.requestId,
      description: "/v1/ocr openai/gpt-x",
    });
    expect(d.id).toMatch(/^led_[0-9A-Za-z]{20}$/);

    // now() is the transaction's start time: equal stamps on the hold's close,
    // the ledger row and the usage log show one transaction wrote them all.
    const h = await (await db()).selectFrom("holds").selectAll().where("id", "=", hold.id).executeTakeFirstOrThrow();
    expect(h.status).toBe("settled");
    expect(h.closed_at?.getTime()).toBe(d.created_at.getTime());
    expect(u.created_at.getTime()).toBe(d.created_at.getTime());
  });

  it("rolls the whole settlement back when the usage log cannot be written", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const billing = new Billing(await db());
    const requestId = newId("req");
    await billing.settle(await billing.hold(acc.accountId, null, 5), settlement(chargeComponent("1"), { requestId }));
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 98, held_cents: 0 });

    // An error code Postgres cannot store (a NUL): the usage row, written after the debit, is refused.
    const second = await billing.hold(acc.accountId, null, 5);
    await expect(billing.settle(second, settlement(chargeComponent("10"), { requestId, errorCode: "bad\u0000code" }))).rejects.toThrow(/0x00/);
    expect(await accountRow(acc.accountId), "balance and hold untouched by the failed settle").toEqual({ balance_cents: 98, held_cents: 5 });
    expect((await ledgerRows(acc.accountId)).filter((l) => l.kind === "debit").length).toBe(1);
    const h = await (await db()).selectFrom("holds").select("status").where("id", "=", second.id).executeTakeFirstOrThrow();
    expect(h.status).toBe("held");
  });

  it("refuses to settle a hold twice and charges only once", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const billing = new Billing(await db());
    const hold = await billing.hold(acc.accountId, null, 10);
    await billing.settle(hold, settlement(chargeComponent("4")));
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 95, held_cents: 0 });
    await expect(billing.settle(hold, settlement(chargeComponent("4")))).rejects.toThrow(/not open/);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 95, held_cents: 0 });
    expect((await usageRows(acc.accountId)).length).toBe(1);
    expect((await ledgerRows(acc.accountId)).filter((l) => l.kind === "debit").length).toBe(1);
  });

  it("charges more than the hold when the actual cost is higher (the response is the authority)", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const billing = new Billing(await db());
    const hold = await billing.hold(acc.accountId, null, 2);
    const r = await billing.settle(hold, settlement(chargeComponent("20")));
    expect(r.chargedCents).toBe(21);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 79, held_cents: 0 });
  });

  it("a zero charge with status error writes a usage log with cost 0 and no ledger row", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const billing = new Billing(await db());
    const hold = await billing.hold(acc.accountId, acc.adminKeyId, 10);
    const s = settlement(NO_CHARGE, { status: "error", errorCode: "upstream_error", promptTokens: 0, completionTokens: 0, pagesProcessed: 0, processingTimeMs: 42 });
    const r = await billing.settle(hold, s);
    expect(r).toEqual({ requestId: s.requestId, chargedCents: 0, balanceCents: 50 });
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 50, held_cents: 0 });
    const usage = await usageRows(acc.accountId);
    expect(usage.length).toBe(1);
    expect(usage[0]).toMatchObject({
      id: s.requestId,
      status: "error",
      error_code: "upstream_error",
      cost_cents: "0",
      provider_cost_cents: "0",
      platform_fee_cents: "0",
      tokens_used: 0,
      processing_time_ms: 42,
    });
    const ledger = await ledgerRows(acc.accountId);
    expect(ledger.map((l) => l.kind), JSON.stringify(ledger)).toEqual(["credit"]);
  });
});

describe("release and expiry", () => {
  it("release gives the hold back and writes no usage log and no ledger row; releasing again is a no-op", async () => {
    const acc = await createTestAccount({ creditsCents: 30 });
    const billing = new Billing(await db());
    const hold = await billing.hold(acc.accountId, null, 30);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 30, held_cents: 30 });
    await billing.release(hold);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 30, held_cents: 0 });
    await billing.release(hold);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 30, held_cents: 0 });
    expect(await usageRows(acc.accountId)).toEqual([]);
    expect((await ledgerRows(acc.accountId)).map((l) => l.kind)).toEqual(["credit"]);
    const h = await (await db()).selectFrom("holds").select(["status", "closed_at"]).where("id", "=", hold.id).executeTakeFirstOrThrow();
    expect(h.status).toBe("released");
    expect(h.closed_at).toBeInstanceOf(Date);
    // A released hold cannot be settled afterwards.
    await expect(billing.settle(hold, settlement(chargeComponent("1")))).rejects.toThrow(/not open/);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 30, held_cents: 0 });
  });

  it("releaseExpired releases holds whose expires_at has passed and leaves live holds alone", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const short = new Billing(await db(), { holdTtlMs: 1 });
    const long = new Billing(await db(), { holdTtlMs: 900_000 });
    const dead1 = await short.hold(acc.accountId, null, 10);
    const dead2 = await short.hold(acc.accountId, null, 15);
    const live = await long.hold(acc.accountId, null, 20);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 100, held_cents: 45 });
    await new Promise((r) => setTimeout(r, 20));

    const n = await long.releaseExpired();
    // Other suites' expired holds may be swept by the same call too: ours are two of them.
    expect(n, `released ${n}`).toBeGreaterThanOrEqual(2);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 100, held_cents: 20 });
    const rows = await (await db()).selectFrom("holds").select(["id", "status"]).where("account_id", "=", acc.accountId).execute();
    const status = Object.fromEntries(rows.map((r) => [r.id, r.status]));
    expect(status).toEqual({ [dead1.id]: "released", [dead2.id]: "released", [live.id]: "held" });

    // An expired hold cannot be settled; the live one still can.
    await expect(short.settle(dead1, settlement(chargeComponent("1")))).rejects.toThrow(/not open/);
    await long.settle(live, settlement(chargeComponent("1")));
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 98, held_cents: 0 });
    await long.releaseExpired();
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 98, held_cents: 0 });
  });

  it("releaseExpired counts the holds it released (expiry set in SQL)", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const billing = new Billing(await db());
    const a = await billing.hold(acc.accountId, null, 4);
    const b = await billing.hold(acc.accountId, null, 6);
    await (await db()).updateTable("holds").set({ expires_at: sql`now() - interval '1 minute'` }).where("id", "in", [a.id, b.id]).execute();
    const n = await billing.releaseExpired();
    expect(n, `released ${n}`).toBeGreaterThanOrEqual(2);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 100, held_cents: 0 });
    const rows = await (await db()).selectFrom("holds").select(["status"]).where("id", "in", [a.id, b.id]).execute();
    expect(rows.map((r) => r.status)).toEqual(["released", "released"]);
  });
});

describe("credits and the ledger", () => {
  it("credit() adds a ledger credit row with the balance after it", async () => {
    const acc = await createTestAccount({ creditsCents: 0 });
    const billing = new Billing(await db());
    expect(await ledgerRows(acc.accountId)).toEqual([]);
    expect(await billing.credit(acc.accountId, 250, "top-up 1")).toEqual({ balanceCents: 250 });
    expect(await billing.credit(acc.accountId, 1, "top-up 2")).toEqual({ balanceCents: 251 });
    const ledger = await ledgerRows(acc.accountId);
    expect(ledger.map((l) => ({ kind: l.kind, amount: l.amount_cents, after: l.balance_after_cents, desc: l.description, p: l.provider_cost_cents, f: l.platform_fee_cents, r: l.request_id }))).toEqual([
      { kind: "credit", amount: 250, after: 250, desc: "top-up 1", p: null, f: null, r: null },
      { kind: "credit", amount: 1, after: 251, desc: "top-up 2", p: null, f: null, r: null },
    ]);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 251, held_cents: 0 });
  });

  it("credit() refuses non-positive or fractional amounts and unknown accounts", async () => {
    const acc = await createTestAccount({ creditsCents: 0 });
    const billing = new Billing(await db());
    for (const cents of [0, -5, 1.5]) {
      const err = (await thrown(billing.credit(acc.accountId, cents, "bad"))) as FolioError;
      expect(err.code, `cents=${cents}`).toBe("invalid_request");
      expect(err.param).toBe("cents");
    }
    expect(((await thrown(billing.credit("acc_nope", 10, "x"))) as FolioError).code).toBe("not_found");
    expect(await ledgerRows(acc.accountId)).toEqual([]);
    expect(await accountRow(acc.accountId)).toEqual({ balance_cents: 0, held_cents: 0 });
  });

  it("the database refuses UPDATE and DELETE on ledger_entries (append-only)", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const d = await db();
    const [row] = await ledgerRows(acc.accountId);
    expect(row, "the initial credit row").toBeDefined();
    await expect(d.updateTable("ledger_entries").set({ description: "rewritten" }).where("id", "=", row!.id).execute()).rejects.toThrow(/append-only/);
    await expect(d.updateTable("ledger_entries").set({ amount_cents: 1_000_000 }).where("account_id", "=", acc.accountId).execute()).rejects.toThrow(/append-only/);
    await expect(d.deleteFrom("ledger_entries").where("id", "=", row!.id).execute()).rejects.toThrow(/append-only/);
    await expect(sql`delete from ledger_entries where account_id = ${acc.accountId}`.execute(d)).rejects.toThrow(/append-only/);
    const after = await ledgerRows(acc.accountId);
    expect(after).toEqual([row]);
  });
});
