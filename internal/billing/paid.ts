/**
 * One paid request, start to finish: hold an estimate, run the work while a
 * meter records what providers billed, then settle (charge, ledger, usage log)
 * whether the work succeeded or failed. Every paid endpoint goes through here,
 * so the billing rules hold everywhere the same way.
 */
import { FolioError, toHttpError } from "../platform/errors/index.ts";
import { newId } from "../platform/ids/index.ts";
import { inSpan } from "../platform/telemetry/index.ts";
import { parserCostCents } from "./estimates.ts";
import { giveBack } from "./give-back.ts";
import { keepsFailure, type IdempotencyClaim, type IdempotencyStore } from "./idempotency.ts";
import type { Billing, Hold } from "./ledger.ts";
import { Decimal, chargeComponent, sumCharges, type ComponentCharge } from "./pricing.ts";

/** Who pays: an authenticated key's account (the edge's Principal is one). */
export interface Payer {
  accountId: string;
  keyId: string | null;
}

/** One sandboxed conversion as the conversion service measured and priced it. */
export interface ConversionWork {
  computeMillis: number;
  /** Exact provider cost of the compute time, cents, as the service priced it. */
  providerCostCents: Decimal;
}

/** What the work reports as it goes; cost figures are exact provider cents. */
export class Meter {
  model: string;
  promptTokens = 0;
  completionTokens = 0;
  pages = 0;
  private modelCost = new Decimal(0);
  private modelCalls = 0;
  private conversionsDone: ConversionWork[] = [];
  private parserCost = new Decimal(0);

  constructor(model: string) {
    this.model = model;
  }

  /** One provider call of the model (a page or a chat), with its exact cost. */
  modelCall(providerCostCents: Decimal, tokens: { prompt: number; completion: number } = { prompt: 0, completion: 0 }): void {
    this.modelCost = this.modelCost.add(providerCostCents);
    this.modelCalls++;
    this.promptTokens += tokens.prompt;
    this.completionTokens += tokens.completion;
  }

  /** One sandboxed conversion, priced by the service that measured its compute time. */
  conversion(work: ConversionWork): void {
    this.conversionsDone.push(work);
  }

  /** Pages read by the provider's dedicated PDF parser. */
  parserPages(pages: number): void {
    this.parserCost = this.parserCost.add(parserCostCents(pages));
  }

  /** Compute time of each conversion, in order (shown beside its charge). */
  conversionMillis(): number[] {
    return this.conversionsDone.map((c) => c.computeMillis);
  }

  /** The components billed so far: the model calls as one, each conversion, the parser. */
  components(): MeteredComponents {
    return {
      model: this.modelCalls > 0 ? chargeComponent(this.modelCost) : null,
      conversion: this.conversionsDone.map((c) => chargeComponent(c.providerCostCents)),
      parser: this.parserCost.gt(0) ? chargeComponent(this.parserCost) : null,
    };
  }

  total(): ComponentCharge {
    const c = this.components();
    return sumCharges([...(c.model ? [c.model] : []), ...c.conversion, ...(c.parser ? [c.parser] : [])]);
  }
}

export interface MeteredComponents {
  model: ComponentCharge | null;
  conversion: ComponentCharge[];
  parser: ComponentCharge | null;
}

export interface PaidRequest {
  requestId: string;
  startedAt: number;
  meter: Meter;
  /** Grows the hold to `cents` once more of the work is known; 402 when the balance does not cover it. */
  raiseHold(cents: number): Promise<void>;
}

/**
 * What a paid request under an Idempotency-Key keeps: its answer, built from
 * the outcome before settlement and stored with the charge.
 */
export interface PaidIdempotency {
  store: IdempotencyStore;
  claim: IdempotencyClaim;
  /** The answer's JSON text as the client gets it (the route's serializer). */
  serialize(body: unknown): string;
}

export interface PaidOutcome<T> {
  result: T;
  requestId: string;
  charge: ComponentCharge;
  components: MeteredComponents;
  /** Compute time of each conversion, in the order of `components.conversion`. */
  conversionMillis: number[];
  processingTimeMs: number;
}

export interface PaidOptions<T, A> {
  endpoint: string;
  model: string;
  estimateCents: number;
  /**
   * The success answer from the outcome, built once: it is what the route
   * sends and, under an Idempotency-Key, what is stored with the charge.
   */
  answer: (outcome: PaidOutcome<T>) => A;
  idempotency?: PaidIdempotency;
  /**
   * A failure's answer as its client gets it, from the error's HTTP form and
   * the charge (default: the error's JSON with its status); stored for the
   * Idempotency-Key when the failure is kept. A streamed answer that already
   * began (status 200 sent) keeps what its client got, its error event last.
   */
  failureAnswer?: (failure: { status: number; body: unknown; charge: ComponentCharge }) => { status: number; body: string };
  /**
   * A failed request is charged at most what is held for it (a streamed
   * answer whose client went away pays for the work done, never more than it
   * agreed to when the hold was taken).
   */
  capFailureAtHold?: boolean;
}

