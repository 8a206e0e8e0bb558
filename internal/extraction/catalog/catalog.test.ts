// The live catalog against the fake OpenRouter upstream: refresh, last good
// list, staleness, strategy resolution and fallback, aliases, 400s, and the
// no-upstream mode.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { FolioError, errorBody, httpStatusOf } from "../../platform/errors/index.ts";
import { startFakeUpstream, type FakeUpstream } from "../../../test/fake-upstream.ts";
import type { CatalogModel } from "../types.ts";
import { Catalog, type CatalogOptions } from "./catalog.ts";
import { DEFAULT_STRATEGY_CONFIG } from "./strategies.ts";

const TESSERACT: CatalogModel = {
  id: "local/tesseract",
  name: "Tesseract OCR 5",
  description: "local engine",
  created: 0,
  ownedBy: "local",
  source: "local",
  contextLength: 1,
  maxCompletionTokens: null,
  inputKinds: ["image"],
  category: "local",
  pricing: { prompt: "0", completion: "0", page: "0.001" },
};

let fake: FakeUpstream;
const catalogs: Catalog[] = [];

beforeAll(async () => {
  fake = await startFakeUpstream();
});
afterAll(async () => {
  await fake.close();
});
afterEach(() => {
  for (const c of catalogs.splice(0)) c.stop();
  fake.reset();
});

function make(over: Partial<CatalogOptions> = {}): Catalog {
  const c = new Catalog({
    upstream: { baseUrl: fake.baseUrl, apiKey: fake.apiKey },
    refreshMs: 60_000,
    localModels: [TESSERACT],
    strategies: DEFAULT_STRATEGY_CONFIG,
    requestTimeoutMs: 2_000,
    ...over,
  });
  catalogs.push(c);
  return c;
}

function caught(fn: () => unknown): FolioError {
  try {
    fn();
  } catch (e) {
    if (e instanceof FolioError) return e;
    throw e;
  }
  throw new Error("expected a FolioError");
}

