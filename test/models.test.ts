/**
 * /v1/models* from the live catalog: the fake OpenRouter upstream (a test
 * double) serves the recorded snapshot; the local engine is always listed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Decimal } from "../internal/billing/index.ts";
import { call, createTestAccount, createTestKey, startStack, upstreamStack, type TestStack } from "./harness.ts";
import { loadModelsSnapshot } from "./fake-upstream.ts";

const env = upstreamStack();
/** A stack without an upstream: only the local engines. */
let bare: TestStack;

beforeAll(async () => {
  bare = await startStack();
});
afterAll(async () => {
  await bare?.close();
});

describe("GET /v1/models", () => {
  it("lists image-capable priced models and the local engine, in the common list format, without a key", async () => {
    const r = await call(env.stack.edge, "GET", "/v1/models");
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.object).toBe("list");
    const ids = (r.body.data as { id: string }[]).map((m) => m.id);
    expect(ids).toContain("local/tesseract");
    expect(ids).toContain("openai/gpt-4.1");
    expect(ids).not.toContain("openrouter/auto"); // router price "-1"
    const snapshot = loadModelsSnapshot().data as { id: string; architecture: { input_modalities?: string[] } }[];
    const textOnly = snapshot.filter((m) => !(m.architecture.input_modalities ?? []).includes("image")).map((m) => m.id);
    expect(textOnly.length).toBeGreaterThan(100);
    for (const id of textOnly) expect(ids).not.toContain(id);
    for (const m of r.body.data) {
      expect(m.object).toBe("model");
      expect(typeof m.created).toBe("number");
      expect(typeof m.owned_by).toBe("string");
      expect(m.folio.input_kinds).toContain("image");
    }
    expect(r.body.folio.upstream_configured).toBe(true);
    expect(r.body.folio.stale).toBe(false);
    expect(r.headers.get("x-folio-catalog-age")).not.toBeNull();
  });

  it("lists prices with exactly 5% added to the provider's", async () => {
    const r = await call(env.stack.edge, "GET", "/v1/models/openai/gpt-4.1");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const snap = loadModelsSnapshot().data.find((m) => m.id === "openai/gpt-4.1") as { pricing: { prompt: string; completion: string } };
    const p = r.body.folio.pricing;
    expect(p.provider.prompt).toBe(snap.pricing.prompt);
    expect(new Decimal(p.listed.prompt).eq(new Decimal(snap.pricing.prompt).mul("1.05"))).toBe(true);
    expect(new Decimal(p.listed.completion).eq(new Decimal(snap.pricing.completion).mul("1.05"))).toBe(true);
    expect(p.platform_fee_percentage).toBe("5");
  });

  it("states the languages of local engines (tesseract's installed ones, PP-OCR's English and Chinese) and none for upstream models", async () => {
    const ppocr = await call(env.stack.edge, "GET", "/v1/models/local/ppocr");
    expect(ppocr.status, JSON.stringify(ppocr.body)).toBe(200);
    expect(ppocr.body.folio.languages).toEqual(["en", "zh"]);
    expect(ppocr.body.folio.description).toMatch(/English and Chinese only/);
    const tesseract = await call(env.stack.edge, "GET", "/v1/models/local/tesseract");
    expect(tesseract.body.folio.languages, JSON.stringify(tesseract.body.folio)).toEqual(expect.arrayContaining(["en", "de"]));
    const auto = await call(env.stack.edge, "GET", "/v1/models/local/auto");
    expect(auto.body.folio.languages).toEqual(tesseract.body.folio.languages);
    const upstreamModel = await call(env.stack.edge, "GET", "/v1/models/openai/gpt-4.1");
    expect(Object.keys(upstreamModel.body.folio)).not.toContain("languages");
  });

  it("answers 404 for an unknown model id", async () => {
    const r = await call(env.stack.edge, "GET", "/v1/models/nobody/nothing");
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("not_found");
  });

  it("with a key: the key must be valid; a valid key works", async () => {
    const acc = await createTestAccount();
    expect((await call(env.stack.edge, "GET", "/v1/models", acc.adminKey)).status).toBe(200);
    expect((await call(env.stack.edge, "GET", "/v1/models", "folio_sk_" + "x".repeat(40))).status).toBe(401);
    const noModels = await createTestKey(acc.accountId, ["ocr:write"]);
    expect((await call(env.stack.edge, "GET", "/v1/models", noModels.key)).status).toBe(403);
  });

  it("/recommended shows what every strategy resolves to now; /categories groups; /stats aggregates", async () => {
    const rec = await call(env.stack.edge, "GET", "/v1/models/recommended");
    expect(rec.status).toBe(200);
    const strategies = rec.body.strategies as { strategy: string; model: string; alias: string; fallback: boolean }[];
    expect(strategies.map((s) => s.strategy).sort()).toEqual(["accuracy", "balanced", "cost", "quality", "speed"]);
    const by = Object.fromEntries(strategies.map((s) => [s.strategy, s.model]));
    expect(by.accuracy).toBe(by.quality);
    expect(by.balanced).toBe(by.speed);
    for (const m of rec.body.data) expect(m.folio.recommended).toBe(true);

    const cats = await call(env.stack.edge, "GET", "/v1/models/categories");
    expect(cats.status).toBe(200);
    const total = (cats.body.data as { model_count: number }[]).reduce((n, c) => n + c.model_count, 0);
    const list = await call(env.stack.edge, "GET", "/v1/models");
    expect(total).toBe(list.body.data.length);
    expect((cats.body.data as { id: string }[]).map((c) => c.id)).toContain("local");

    const stats = await call(env.stack.edge, "GET", "/v1/models/stats");
    expect(stats.status).toBe(200);
    expect(stats.body.total_models).toBe(list.body.data.length);
    expect(stats.body.by_source.local).toBe(3);
    expect(Number(stats.body.listed_price_per_million_tokens.prompt.max)).toBeGreaterThan(Number(stats.body.listed_price_per_million_tokens.prompt.min));
  });

  it("exports the catalog's age, staleness and size as metrics on the extraction service's own port", async () => {
    const text = await (await fetch(env.stack.extraction.metricsUrl!)).text();
    const age = /^folio_catalog_age_seconds\{[^}]*\} (\S+)$/m.exec(text);
    expect(age, text.slice(0, 2000)).not.toBeNull();
    expect(Number(age![1])).toBeGreaterThanOrEqual(0);
    expect(text).toMatch(/^folio_catalog_stale\{[^}]*\} 0$/m);
    expect(text).toMatch(/^folio_catalog_refreshes_total\{[^}]*outcome="ok"[^}]*\} [1-9]/m);
    expect(text).toMatch(/^folio_catalog_models\{[^}]*source="local"[^}]*\} 3$/m);
  });

  it("without an upstream, only local engines are listed and every strategy resolves to one", async () => {
    const r = await call(bare.edge, "GET", "/v1/models");
    expect((r.body.data as { id: string }[]).map((m) => m.id)).toEqual(["local/auto", "local/tesseract", "local/ppocr"]);
    expect(r.body.folio.upstream_configured).toBe(false);
    const rec = await call(bare.edge, "GET", "/v1/models/recommended");
    for (const s of rec.body.strategies) expect(s.model).toBe("local/auto");
  });
});
