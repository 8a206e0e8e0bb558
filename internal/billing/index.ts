export * from "./pricing.ts";
export { Billing, type BillingEvents, type Hold, type Settlement, type SettleResult } from "./ledger.ts";
