/**
 * Prices and charges as the API, its OpenAPI document and the docs state
 * them, all taken from the constants in `pricing.ts`: no rate is written out
 * twice.
 */
import { formatCents } from "./format.ts";
import {
  CONVERSION_RATE_USD_PER_MINUTE,
  Decimal,
  MINIMUM_CHARGE_CENTS,
  PDF_PARSER_USD_PER_PAGE,
  PLATFORM_FEE_RATE,
  type ComponentCharge,
  type DecimalLike,
  withPlatformFee,
} from "./pricing.ts";
import type { UnitPrices } from "./estimates.ts";

/** Dollars with two decimals and a thousands separator: 123456.5 cents → "$1,234.57". */
export function formatUsd(cents: DecimalLike): string {
  return formatCents(new Decimal(cents).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber());
}

/** Cents to a JSON number: exact decimals become the nearest double only at the wire. */
export function centsToNumber(cents: DecimalLike): number {
  return new Decimal(cents).toNumber();
}

/** Cents as a JSON number of dollars (`balance_usd`, `total_usd`). */
export function centsToUsd(cents: DecimalLike): number {
  return new Decimal(cents).div(100).toNumber();
}

/** A charge's three figures as every response names them. */
export function chargeFields(c: ComponentCharge): { provider_cost_cents: number; platform_fee_cents: number; total_cost_cents: number } {
  return { provider_cost_cents: centsToNumber(c.providerCostCents), platform_fee_cents: centsToNumber(c.platformFeeCents), total_cost_cents: c.chargedCents };
}

/** "5": the platform fee in percent. */
export const PLATFORM_FEE_PERCENT = PLATFORM_FEE_RATE.mul(100).toFixed();
/** "0.01": the minimum charge of a component in dollars. */
export const MINIMUM_CHARGE_USD = new Decimal(MINIMUM_CHARGE_CENTS).div(100).toFixed(2);
/** "0.00278": dollars per minute of sandbox compute time. */
export const CONVERSION_RATE_PER_MINUTE_USD = CONVERSION_RATE_USD_PER_MINUTE.toFixed();
/** "2": dollars per 1,000 pages of the dedicated PDF parser. */
export const PDF_PARSER_USD_PER_THOUSAND_PAGES = PDF_PARSER_USD_PER_PAGE.mul(1000).toFixed();

const cents = (n: number) => `${n} cent${n === 1 ? "" : "s"}`;

/** The pricing rule and rates in words, for OpenAPI descriptions and the generated docs. */
export const PRICE_TEXT = Object.freeze({
  /** How any component is charged. */
  rule: `provider cost + ${PLATFORM_FEE_PERCENT}%, rounded up to whole cents, at least ${cents(MINIMUM_CHARGE_CENTS)}`,
  /** A conversion's charge. */
  conversion: `compute minutes × ${CONVERSION_RATE_PER_MINUTE_USD} $ + ${PLATFORM_FEE_PERCENT}%, rounded up to whole cents, at least ${cents(MINIMUM_CHARGE_CENTS)}`,
  /** The conversion price list in one sentence. */
  conversionList: `${CONVERSION_RATE_PER_MINUTE_USD} dollars per minute of sandbox compute time plus the ${PLATFORM_FEE_PERCENT}% platform fee, at least ${cents(MINIMUM_CHARGE_CENTS)} per conversion`,
  /** The dedicated PDF parser's rate. */
  parser: `${PDF_PARSER_USD_PER_THOUSAND_PAGES} $ per 1,000 pages + ${PLATFORM_FEE_PERCENT}%`,
});

/** A model's prices as the catalog lists them: each provider price plus the platform fee, exact decimal strings. */
export function listedPrices(p: UnitPrices): UnitPrices {
  const listed = (v: string) => withPlatformFee(v).toFixed();
  return pricesOf(p, listed);
}

/** The prices a model has, in the order every listing shows them (prompt, completion, image, request, page). */
export function pricesOf(p: UnitPrices, transform: (usd: string) => string = (v) => v): UnitPrices {
  const out: UnitPrices = { prompt: transform(p.prompt), completion: transform(p.completion) };
  for (const k of ["image", "request", "page"] as const) {
    const v = p[k];
    if (v !== undefined) out[k] = transform(v);
  }
  return out;
}

/** A listed (fee-inclusive) price per million tokens, in dollars. */
export function listedPerMillionTokens(usdPerToken: string): Decimal {
  return withPlatformFee(usdPerToken).mul(1_000_000);
}