/**
 * Holds `estimateCents`, runs `work`, settles. On failure the error is
 * rethrown after the usage log records it and the account is charged only
 * what providers billed before the failure.
 */
export async function runPaid<T, A>(billing: Billing, payer: Payer, o: PaidOptions<T, A>, work: (req: PaidRequest) => Promise<T>): Promise<PaidOutcome<T> & { answer: A }> {
  const requestId = newId("req");
  return inSpan("folio.paid_request", { "folio.endpoint": o.endpoint, "folio.account_id": payer.accountId, "folio.request_id": requestId }, async (span) => {
    const outcome = await paid(billing, payer, o, requestId, work);
    span.setAttributes({
      "folio.model": outcome.model,
      "folio.pages": outcome.pages,
      "folio.cost_cents": outcome.charge.chargedCents,
      "folio.provider_cost_cents": outcome.charge.providerCostCents.toNumber(),
    });
    return outcome;
  });
}

/** Billing steps show as their own spans, with their SQL under them. */
const step = <R>(name: string, attributes: Record<string, string | number>, fn: () => Promise<R>): Promise<R> => inSpan(name, attributes, fn);

async function paid<T, A>(
  billing: Billing,
  payer: Payer,
  o: PaidOptions<T, A>,
  requestId: string,
  work: (req: PaidRequest) => Promise<T>,
): Promise<PaidOutcome<T> & { answer: A; model: string; pages: number }> {
  const holdCents = Math.max(1, o.estimateCents);
  const hold: Hold = await step("billing.hold", { "folio.hold_cents": holdCents }, () => billing.hold(payer.accountId, payer.keyId, holdCents));
  const startedAt = Date.now();
  const meter = new Meter(o.model);
  /**
   * Charges what the meter recorded, with the ledger row and usage log (and the
   * answer kept for the Idempotency-Key, when there is one), in one transaction.
   */
  const settle = async (status: "success" | "error", charge: ComponentCharge, processingTimeMs: number, errorCode?: string, answer?: { status: number; body: string }) => {
    const idem = o.idempotency;
    try {
      await settleOnce(status, charge, processingTimeMs, errorCode, answer);
    } catch (err) {
      // The database went away before the work could be charged: the work is not charged (the
      // client gets a 503 and retries). Its hold and key are given back as soon as the database
      // answers again, not when the hold expires (docs/billing.md "When the database is down").
      if (err instanceof FolioError && err.code === "service_unavailable") {
        giveBack(() => billing.release(hold));
        if (idem) giveBack(() => idem.store.release(idem.claim));
      }
      throw err;
    }
  };
  const settleOnce = async (status: "success" | "error", charge: ComponentCharge, processingTimeMs: number, errorCode?: string, answer?: { status: number; body: string }) => {
    const idem = o.idempotency;
    await step("billing.settle", { "folio.cost_cents": charge.chargedCents, "folio.status": status }, () =>
      billing.settle(hold, {
        requestId,
        endpoint: o.endpoint,
        model: meter.model,
        status,
        ...(errorCode ? { errorCode } : {}),
        promptTokens: meter.promptTokens,
        completionTokens: meter.completionTokens,
        pagesProcessed: meter.pages,
        processingTimeMs,
        charge,
        ...(idem && answer ? { answer: { store: idem.store, claim: idem.claim, ...answer } } : {}),
      }),
    );
  };
  let result: T;
  let heldCents = holdCents;
  try {
    result = await work({
      requestId,
      startedAt,
      meter,
      raiseHold: async (cents) => {
        await step("billing.raise_hold", { "folio.hold_cents": cents }, () => billing.raise(hold, cents));
        heldCents = Math.max(heldCents, cents);
      },
    });
  } catch (err) {
    const metered = meter.total();
    const charge = o.capFailureAtHold ? capCharge(metered, heldCents) : metered;
    const http = toHttpError(err);
    const failure = o.failureAnswer ? o.failureAnswer({ status: http.status, body: http.body, charge }) : { status: http.status, body: JSON.stringify(http.body) };
    // A failure a retry must not redo (it was billed, or retrying cannot change it) is kept for the key.
    const keep = o.idempotency && keepsFailure(http.status, charge.chargedCents);
    await settle("error", charge, Date.now() - startedAt, err instanceof FolioError ? err.code : "internal_error", keep ? failure : undefined);
    throw err;
  }
  const charge = meter.total();
  const processingTimeMs = Date.now() - startedAt;
  const outcome: PaidOutcome<T> = { result, requestId, charge, components: meter.components(), conversionMillis: meter.conversionMillis(), processingTimeMs };
  const answer = o.answer(outcome);
  await settle("success", charge, processingTimeMs, undefined, o.idempotency ? { status: 200, body: o.idempotency.serialize(answer) } : undefined);
  return { ...outcome, answer, model: meter.model, pages: meter.pages };
}

/** `charge` charged at most `cents` (the exact provider cost and fee stay as measured, for the ledger). */
function capCharge(charge: ComponentCharge, cents: number): ComponentCharge {
  return charge.chargedCents <= cents ? charge : { ...charge, chargedCents: cents };
}
