/**
 * The billing core used by every paid endpoint: hold before work, settle
 * after it (charge, ledger row and usage log in one transaction), or release.
 *
 * A hold is taken with one conditional UPDATE on the account row, so two
 * concurrent requests can never spend the same cents: Postgres serialises
 * them on the row lock and the second sees the first's hold.
 */
import { sql, type Transaction } from "kysely";
import type { DB, Database } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { newId } from "../platform/ids/index.ts";
import { giveBack } from "./give-back.ts";
import type { IdempotencyClaim, IdempotencyStore } from "./idempotency.ts";
import type { ComponentCharge } from "./pricing.ts";

export interface Hold {
  id: string;
  accountId: string;
  apiKeyId: string | null;
  amountCents: number;
}

/** What happened, to be charged and written to the usage log. */
export interface Settlement {
  requestId: string;
  endpoint: string;
  model: string;
  status: "success" | "error";
  errorCode?: string | null;
  promptTokens?: number;
  completionTokens?: number;
  pagesProcessed?: number;
  processingTimeMs: number;
  /** The request's total charge (sum of its components). Zero when nothing was billed. */
  charge: ComponentCharge;
  description?: string;
  /** The final answer to keep for the request's Idempotency-Key, stored in the same transaction. */
  answer?: { store: IdempotencyStore; claim: IdempotencyClaim; status: number; body: string };
}

export interface SettleResult {
  requestId: string;
  chargedCents: number;
  balanceCents: number;
}

export interface BillingEvents {
  hold?(outcome: "taken" | "insufficient"): void;
  settled?(status: "success" | "error", endpoint: string, chargedCents: number): void;
}

export class Billing {
  constructor(
    private readonly db: DB,
    private readonly opts: { holdTtlMs: number; events?: BillingEvents } = { holdTtlMs: 900_000 },
  ) {}

