// Strategy names, aliases and the static mapping with its fallback rule.
import { describe, expect, it } from "vitest";
import { FolioError, errorBody } from "../../platform/errors/index.ts";
import { loadModelsSnapshot } from "../../../test/fake-upstream.ts";
import { parseUpstreamModels } from "./upstream.ts";
import {
  DEFAULT_STRATEGY,
  DEFAULT_STRATEGY_CONFIG,
  STRATEGIES,
  aliasId,
  aliasStrategy,
  parseStrategy,
  resolveStrategy,
  type StrategyConfig,
} from "./strategies.ts";

const config: StrategyConfig = { quality: ["q/one", "q/two"], speed: ["s/one"], cost: [] };
const LOCAL = "local/tesseract";

describe("parseStrategy", () => {
  it("accepts the five strategy names", () => {
    expect(STRATEGIES).toEqual(["quality", "accuracy", "speed", "cost", "balanced"]);
    for (const s of STRATEGIES) expect(parseStrategy(s, "strategy")).toBe(s);
    expect(DEFAULT_STRATEGY).toBe("balanced");
  });

  it.each([["fastest"], ["Quality"], [""], [3], [null], [{}]])("rejects %j with a 400 naming the param", (value) => {
    let caught: unknown;
    try {
      parseStrategy(value, "provider_preferences.strategy");
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(FolioError);
    const body = errorBody(caught as FolioError);
    expect(body.error).toMatchObject({ code: "invalid_request", param: "provider_preferences.strategy" });
    expect(body.error.message).toMatch(/quality, accuracy, speed, cost, balanced/);
  });
});

describe("aliases", () => {
  it("maps folio/<strategy> to the strategy and nothing else", () => {
    for (const s of STRATEGIES) {
      expect(aliasId(s)).toBe(`folio/${s}`);
      expect(aliasStrategy(`folio/${s}`)).toBe(s);
    }
    expect(aliasStrategy("folio/fast")).toBeUndefined();
    expect(aliasStrategy("folio/")).toBeUndefined();
    expect(aliasStrategy("openai/gpt-4.1")).toBeUndefined();
    expect(aliasStrategy("quality")).toBeUndefined();
  });
});

describe("resolveStrategy", () => {
  it("uses the first configured model that is present", () => {
    expect(resolveStrategy("quality", config, () => true, LOCAL)).toEqual({ model: "q/one", fallback: false });
    expect(resolveStrategy("accuracy", config, () => true, LOCAL)).toEqual({ model: "q/one", fallback: false });
    expect(resolveStrategy("balanced", config, () => true, LOCAL)).toEqual({ model: "s/one", fallback: false });
  });

  it("falls to the next configured model, saying why", () => {
    const r = resolveStrategy("quality", config, (id) => id === "q/two", LOCAL);
    expect(r).toEqual({ model: "q/two", fallback: true, reason: "q/one is not in the current catalog; using the next configured model q/two" });
  });

  it("falls back to the local engine when no configured model is present", () => {
    const r = resolveStrategy("speed", config, () => false, LOCAL);
    expect(r.model).toBe(LOCAL);
    expect(r.fallback).toBe(true);
    expect(r.reason).toMatch(/none of the configured models \(s\/one\)/);
    expect(resolveStrategy("cost", config, () => true, LOCAL)).toMatchObject({ model: LOCAL, fallback: true, reason: expect.stringMatching(/no model is configured/) as string });
  });

  it("resolves every default strategy on the recorded snapshot without fallback", () => {
    const { models } = parseUpstreamModels(loadModelsSnapshot(), Date.UTC(2025, 4, 23) / 1000);
    const ids = new Set(models.map((m) => m.id));
    for (const list of [DEFAULT_STRATEGY_CONFIG.quality, DEFAULT_STRATEGY_CONFIG.speed, DEFAULT_STRATEGY_CONFIG.cost]) {
      for (const id of list) expect(ids.has(id), id).toBe(true);
    }
    for (const s of STRATEGIES) expect(resolveStrategy(s, DEFAULT_STRATEGY_CONFIG, (id) => ids.has(id), LOCAL).fallback).toBe(false);
  });
});
