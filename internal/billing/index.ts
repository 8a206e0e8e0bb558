/**
 * All of Folio's money: the pricing rule (`pricing.ts`), every estimate and
 * hold (`estimates.ts`), the ledger (`ledger.ts`), the paid-request flow and
 * its meter (`paid.ts`) with the idempotency keys whose answers are stored
 * with the charges (`idempotency.ts`), and how amounts and prices are stated (`display.ts`,
 * `format.ts`), and the charges of durable jobs as their pages are stored
 * (`jobs.ts`). Nothing outside this folder computes a price.
 */
export * from "./pricing.ts";
export * from "./estimates.ts";
export * from "./display.ts";
export { formatCents } from "./format.ts";
export { Billing, takeHold, type BillingEvents, type Hold, type Settlement, type SettleResult } from "./ledger.ts";
export { giveBack } from "./give-back.ts";
export { chargeJobConversion, chargeJobPages, closeJobBilling, jobCharge, resizeJobHold, type JobCharge } from "./jobs.ts";
export { Meter, runPaid, type ConversionWork, type MeteredComponents, type PaidIdempotency, type PaidOptions, type PaidOutcome, type PaidRequest, type Payer } from "./paid.ts";
export { IDEMPOTENCY_TTL_MS, IdempotencyStore, keepsFailure, type ClaimOutcome, type IdempotencyClaim, type StoredAnswer } from "./idempotency.ts";
