import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  Decimal,
  chargeComponent,
  conversionCostCents,
  formatUsd,
  parseDecimal,
  reportedUsdToCents,
  sumCharges,
  withPlatformFee,
} from "./index.ts";

// Provider costs as exact decimal strings with up to 12 fractional digits.
const cost = fc
  .tuple(fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 0, max: 999_999_999_999 }))
  .map(([w, f]) => `${w}.${String(f).padStart(12, "0")}`);

describe("pricing rule", () => {
  it("charges provider + 5% rounded up to a whole cent, never less than the exact amount", () => {
    fc.assert(
      fc.property(cost, (c) => {
        const ch = chargeComponent(c);
        const exact = new Decimal(c).mul("1.05");
        expect(Number.isInteger(ch.chargedCents)).toBe(true);
        expect(new Decimal(ch.chargedCents).gte(exact)).toBe(true);
        expect(new Decimal(ch.chargedCents).sub(exact).lt(1) || ch.chargedCents === 1).toBe(true);
        expect(ch.platformFeeCents.eq(new Decimal(c).mul("0.05"))).toBe(true);
      }),
    );
  });

  it("applies the 1-cent minimum to a component that did work, even at zero cost", () => {
    expect(chargeComponent("0").chargedCents).toBe(1);
    expect(chargeComponent("0.0001").chargedCents).toBe(1);
    fc.assert(
      fc.property(cost, (c) => {
        expect(chargeComponent(c).chargedCents).toBeGreaterThanOrEqual(1);
      }),
    );
  });

  it("rounds exactly at cent boundaries (no float drift)", () => {
    // 0.1 + 0.2 style traps: 20 cents * 1.05 = 21 exactly, not 21.000000004.
    expect(chargeComponent("20").chargedCents).toBe(21);
    expect(chargeComponent("100").chargedCents).toBe(105);
    expect(chargeComponent("100.0001").chargedCents).toBe(106);
  });

  it("refuses negative provider cost", () => {
    expect(() => chargeComponent("-1")).toThrow(RangeError);
  });

  it("sums components: charge of a request is the sum of its parts", () => {
    fc.assert(
      fc.property(fc.array(cost, { maxLength: 5 }), (costs) => {
        const parts = costs.map((c) => chargeComponent(c));
        const total = sumCharges(parts);
        expect(total.chargedCents).toBe(parts.reduce((a, p) => a + p.chargedCents, 0));
        expect(total.providerCostCents.eq(costs.reduce((a, c) => a.add(c), new Decimal(0)))).toBe(true);
      }),
    );
  });

  it("prices conversion compute at 0.00278 $/min: one minute is 0.278 cents, charged 1 cent", () => {
    expect(conversionCostCents(60_000).toString()).toBe("0.278");
    expect(chargeComponent(conversionCostCents(60_000)).chargedCents).toBe(1);
    // 10 minutes: 2.78 * 1.05 = 2.919 -> 3 cents
    expect(chargeComponent(conversionCostCents(600_000)).chargedCents).toBe(3);
  });

  it("lists prices with the fee added exactly", () => {
    expect(withPlatformFee("0.000003").toString()).toBe("0.00000315");
    fc.assert(
      fc.property(cost, (c) => {
        expect(withPlatformFee(c).eq(new Decimal(c).mul("1.05"))).toBe(true);
      }),
    );
  });

  it("parses only plain decimal strings", () => {
    expect(parseDecimal("0.0000025")?.toString()).toBe("0.0000025");
    for (const bad of ["", "abc", "1e-5", "NaN", "Infinity", "0x10", "1.2.3"]) expect(parseDecimal(bad)).toBeUndefined();
  });

  it("formats dollars", () => {
    expect(formatUsd(1000)).toBe("$10.00");
    expect(formatUsd("123456.5")).toBe("$1,234.57");
    expect(formatUsd(0)).toBe("$0.00");
    expect(formatUsd(-250)).toBe("-$2.50");
  });
});

describe("reportedUsdToCents", () => {
  it("converts dollars to cents exactly from the number's decimal form", () => {
    expect(reportedUsdToCents(8.6e-5)?.toFixed()).toBe("0.0086");
    expect(reportedUsdToCents(1e-7)?.toFixed()).toBe("0.00001");
    expect(reportedUsdToCents(0.1 + 0.2)?.toFixed()).toBe("30.000000000000004"); // what the double says, nothing invented
    expect(reportedUsdToCents(0.00435825)?.toFixed()).toBe("0.435825");
    expect(reportedUsdToCents("0.000123")?.toFixed()).toBe("0.0123");
    expect(reportedUsdToCents(0)?.eq(new Decimal(0))).toBe(true);
  });

  it("ignores unusable values", () => {
    for (const v of [-1, Number.NaN, Number.POSITIVE_INFINITY, "1e-5", "abc", null, undefined, {}]) expect(reportedUsdToCents(v)).toBeNull();
  });
});