  /**
   * Reserves `amountCents` of the account's available balance; 402 when it
   * is not there. `ttlMs` (default: the configured hold lifetime) is how long
   * the hold outlives an owner that never settles it: a durable job's hold
   * lasts as long as the job may run.
   */
  async hold(accountId: string, apiKeyId: string | null, amountCents: number, ttlMs = this.opts.holdTtlMs): Promise<Hold> {
    if (!Number.isInteger(amountCents) || amountCents < 0) throw new RangeError("hold amount must be a non-negative integer");
    const id = newId("hold");
    const taken = await this.#hold(id, accountId, apiKeyId, amountCents, ttlMs).catch((err: unknown) => {
      // The hold may have been committed with its answer lost (a connection cut after the COMMIT, a
      // frozen database running it once it resumes): nobody would settle it before it expires.
      // Released as soon as the database answers; a hold that was never taken is not there to release.
      if (err instanceof FolioError && err.code === "service_unavailable") giveBack(() => this.release({ id, accountId, apiKeyId, amountCents }));
      throw err;
    });
    this.opts.events?.hold?.(taken ? "taken" : "insufficient");
    if (!taken) {
      throw new FolioError("insufficient_credits", `insufficient credits: this request needs ${amountCents} cents of available balance`, {
        extra: { required_cents: amountCents },
      });
    }
    return { id, accountId, apiKeyId, amountCents };
  }

  #hold(id: string, accountId: string, apiKeyId: string | null, amountCents: number, ttlMs: number): Promise<boolean> {
    return this.db.transaction().execute((trx) => takeHold(trx, { id, accountId, apiKeyId, amountCents, ttlMs }));
  }

  /**
   * Grows an open hold to `newAmountCents` once more of the work is known
   * (the pages of a converted document): the same conditional UPDATE as
   * {@link hold}, so the extra cents are there or the request stops with 402.
   * A smaller amount than held is a no-op.
   */
  async raise(hold: Hold, newAmountCents: number): Promise<void> {
    if (!Number.isInteger(newAmountCents) || newAmountCents < 0) throw new RangeError("hold amount must be a non-negative integer");
    const extra = newAmountCents - hold.amountCents;
    if (extra <= 0) return;
    const raised = await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable("accounts")
        .set({ held_cents: sql`held_cents + ${extra}` })
        .where("id", "=", hold.accountId)
        .where(sql<boolean>`balance_cents - held_cents >= ${extra}`)
        .returning(["id"])
        .executeTakeFirst();
      if (!row) return false;
      const open = await trx.updateTable("holds").set({ amount_cents: newAmountCents }).where("id", "=", hold.id).where("status", "=", "held").returning(["id"]).executeTakeFirst();
      if (!open) throw new Error(`hold ${hold.id} is not open (already settled, released or expired)`);
      return true;
    });
    this.opts.events?.hold?.(raised ? "taken" : "insufficient");
    if (!raised) {
      throw new FolioError("insufficient_credits", `insufficient credits: this request needs ${newAmountCents} cents of available balance`, {
        extra: { required_cents: newAmountCents },
      });
    }
    hold.amountCents = newAmountCents;
  }

  /**
   * Closes the hold, charges `settlement.charge.chargedCents` (which may exceed
   * the hold: the response is the authority on cost), appends the ledger debit
   * and writes the usage log, all in one transaction.
   */
  async settle(hold: Hold, s: Settlement): Promise<SettleResult> {
    const charged = s.charge.chargedCents;
    const result = await this.db.transaction().execute(async (trx) => {
      const closed = await closeHold(trx, hold.id, "settled");
      if (!closed) throw new Error(`hold ${hold.id} is not open (already settled, released or expired)`);
      const account = await trx
        .updateTable("accounts")
        .set({
          held_cents: sql`held_cents - ${closed.amount_cents}`,
          balance_cents: sql`balance_cents - ${charged}`,
        })
        .where("id", "=", hold.accountId)
        .returning(["balance_cents"])
        .executeTakeFirstOrThrow();
      if (charged > 0) {
        await trx
          .insertInto("ledger_entries")
          .values({
            id: newId("led"),
            account_id: hold.accountId,
            kind: "debit",
            amount_cents: -charged,
            provider_cost_cents: s.charge.providerCostCents.toFixed(),
            platform_fee_cents: s.charge.platformFeeCents.toFixed(),
            balance_after_cents: account.balance_cents,
            request_id: s.requestId,
            description: s.description ?? `${s.endpoint} ${s.model}`,
          })
          .execute();
      }
      const prompt = s.promptTokens ?? 0;
      const completion = s.completionTokens ?? 0;
      await trx
        .insertInto("usage_logs")
        .values({
          id: s.requestId,
          account_id: hold.accountId,
          api_key_id: hold.apiKeyId,
          endpoint: s.endpoint,
          model: s.model,
          status: s.status,
          error_code: s.errorCode ?? null,
          prompt_tokens: prompt,
          completion_tokens: completion,
          tokens_used: prompt + completion,
          pages_processed: s.pagesProcessed ?? 0,
          provider_cost_cents: s.charge.providerCostCents.toFixed(),
          platform_fee_cents: s.charge.platformFeeCents.toFixed(),
          cost_cents: String(charged),
          processing_time_ms: Math.max(0, Math.round(s.processingTimeMs)),
        })
        .execute();
      // The answer a retry with the same Idempotency-Key gets, committed with the charge.
      if (s.answer) await s.answer.store.complete(s.answer.claim, { status: s.answer.status, body: s.answer.body, requestId: s.requestId }, trx);
      return { requestId: s.requestId, chargedCents: charged, balanceCents: account.balance_cents };
    });
    if (s.answer) {
      s.answer.claim.finished = true;
      s.answer.claim.answer = { status: s.answer.status, body: s.answer.body, requestId: s.requestId };
    }
    this.opts.events?.settled?.(s.status, s.endpoint, charged);
    return result;
  }

  /** Gives a hold back without charging or logging (the request never started). */
  async release(hold: Hold): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const closed = await closeHold(trx, hold.id, "released");
      if (!closed) return;
      await trx
        .updateTable("accounts")
        .set({ held_cents: sql`held_cents - ${closed.amount_cents}` })
        .where("id", "=", hold.accountId)
        .execute();
    });
  }

  /** Releases holds whose owner died before settling them. Returns how many. */
  async releaseExpired(): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const expired = await trx
        .updateTable("holds")
        .set({ status: "released", closed_at: sql`now()` })
        .where("status", "=", "held")
        .where("expires_at", "<", sql<Date>`now()`)
        .returning(["account_id", "amount_cents"])
        .execute();
      for (const h of expired) {
        await trx
          .updateTable("accounts")
          .set({ held_cents: sql`held_cents - ${h.amount_cents}` })
          .where("id", "=", h.account_id)
          .execute();
      }
      return expired.length;
    });
  }

  /** Adds credits (there is no payment processor: operators add them, docs/billing.md). */
  async credit(accountId: string, cents: number, description: string): Promise<{ balanceCents: number }> {
    if (!Number.isInteger(cents) || cents <= 0) throw new FolioError("invalid_request", "credits must be a positive whole number of cents", { param: "cents" });
    return this.db.transaction().execute(async (trx) => {
      const account = await trx
        .updateTable("accounts")
        .set({ balance_cents: sql`balance_cents + ${cents}` })
        .where("id", "=", accountId)
        .returning(["balance_cents"])
        .executeTakeFirst();
      if (!account) throw new FolioError("not_found", `account '${accountId}' was not found`);
      await trx
        .insertInto("ledger_entries")
        .values({
          id: newId("led"),
          account_id: accountId,
          kind: "credit",
          amount_cents: cents,
          provider_cost_cents: null,
          platform_fee_cents: null,
          balance_after_cents: account.balance_cents,
          request_id: null,
          description,
        })
        .execute();
      return { balanceCents: account.balance_cents };
    });
  }
}

/** Closes an open hold; undefined when it is not open (settled, released or expired already). */
function closeHold(trx: DB, holdId: string, status: "settled" | "released"): Promise<{ amount_cents: number } | undefined> {
  return trx
    .updateTable("holds")
    .set({ status, closed_at: sql`now()` })
    .where("id", "=", holdId)
    .where("status", "=", "held")
    .returning(["amount_cents"])
    .executeTakeFirst();
}

/**
 * Reserves `amountCents` of the account's available balance in `trx` and
 * records the hold; false (nothing written) when the balance is not there.
 * A durable job takes its hold in the transaction that writes the job.
 */
export async function takeHold(trx: Transaction<Database>, h: { id: string; accountId: string; apiKeyId: string | null; amountCents: number; ttlMs: number }): Promise<boolean> {
  const row = await trx
    .updateTable("accounts")
    .set({ held_cents: sql`held_cents + ${h.amountCents}` })
    .where("id", "=", h.accountId)
    .where(sql<boolean>`balance_cents - held_cents >= ${h.amountCents}`)
    .where(sql<boolean>`balance_cents - held_cents > 0`)
    .returning(["id"])
    .executeTakeFirst();
  if (!row) return false;
  await trx
    .insertInto("holds")
    .values({ id: h.id, account_id: h.accountId, api_key_id: h.apiKeyId, amount_cents: h.amountCents, status: "held", expires_at: new Date(Date.now() + h.ttlMs) })
    .execute();
  return true;
}
