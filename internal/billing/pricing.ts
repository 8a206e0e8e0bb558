/**
 * The pricing rule, in exactly one place (DESIGN.md "the pricing rule").
 *
 * - A component's provider cost is exact, in fractional cents.
 * - Its platform fee is exactly 5% of that.
 * - What the component charges is provider + fee rounded UP to a whole cent,
 *   and at least the component's minimum (1 cent) when it did billable work.
 * - A request's charge is the sum of its components' charges.
 *
 * All arithmetic is decimal (decimal.js, 40 significant digits); no binary
 * float ever enters a billed sum.
 */
import { Decimal as DecimalBase } from "decimal.js";

export const Decimal = DecimalBase.clone({ precision: 40, rounding: DecimalBase.ROUND_HALF_UP });
export type Decimal = InstanceType<typeof Decimal>;
export type DecimalLike = Decimal | string | number;

/** 5% platform fee on provider cost. */
export const PLATFORM_FEE_RATE = new Decimal("0.05");
/** Smallest charge for a component that did billable work, in cents. */
export const MINIMUM_CHARGE_CENTS = 1;
/** Conversion compute rate: 0.00278 dollars per minute (spec, Limits). */
export const CONVERSION_RATE_USD_PER_MINUTE = new Decimal("0.00278");
/** Dedicated PDF parser: 2 dollars per 1,000 pages before the fee. */
export const PDF_PARSER_USD_PER_PAGE = new Decimal("0.002");

export interface ComponentCharge {
  /** Exact provider cost, fractional cents. */
  providerCostCents: Decimal;
  /** Exact platform fee, fractional cents. */
  platformFeeCents: Decimal;
  /** Whole cents charged for this component. */
  chargedCents: number;
}

/** Parses a decimal string strictly (no exponent tricks, no NaN, no sign games). */
export function parseDecimal(value: string): Decimal | undefined {
  if (!/^-?(\d+)(\.\d+)?$/.test(value.trim())) return undefined;
  return new Decimal(value.trim());
}

/**
 * A cost a provider reported in US dollars (a JSON number or a decimal
 * string) as exact cents, from the number's shortest decimal form; null when
 * it is not a usable amount.
 */
export function reportedUsdToCents(value: unknown): Decimal | null {
  let d: Decimal | undefined;
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) return null;
    // String(8.6e-5) is "0.000086" and String(1e-7) is "1e-7": both exact in decimal.js.
    d = new Decimal(String(value));
  } else if (typeof value === "string") {
    d = parseDecimal(value);
  }
  if (d === undefined || !d.isFinite() || d.isNegative()) return null;
  return d.mul(100);
}

export function platformFee(providerCostCents: DecimalLike): Decimal {
  return new Decimal(providerCostCents).mul(PLATFORM_FEE_RATE);
}

/** A price with the platform fee added, exact (catalog listings). */
export function withPlatformFee(price: DecimalLike): Decimal {
  const p = new Decimal(price);
  return p.add(p.mul(PLATFORM_FEE_RATE));
}

/**
 * The charge for one component that did billable work.
 * @param providerCostCents exact provider cost; must be non-negative
 */
export function chargeComponent(providerCostCents: DecimalLike, minimumCents = MINIMUM_CHARGE_CENTS): ComponentCharge {
  const provider = new Decimal(providerCostCents);
  if (provider.isNaN() || provider.isNegative()) throw new RangeError(`provider cost must be >= 0, got ${provider.toString()}`);
  const fee = platformFee(provider);
  const rounded = provider.add(fee).ceil().toNumber();
  return { providerCostCents: provider, platformFeeCents: fee, chargedCents: Math.max(rounded, minimumCents) };
}

/** No work was billed: a request that failed before any provider charged. */
export const NO_CHARGE: ComponentCharge = Object.freeze({
  providerCostCents: new Decimal(0),
  platformFeeCents: new Decimal(0),
  chargedCents: 0,
});

/** Sums components into the request's totals. */
export function sumCharges(components: readonly ComponentCharge[]): ComponentCharge {
  return components.reduce<ComponentCharge>(
    (acc, c) => ({
      providerCostCents: acc.providerCostCents.add(c.providerCostCents),
      platformFeeCents: acc.platformFeeCents.add(c.platformFeeCents),
      chargedCents: acc.chargedCents + c.chargedCents,
    }),
    NO_CHARGE,
  );
}
