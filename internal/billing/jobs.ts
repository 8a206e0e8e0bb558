/**
 * The money of a durable OCR job (docs/adr/0005-durable-jobs-queue.md): an
 * ordinary hold for the whole job when it is accepted (`Billing.hold`),
 * then charges that accrue in the transactions that store the pages, and
 * one usage entry when the job ends.
 *
 * The job has the components a synchronous read has, each charged by the
 * one pricing rule (`pricing.ts`): the model's pages, and the conversion
 * of an office document. The model component is charged as it grows: after
 * each range, the account has been debited exactly `chargeComponent(cost of
 * the pages read so far)`, the rule applied to the running total, by
 * debiting the difference from what was charged before. So at every moment
 * the ledger holds what a synchronous request for those same pages would
 * have been charged, never a cent rounded up per range. Debits come out of
 * the hold first (the hold shrinks by what is charged); what the hold does
 * not cover is still charged (the response is the authority on cost, as
 * for every request).
 */
import { sql, type Transaction } from "kysely";
import type { Database } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import { Decimal, chargeComponent, platformFee, type ComponentCharge } from "./pricing.ts";

type Trx = Transaction<Database>;

/** What one range (or a conversion) adds to a job's bill. */
export interface JobCharge {
  /** Whole cents debited by this call (0 when the rounded total did not move). */
  debitedCents: number;
  /** Whole cents charged to the job so far, every component. */
  chargedCents: number;
}

/**
 * Debits `cents` for `jobId` in `trx`: out of the job's hold first, then
 * the balance, with its ledger row (request id: the job id).
 */
async function debit(trx: Trx, job: { id: string; accountId: string; holdId: string | null }, cents: number, cost: { provider: Decimal; fee: Decimal }, description: string): Promise<void> {
  if (cents <= 0) return;
  let fromHold = 0;
  if (job.holdId) {
    const hold = await trx.selectFrom("holds").select("amount_cents").where("id", "=", job.holdId).where("status", "=", "held").forUpdate().executeTakeFirst();
    if (hold) {
      fromHold = Math.min(cents, hold.amount_cents);
      await trx.updateTable("holds").set({ amount_cents: hold.amount_cents - fromHold }).where("id", "=", job.holdId).execute();
    }
  }
  const account = await trx
    .updateTable("accounts")
    .set({ balance_cents: sql`balance_cents - ${cents}`, held_cents: sql`held_cents - ${fromHold}` })
    .where("id", "=", job.accountId)
    .returning(["balance_cents"])
    .executeTakeFirstOrThrow();
  await trx
    .insertInto("ledger_entries")
    .values({
      id: newId("led"),
      account_id: job.accountId,
      kind: "debit",
      amount_cents: -cents,
      provider_cost_cents: cost.provider.toFixed(),
      platform_fee_cents: cost.fee.toFixed(),
      balance_after_cents: account.balance_cents,
      request_id: job.id,
      description,
    })
    .execute();
}

/** The job's row, locked until `trx` ends: every charge of one job is serialised on it. */
async function lockedJob(trx: Trx, jobId: string) {
  return trx
    .selectFrom("ocr_jobs")
    .select(["id", "account_id", "hold_id", "provider_cost_cents", "model_charged_cents", "conversion_cost_cents", "conversion_charged_cents"])
    .where("id", "=", jobId)
    .forUpdate()
    .executeTakeFirstOrThrow();
}

/**
 * Adds pages read by the model to the job's bill, in the transaction that
 * stores them: their exact provider cost and tokens join the job's totals,
 * and the account is debited what the pricing rule on the new total asks
 * beyond what was charged already.
 */
export async function chargeJobPages(
  trx: Trx,
  jobId: string,
  added: { providerCostCents: Decimal; promptTokens: number; completionTokens: number; pages: string },
): Promise<JobCharge> {
  const job = await lockedJob(trx, jobId);
  const total = new Decimal(job.provider_cost_cents).add(added.providerCostCents);
  const target = total.isZero() ? 0 : chargeComponent(total).chargedCents;
  const delta = target - job.model_charged_cents;
  await debit(trx, { id: job.id, accountId: job.account_id, holdId: job.hold_id }, delta, { provider: added.providerCostCents, fee: platformFee(added.providerCostCents) }, `ocr job ${job.id} pages ${added.pages}`);
  await trx
    .updateTable("ocr_jobs")
    .set({
      provider_cost_cents: total.toFixed(),
      model_charged_cents: target,
      prompt_tokens: sql`prompt_tokens + ${added.promptTokens}`,
      completion_tokens: sql`completion_tokens + ${added.completionTokens}`,
    })
    .where("id", "=", jobId)
    .execute();
  return { debitedCents: Math.max(0, delta), chargedCents: target + job.conversion_charged_cents };
}

