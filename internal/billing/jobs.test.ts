/**
 * A durable job's money on the real Postgres: charged as its pages are
 * stored, by the pricing rule on the running total (never rounded up per
 * range), out of its hold first; the conversion once; one usage entry and
 * the hold's remainder given back at the end.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { createTestAccount, insertRunningJob, testDb } from "../../test/harness.ts";
import { chargeJobConversion, chargeJobPages, closeJobBilling } from "./jobs.ts";
import { Billing } from "./ledger.ts";
import { Decimal, chargeComponent } from "./pricing.ts";

async function jobOf(accountId: string, holdId: string | null): Promise<string> {
  return insertRunningJob((await testDb()).db, accountId, { pageCount: 12, holdId });
}

/** What the ledger debited for the job so far, in cents (positive). */
async function debitedFor(jobId: string): Promise<number> {
  const { db } = await testDb();
  const r = await db.selectFrom("ledger_entries").select(sql<string>`coalesce(-sum(amount_cents), 0)`.as("n")).where("request_id", "=", jobId).executeTakeFirstOrThrow();
  return Number(r.n);
}

async function accountOf(accountId: string) {
  const { db } = await testDb();
  return db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", accountId).executeTakeFirstOrThrow();
}

describe("a durable job's charges", () => {
  it("charges the pricing rule on the pages read so far after every range, out of the hold, and ends with one usage entry", async () => {
    const { db } = await testDb();
    const acc = await createTestAccount({ creditsCents: 100 });
    const billing = new Billing(db);
    const hold = await billing.hold(acc.accountId, null, 10, 86_400_000);
    const jobId = await jobOf(acc.accountId, hold.id);
    // local/tesseract: 0.1 cent a page before the fee; four pages a range.
    const range = (first: number) => ({ providerCostCents: new Decimal("0.4"), promptTokens: 0, completionTokens: 0, pages: `${first}-${first + 3}` });
    const seen: { debited: number; charged: number }[] = [];
    for (let r = 0; r < 3; r++) {
      const c = await db.transaction().execute((trx) => chargeJobPages(trx, jobId, range(1 + 4 * r)));
      seen.push({ debited: c.debitedCents, charged: c.chargedCents });
      // At every moment: the ledger holds the rule applied to the pages read so far.
      expect(await debitedFor(jobId)).toBe(chargeComponent(new Decimal("0.4").mul(r + 1)).chargedCents);
    }
    // 0.42 → 1 cent, 0.84 → 1 (nothing more), 1.26 → 2: not 3, as one cent per range would be.
    expect(seen).toEqual([
      { debited: 1, charged: 1 },
      { debited: 0, charged: 1 },
      { debited: 1, charged: 2 },
    ]);
    expect(await accountOf(acc.accountId)).toEqual({ balance_cents: 98, held_cents: 8 });

    await db.updateTable("ocr_jobs").set({ pages_completed: 12 }).where("id", "=", jobId).execute();
    const charge = await db.transaction().execute((trx) => closeJobBilling(trx, jobId, { endpoint: "/v1/ocr/jobs", status: "success", errorCode: null, processingTimeMs: 4_321 }));
    expect(charge.chargedCents).toBe(2);
    expect(await accountOf(acc.accountId), "the hold's remainder is given back").toEqual({ balance_cents: 98, held_cents: 0 });
    const usage = await db.selectFrom("usage_logs").selectAll().where("id", "=", jobId).execute();
    expect(usage.map((u) => ({ status: u.status, pages: u.pages_processed, cost: Number(u.cost_cents), provider: u.provider_cost_cents, ms: u.processing_time_ms }))).toEqual([
      { status: "success", pages: 12, cost: 2, provider: "1.2", ms: 4_321 },
    ]);
    const holdRow = await db.selectFrom("holds").select(["status", "amount_cents"]).where("id", "=", hold.id).executeTakeFirstOrThrow();
    expect(holdRow).toEqual({ status: "settled", amount_cents: 8 });
  });

  it("charges past the hold when the pages cost more than it (the hold only reserves)", async () => {
    const { db } = await testDb();
    const acc = await createTestAccount({ creditsCents: 50 });
    const hold = await new Billing(db).hold(acc.accountId, null, 2, 86_400_000);
    const jobId = await jobOf(acc.accountId, hold.id);
    const c = await db.transaction().execute((trx) => chargeJobPages(trx, jobId, { providerCostCents: new Decimal("4.5"), promptTokens: 10, completionTokens: 5, pages: "1-3" }));
    expect(c).toEqual({ debitedCents: 5, chargedCents: 5 });
    expect(await accountOf(acc.accountId)).toEqual({ balance_cents: 45, held_cents: 0 });
  });

  it("charges an office document's conversion once, as its own component with its own minimum", async () => {
    const { db } = await testDb();
    const acc = await createTestAccount({ creditsCents: 50 });
    const jobId = await jobOf(acc.accountId, null);
    const work = { providerCostCents: new Decimal("0.01"), computeMillis: 2_000 };
    expect(await db.transaction().execute((trx) => chargeJobConversion(trx, jobId, work))).toEqual({ debitedCents: 1, chargedCents: 1 });
    expect(await db.transaction().execute((trx) => chargeJobConversion(trx, jobId, work)), "a second report charges nothing").toEqual({ debitedCents: 0, chargedCents: 1 });
    const pages = await db.transaction().execute((trx) => chargeJobPages(trx, jobId, { providerCostCents: new Decimal("0.1"), promptTokens: 0, completionTokens: 0, pages: "1" }));
    expect(pages, "the model's pages have their own 1-cent minimum").toEqual({ debitedCents: 1, chargedCents: 2 });
    expect(await debitedFor(jobId)).toBe(2);
  });

  it("rolls a range's charge back with the transaction that failed to store its pages", async () => {
    const { db } = await testDb();
    const acc = await createTestAccount({ creditsCents: 50 });
    const jobId = await jobOf(acc.accountId, null);
    await expect(
      db.transaction().execute(async (trx) => {
        await chargeJobPages(trx, jobId, { providerCostCents: new Decimal("3"), promptTokens: 0, completionTokens: 0, pages: "1-4" });
        throw new Error("the pages could not be stored");
      }),
    ).rejects.toThrow(/could not be stored/);
    expect(await debitedFor(jobId)).toBe(0);
    expect(await accountOf(acc.accountId)).toEqual({ balance_cents: 50, held_cents: 0 });
  });
});
