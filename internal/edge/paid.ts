/**
 * One paid request, start to finish: hold an estimate, run the work while a
 * meter records what providers billed, then settle (charge, ledger, usage log)
 * whether the work succeeded or failed. Every paid endpoint goes through here,
 * so the billing rules hold everywhere the same way.
 */
import type { Principal } from "../auth/index.ts";
import { Decimal, chargeComponent, conversionCostCents, sumCharges, type Billing, type ComponentCharge, type Hold } from "../billing/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { newId } from "../platform/ids/index.ts";
import { inSpan } from "../platform/telemetry/index.ts";

/** What the work reports as it goes; cost figures are exact provider cents. */
export class Meter {
  model: string;
  promptTokens = 0;
  completionTokens = 0;
  pages = 0;
  private modelCost = new Decimal(0);
  private modelCalls = 0;
  private conversionMillis: number[] = [];
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

  /** One sandboxed conversion and its measured compute time. */
  conversion(computeMillis: number): void {
    this.conversionMillis.push(computeMillis);
  }

  /** Pages read by the provider's dedicated PDF parser. */
  parserPages(cents: Decimal): void {
    this.parserCost = this.parserCost.add(cents);
  }

  /** The components billed so far: the model calls as one, each conversion, the parser. */
  components(): { model: ComponentCharge | null; conversion: ComponentCharge[]; parser: ComponentCharge | null } {
    return {
      model: this.modelCalls > 0 ? chargeComponent(this.modelCost) : null,
      conversion: this.conversionMillis.map((ms) => chargeComponent(conversionCostCents(ms))),
      parser: this.parserCost.gt(0) ? chargeComponent(this.parserCost) : null,
    };
  }

  total(): ComponentCharge {
    const c = this.components();
    return sumCharges([...(c.model ? [c.model] : []), ...c.conversion, ...(c.parser ? [c.parser] : [])]);
  }
}

export interface PaidRequest {
  requestId: string;
  startedAt: number;
  meter: Meter;
  /** Grows the hold to `cents` once more of the work is known; 402 when the balance does not cover it. */
  raiseHold(cents: number): Promise<void>;
}

export interface PaidOutcome<T> {
  result: T;
  requestId: string;
  charge: ComponentCharge;
  components: ReturnType<Meter["components"]>;
  processingTimeMs: number;
}

/**
 * Holds `estimateCents`, runs `work`, settles. On failure the error is
 * rethrown after the usage log records it and the account is charged only
 * what providers billed before the failure.
 */
export async function runPaid<T>(
  billing: Billing,
  principal: Principal,
  o: { endpoint: string; model: string; estimateCents: number },
  work: (req: PaidRequest) => Promise<T>,
): Promise<PaidOutcome<T>> {
  const requestId = newId("req");
  return inSpan("folio.paid_request", { "folio.endpoint": o.endpoint, "folio.account_id": principal.accountId, "folio.request_id": requestId }, async (span) => {
    const outcome = await paid(billing, principal, o, requestId, work);
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

async function paid<T>(
  billing: Billing,
  principal: Principal,
  o: { endpoint: string; model: string; estimateCents: number },
  requestId: string,
  work: (req: PaidRequest) => Promise<T>,
): Promise<PaidOutcome<T> & { model: string; pages: number }> {
  const holdCents = Math.max(1, o.estimateCents);
  const hold: Hold = await step("billing.hold", { "folio.hold_cents": holdCents }, () => billing.hold(principal.accountId, principal.keyId, holdCents));
  const startedAt = Date.now();
  const meter = new Meter(o.model);
  /** Charges what the meter recorded, with the ledger row and usage log, in one transaction. */
  const settle = async (status: "success" | "error", errorCode?: string) => {
    const charge = meter.total();
    const processingTimeMs = Date.now() - startedAt;
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
      }),
    );
    return { charge, processingTimeMs };
  };
  let result: T;
  try {
    result = await work({
      requestId,
      startedAt,
      meter,
      raiseHold: (cents) => step("billing.raise_hold", { "folio.hold_cents": cents }, () => billing.raise(hold, cents)),
    });
  } catch (err) {
    await settle("error", err instanceof FolioError ? err.code : "internal_error");
    throw err;
  }
  const { charge, processingTimeMs } = await settle("success");
  return { result, requestId, charge, components: meter.components(), processingTimeMs, model: meter.model, pages: meter.pages };
}