/** Charges the conversion of a job's office document (once: a second call for the same job charges nothing). */
export async function chargeJobConversion(trx: Trx, jobId: string, work: { providerCostCents: Decimal; computeMillis: number }): Promise<JobCharge> {
  const job = await lockedJob(trx, jobId);
  if (job.conversion_cost_cents !== null) return { debitedCents: 0, chargedCents: job.model_charged_cents + job.conversion_charged_cents };
  const charge = chargeComponent(work.providerCostCents);
  await debit(trx, { id: job.id, accountId: job.account_id, holdId: job.hold_id }, charge.chargedCents, { provider: charge.providerCostCents, fee: charge.platformFeeCents }, `ocr job ${job.id} conversion`);
  await trx
    .updateTable("ocr_jobs")
    .set({ conversion_cost_cents: work.providerCostCents.toFixed(), conversion_charged_cents: charge.chargedCents, conversion_ms: Math.round(work.computeMillis) })
    .where("id", "=", jobId)
    .execute();
  return { debitedCents: charge.chargedCents, chargedCents: job.model_charged_cents + charge.chargedCents };
}

/** A job's charges so far, as `/v1/ocr`'s usage states them (exact provider cost and fee, whole cents charged). */
export function jobCharge(row: { provider_cost_cents: string; model_charged_cents: number; conversion_cost_cents: string | null; conversion_charged_cents: number }): ComponentCharge {
  const provider = new Decimal(row.provider_cost_cents).add(row.conversion_cost_cents ?? 0);
  return { providerCostCents: provider, platformFeeCents: platformFee(provider), chargedCents: row.model_charged_cents + row.conversion_charged_cents };
}

/**
 * Sets what a job's hold keeps back to `cents` beyond what was charged
 * already, once the work is known (an office document's pages, counted
 * when it is converted): raised only when the account's available balance
 * covers the difference (false, nothing changed, when it does not),
 * lowered always. A job without an open hold has nothing to resize (true).
 */
export async function resizeJobHold(trx: Trx, jobId: string, cents: number): Promise<boolean> {
  const job = await lockedJob(trx, jobId);
  if (!job.hold_id) return true;
  const hold = await trx.selectFrom("holds").select("amount_cents").where("id", "=", job.hold_id).where("status", "=", "held").forUpdate().executeTakeFirst();
  if (!hold) return true;
  const target = Math.max(0, cents - job.model_charged_cents - job.conversion_charged_cents);
  const extra = target - hold.amount_cents;
  if (extra === 0) return true;
  const account = await trx
    .updateTable("accounts")
    .set({ held_cents: sql`held_cents + ${extra}` })
    .where("id", "=", job.account_id)
    .where(sql<boolean>`${extra} <= 0 or balance_cents - held_cents >= ${extra}`)
    .returning(["id"])
    .executeTakeFirst();
  if (!account) return false;
  await trx.updateTable("holds").set({ amount_cents: target }).where("id", "=", job.hold_id).execute();
  return true;
}

/**
 * Ends a job's billing in the transaction that ends the job: what is left
 * of its hold is given back, and one usage entry (id: the job id) records
 * the whole job with what it was charged. Nothing more is debited here:
 * every cent was charged with the pages it pays for.
 */
export async function closeJobBilling(
  trx: Trx,
  jobId: string,
  usage: { endpoint: string; status: "success" | "error"; errorCode: string | null; processingTimeMs: number },
): Promise<ComponentCharge> {
  const job = await trx.selectFrom("ocr_jobs").selectAll().where("id", "=", jobId).forUpdate().executeTakeFirstOrThrow();
  if (job.hold_id) {
    const hold = await trx
      .updateTable("holds")
      .set({ status: "settled", closed_at: sql`now()` })
      .where("id", "=", job.hold_id)
      .where("status", "=", "held")
      .returning(["amount_cents"])
      .executeTakeFirst();
    if (hold) await trx.updateTable("accounts").set({ held_cents: sql`held_cents - ${hold.amount_cents}` }).where("id", "=", job.account_id).execute();
  }
  const charge = jobCharge(job);
  const prompt = Number(job.prompt_tokens);
  const completion = Number(job.completion_tokens);
  await trx
    .insertInto("usage_logs")
    .values({
      id: job.id,
      account_id: job.account_id,
      api_key_id: job.api_key_id,
      endpoint: usage.endpoint,
      model: job.model,
      status: usage.status,
      error_code: usage.errorCode,
      prompt_tokens: prompt,
      completion_tokens: completion,
      tokens_used: prompt + completion,
      pages_processed: job.pages_completed,
      provider_cost_cents: charge.providerCostCents.toFixed(),
      platform_fee_cents: charge.platformFeeCents.toFixed(),
      cost_cents: String(charge.chargedCents),
      processing_time_ms: Math.max(0, Math.round(usage.processingTimeMs)),
    })
    .execute();
  return charge;
}