describe("refresh", () => {
  it("loads the upstream list with the bearer key, local models first", async () => {
    const onRefresh = vi.fn();
    const c = make({ onRefresh, clock: () => 1_000_000 });
    await c.start();
    const snap = c.snapshot();
    expect(snap.models).toHaveLength(93);
    expect(snap.models[0]?.id).toBe("local/tesseract");
    expect(snap).toMatchObject({ fetchedAtMs: 1_000_000, ageSeconds: 0, stale: false, lastError: null, upstreamConfigured: true });
    const req = fake.requests.find((r) => r.path === "/models");
    expect(req?.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect(onRefresh).toHaveBeenCalledWith(true);
    expect(c.excluded()).toHaveLength(229);
  });

  it("keeps the last good list when the upstream fails, and says it is stale", async () => {
    let now = 1_000_000;
    const onRefresh = vi.fn();
    const warn = vi.fn();
    const c = make({ clock: () => now, onRefresh, log: { warn, info: vi.fn() } });
    await c.start();
    fake.modelsBehaviour("fail");
    now += 5_000;
    expect(await c.refresh()).toBe(false);
    const snap = c.snapshot();
    expect(snap.models).toHaveLength(93);
    expect(snap).toMatchObject({ fetchedAtMs: 1_000_000, ageSeconds: 5, stale: true });
    expect(snap.lastError).toMatch(/HTTP 500/);
    expect(onRefresh).toHaveBeenLastCalledWith(false);
    expect(warn).toHaveBeenCalled();
    expect(JSON.stringify(warn.mock.calls)).not.toContain(fake.apiKey);

    fake.modelsBehaviour("malformed");
    expect(await c.refresh()).toBe(false);
    expect(c.snapshot().lastError).toMatch(/not JSON/);
    expect(c.snapshot().models).toHaveLength(93);

    fake.modelsBehaviour("ok");
    now += 1_000;
    expect(await c.refresh()).toBe(true);
    expect(c.snapshot()).toMatchObject({ fetchedAtMs: now, stale: false, lastError: null });
  });

  it("keeps the last good list when the new one has no usable model", async () => {
    const c = make();
    await c.start();
    fake.setModels((models) => models.filter((m) => !(m.architecture as { input_modalities: string[] }).input_modalities.includes("image")));
    expect(await c.refresh()).toBe(false);
    expect(c.snapshot().models).toHaveLength(93);
    expect(c.snapshot().lastError).toMatch(/no usable vision model/);
  });

  it("keeps the last good list when the upstream hangs past the time limit", async () => {
    const c = make({ requestTimeoutMs: 200 });
    await c.start();
    fake.modelsBehaviour("hang");
    expect(await c.refresh()).toBe(false);
    expect(c.snapshot()).toMatchObject({ stale: true, lastError: "GET /models timed out" });
    expect(c.snapshot().models).toHaveLength(93);
  });

  it("is stale when the list is older than two refresh periods", async () => {
    let now = 0;
    const c = make({ refreshMs: 1_000, clock: () => now });
    await c.start();
    c.stop();
    now = 2_000;
    expect(c.snapshot().stale).toBe(false);
    now = 2_001;
    expect(c.snapshot()).toMatchObject({ stale: true, ageSeconds: 2 });
  });

  it("starts without throwing when the upstream is down, serving local models", async () => {
    const c = make({ upstream: { baseUrl: "http://127.0.0.1:1", apiKey: "k" } });
    await expect(c.start()).resolves.toBeUndefined();
    const snap = c.snapshot();
    expect(snap.models.map((m) => m.id)).toEqual(["local/tesseract"]);
    expect(snap).toMatchObject({ fetchedAtMs: null, ageSeconds: null, stale: true });
    expect(snap.lastError).toMatch(/fetch failed|ECONNREFUSED/);
    expect(c.resolve({}).model.id).toBe("local/tesseract");
  });

  it("refreshes in the background and picks up changes", async () => {
    const c = make({ refreshMs: 50 });
    await c.start();
    expect(c.get("acme/new-vision")).toBeUndefined();
    fake.setModels((models) => [
      ...models,
      {
        id: "acme/new-vision",
        name: "Acme New",
        created: 1,
        context_length: 1000,
        architecture: { input_modalities: ["image", "text"], output_modalities: ["text"] },
        pricing: { prompt: "0.000001", completion: "0.000001" },
      },
    ]);
    await vi.waitFor(() => expect(c.get("acme/new-vision")).toBeDefined(), { timeout: 2_000, interval: 20 });
    c.stop();
    const n = fake.requests.length;
    await new Promise((r) => setTimeout(r, 150));
    expect(fake.requests.length).toBe(n);
  });

  it("shares one request between concurrent refreshes", async () => {
    const c = make();
    await Promise.all([c.refresh(), c.refresh(), c.refresh()]);
    expect(fake.requests.filter((r) => r.path === "/models")).toHaveLength(1);
  });

  it("does not let an upstream model shadow a local one", async () => {
    fake.setModels((models) => [...models, { ...models[0], id: "local/tesseract" }]);
    const c = make();
    await c.start();
    expect(c.get("local/tesseract")?.source).toBe("local");
  });
});

describe("resolve", () => {
  it("lets model win over strategy", async () => {
    const c = make();
    await c.start();
    expect(c.resolve({ model: "anthropic/claude-sonnet-4", strategy: "cost" })).toMatchObject({ via: "model", model: { id: "anthropic/claude-sonnet-4" } });
    expect(c.resolve({ model: "local/tesseract" }).model.source).toBe("local");
  });

  it("uses the strategy, balanced by default", async () => {
    const c = make();
    await c.start();
    expect(c.resolve({})).toMatchObject({ via: "strategy", strategy: "balanced", model: { id: "openai/gpt-4.1-mini" } });
    expect(c.resolve({ strategy: "quality" }).model.id).toBe("openai/gpt-4.1");
    expect(c.resolve({ strategy: "accuracy" }).model.id).toBe("openai/gpt-4.1");
    expect(c.resolve({ strategy: "speed" }).model.id).toBe("openai/gpt-4.1-mini");
    expect(c.resolve({ strategy: "cost" }).model.id).toBe("openai/gpt-4.1-nano");
  });

  it("accepts alias ids", async () => {
    const c = make();
    await c.start();
    expect(c.resolve({ model: "folio/quality" })).toMatchObject({ via: "alias", strategy: "quality", model: { id: "openai/gpt-4.1" } });
    expect(c.resolve({ model: "folio/cost", strategy: "quality" })).toMatchObject({ via: "alias", model: { id: "openai/gpt-4.1-nano" } });
  });

  it("rejects a model not in the current list with 400 unsupported_model", async () => {
    const c = make();
    await c.start();
    for (const model of ["acme/nope", "openrouter/auto", "deepseek/deepseek-chat-v3-0324", "folio/fastest", ""]) {
      const e = caught(() => c.resolve({ model }));
      expect(httpStatusOf(e.code)).toBe(400);
      expect(errorBody(e).error).toMatchObject({ code: "unsupported_model", param: "model" });
      expect(e.message).toContain("GET /v1/models");
    }
  });

  it("validates a model against the current list after it changes", async () => {
    const c = make();
    await c.start();
    expect(c.resolve({ model: "openai/gpt-4.1" }).model.id).toBe("openai/gpt-4.1");
    fake.setModels((models) => models.filter((m) => m.id !== "openai/gpt-4.1"));
    await c.refresh();
    expect(caught(() => c.resolve({ model: "openai/gpt-4.1" })).code).toBe("unsupported_model");
  });

  it("rejects an unknown strategy naming the param, even next to a model", async () => {
    const c = make();
    await c.start();
    expect(errorBody(caught(() => c.resolve({ strategy: "fastest" }))).error).toMatchObject({ code: "invalid_request", param: "strategy" });
    expect(errorBody(caught(() => c.resolve({ strategy: "fastest", param: "provider_preferences.strategy" }))).error).toMatchObject({
      code: "invalid_request",
      param: "provider_preferences.strategy",
    });
    expect(caught(() => c.resolve({ model: "openai/gpt-4.1", strategy: "fastest" })).code).toBe("invalid_request");
  });
});

describe("strategy fallback", () => {
  it("moves to the next configured model when one leaves the list, and to the local engine when all do", async () => {
    const c = make();
    await c.start();
    expect(c.strategyTable().find((r) => r.strategy === "quality")).toEqual({
      strategy: "quality",
      configured: ["openai/gpt-4.1", "anthropic/claude-sonnet-4", "google/gemini-2.5-pro-preview"],
      resolved: "openai/gpt-4.1",
      fallback: false,
    });

    fake.setModels((models) => models.filter((m) => m.id !== "openai/gpt-4.1"));
    await c.refresh();
    const row = c.strategyTable().find((r) => r.strategy === "quality");
    expect(row).toMatchObject({ resolved: "anthropic/claude-sonnet-4", fallback: true });
    expect(row?.reason).toMatch(/openai\/gpt-4\.1 is not in the current catalog/);
    expect(c.resolve({ strategy: "quality" }).model.id).toBe("anthropic/claude-sonnet-4");

    const quality = new Set(DEFAULT_STRATEGY_CONFIG.quality);
    fake.setModels((models) => models.filter((m) => !quality.has(m.id as string)));
    await c.refresh();
    expect(c.resolve({ strategy: "accuracy" }).model.id).toBe("local/tesseract");
    expect(c.resolve({ model: "folio/quality" }).model.id).toBe("local/tesseract");
    const table = c.strategyTable();
    expect(table.map((r) => r.strategy)).toEqual(["quality", "accuracy", "speed", "cost", "balanced"]);
    expect(table.find((r) => r.strategy === "accuracy")).toMatchObject({ resolved: "local/tesseract", fallback: true });
    expect(table.find((r) => r.strategy === "speed")).toMatchObject({ resolved: "openai/gpt-4.1-mini", fallback: false });
  });
});

describe("without an upstream", () => {
  it("lists only local models, never fetches, and resolves every strategy to the local engine", async () => {
    const fetchImpl = vi.fn<typeof fetch>();
    const c = make({ upstream: undefined, fetchImpl });
    await c.start();
    expect(await c.refresh()).toBe(true);
    expect(fetchImpl).not.toHaveBeenCalled();
    expect(c.snapshot()).toEqual({
      models: [TESSERACT],
      fetchedAtMs: null,
      ageSeconds: null,
      stale: false,
      lastError: null,
      upstreamConfigured: false,
    });
    for (const row of c.strategyTable()) {
      expect(row).toMatchObject({ resolved: "local/tesseract", fallback: true, reason: "no upstream is configured; using the local engine local/tesseract" });
    }
    expect(c.resolve({ strategy: "quality" })).toMatchObject({ via: "strategy", model: { id: "local/tesseract" } });
    expect(c.resolve({ model: "folio/speed" })).toMatchObject({ via: "alias", model: { id: "local/tesseract" } });
    expect(caught(() => c.resolve({ model: "openai/gpt-4.1" })).code).toBe("unsupported_model");
  });

  it("answers 503 for a strategy when there is no model at all", () => {
    const c = make({ upstream: undefined, localModels: [] });
    expect(caught(() => c.resolve({})).code).toBe("service_unavailable");
  });
});

describe("snapshot", () => {
  it("hands out frozen models", async () => {
    const c = make();
    await c.start();
    const m = c.snapshot().models[1] as CatalogModel;
    expect(Object.isFrozen(m)).toBe(true);
    expect(Object.isFrozen(m.pricing)).toBe(true);
  });
});
