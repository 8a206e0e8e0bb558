/**
 * Estimates, holds and the meter: the formulas every paid route uses, in
 * one place, checked against the pricing rule.
 */
import { describe, expect, it } from "vitest";
import {
  Decimal,
  Meter,
  chargeComponent,
  conversionChargeCents,
  conversionCostCents,
  holdCents,
  modelCostCents,
  modelEstimateCents,
  parserCostCents,
  type PricedModel,
} from "./index.ts";

const upstream: PricedModel = { source: "upstream", pricing: { prompt: "0.000001", completion: "0.000004", image: "0.001", request: "0.0005" } };
const local: PricedModel = { source: "local", pricing: { prompt: "0", completion: "0", page: "0.001" } };
const noModel = { pages: 0, maxCompletionTokens: 0, conversions: 0, conversionDeadlineMs: 180_000, parserPages: 0 };

describe("estimates", () => {
  it("prices upstream work per token, image and request, and local work per page", () => {
    // 1000 prompt × 0.0001 ¢ + 500 completion × 0.0004 ¢ + 1 image × 0.1 ¢ + 1 request × 0.05 ¢
    expect(modelCostCents(upstream.pricing, { promptTokens: 1000, completionTokens: 500, images: 1, requests: 1, pages: 0 }).toFixed()).toBe("0.45");
    expect(modelCostCents(local.pricing, { promptTokens: 0, completionTokens: 0, images: 0, requests: 0, pages: 7 }).toFixed()).toBe("0.7");
  });

  it("estimates a model at 3,500 prompt tokens and the completion cap per page", () => {
    const cap = 4096;
    const perPage = new Decimal(3500).mul("0.0001").add(new Decimal(cap).mul("0.0004")).add("0.1").add("0.05");
    expect(modelEstimateCents(upstream, 3, cap).toFixed()).toBe(perPage.mul(3).toFixed());
    expect(modelEstimateCents(local, 3, cap).toFixed()).toBe("0.3");
  });

  it("prices a conversion by compute minutes and the parser per page", () => {
    expect(conversionCostCents(60_000).toFixed()).toBe("0.278");
    expect(conversionChargeCents(60_000)).toBe(1);
    // 10 minutes: 2.78 ¢ + 5% = 2.919 → 3 cents
    expect(conversionChargeCents(600_000)).toBe(3);
    expect(parserCostCents(10).toFixed()).toBe("2");
  });

  it("holds each component's charge at its upper bound, summed, and never 0", () => {
    expect(holdCents(noModel)).toBe(1);
    const model = chargeComponent(modelEstimateCents(upstream, 2, 100)).chargedCents;
    const conversion = chargeComponent(conversionCostCents(180_000)).chargedCents;
    const parser = chargeComponent(parserCostCents(10)).chargedCents;
    expect(holdCents({ ...noModel, model: upstream, pages: 2, maxCompletionTokens: 100, conversions: 2, parserPages: 10 })).toBe(model + 2 * conversion + parser);
    // A model reads at least one page: an office document is held at one page until its pages are known.
    expect(holdCents({ ...noModel, model: upstream, pages: 0, maxCompletionTokens: 100 })).toBe(chargeComponent(modelEstimateCents(upstream, 1, 100)).chargedCents);
  });
});

describe("Meter", () => {
  it("charges a conversion at the price its service reported, not at one recomputed from the time", () => {
    const meter = new Meter("m");
    // A service priced 12 s at a rate of its own: the meter must not reprice it.
    meter.conversion({ computeMillis: 12_000, providerCostCents: new Decimal("250") });
    const c = meter.components();
    expect(c.conversion).toHaveLength(1);
    expect(c.conversion[0]!.providerCostCents.toFixed()).toBe("250");
    expect(c.conversion[0]!.chargedCents).toBe(263);
    expect(meter.conversionMillis()).toEqual([12_000]);
    expect(c.model).toBeNull();
  });

  it("adds model calls into one component and the parser into another", () => {
    const meter = new Meter("m");
    meter.modelCall(new Decimal("0.4"), { prompt: 10, completion: 2 });
    meter.modelCall(new Decimal("0.4"), { prompt: 5, completion: 1 });
    meter.parserPages(10);
    const c = meter.components();
    expect(c.model!.providerCostCents.toFixed()).toBe("0.8");
    expect(c.model!.chargedCents).toBe(1);
    expect(c.parser!.chargedCents).toBe(3);
    expect([meter.promptTokens, meter.completionTokens]).toEqual([15, 3]);
    expect(meter.total().chargedCents).toBe(4);
  });
});
