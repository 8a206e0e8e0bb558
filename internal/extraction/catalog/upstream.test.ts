// Upstream model-list parsing: filtering rules, conservative prices, expiry,
// categories and fees, on the recorded OpenRouter snapshot and on junk.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { FolioError } from "../../platform/errors/index.ts";
import { Decimal, listedPrices, withPlatformFee } from "../../billing/index.ts";
import { loadModelsSnapshot } from "../../../test/fake-upstream.ts";
import { categorize, parseUpstreamModels } from "./upstream.ts";

const NOW = Date.UTC(2025, 4, 23) / 1000;

/** A valid vision model entry, overridable. */
function entry(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: "acme/vision-1",
    name: "Acme: Vision 1",
    created: 1_700_000_000,
    description: "test model",
    context_length: 128_000,
    architecture: { modality: "text+image->text", input_modalities: ["text", "image"], output_modalities: ["text"] },
    pricing: { prompt: "0.000001", completion: "0.000002", request: "0", image: "0.001" },
    top_provider: { context_length: 128_000, max_completion_tokens: 4096 },
    ...over,
  };
}

function one(e: unknown, now = NOW) {
  return parseUpstreamModels({ data: [e] }, now);
}

describe("parseUpstreamModels on the recorded OpenRouter snapshot", () => {
  const snapshot = loadModelsSnapshot();
  const { models, excluded } = parseUpstreamModels(snapshot, NOW);
  const reasonOf = (id: string) => excluded.find((x) => x.id === id)?.reason;

  it("keeps exactly the 92 image-input models and excludes the other 229 entries", () => {
    expect(snapshot.data).toHaveLength(321);
    expect({ kept: models.length, excluded: excluded.length }).toEqual({ kept: 92, excluded: 229 });
    expect(models.every((m) => m.inputKinds.includes("image") && m.source === "upstream")).toBe(true);
  });

  it("excludes the router model for its -1 price", () => {
    expect(reasonOf("openrouter/auto")).toMatch(/pricing\.prompt is -1/);
    expect(models.find((m) => m.id === "openrouter/auto")).toBeUndefined();
  });

  it("excludes text-only models with a reason", () => {
    const textOnly = snapshot.data.filter((m) => {
      const a = m.architecture as { input_modalities: string[] };
      return !a.input_modalities.includes("image") && m.id !== "openrouter/auto";
    });
    expect(textOnly).toHaveLength(228);
    for (const m of textOnly) expect(reasonOf(m.id as string)).toBe("does not accept image input (text-only)");
  });

  it("marks file-capable models with pdf input and all with text input", () => {
    const pdf = models.filter((m) => m.inputKinds.includes("pdf")).map((m) => m.id);
    expect(pdf).toHaveLength(20);
    expect(pdf).toContain("openai/gpt-4.1");
    expect(pdf).not.toContain("anthropic/claude-sonnet-4");
    expect(models.find((m) => m.id === "anthropic/claude-sonnet-4")?.inputKinds).toEqual(["image", "text"]);
    expect(models.find((m) => m.id === "openai/gpt-4.1")?.inputKinds).toEqual(["image", "pdf", "text"]);
  });

  it("maps fields exactly", () => {
    expect(models.find((m) => m.id === "anthropic/claude-opus-4")).toEqual({
      id: "anthropic/claude-opus-4",
      name: "Anthropic: Claude Opus 4",
      description: expect.stringContaining("Claude Opus 4") as string,
      created: 1747931245,
      ownedBy: "anthropic",
      source: "upstream",
      contextLength: 200000,
      maxCompletionTokens: 32000,
      inputKinds: ["image", "text"],
      category: "premium",
      pricing: { prompt: "0.000015", completion: "0.000075", image: "0.024", request: "0" },
    });
    expect(models.find((m) => m.id === "mistralai/mistral-medium-3")?.maxCompletionTokens).toBeNull();
  });

  it("categorises by the listed prompt price", () => {
    const cat = (id: string) => models.find((m) => m.id === id)?.category;
    expect(cat("openai/gpt-4.1")).toBe("standard"); // $2.10/M listed
    expect(cat("anthropic/claude-sonnet-4")).toBe("premium"); // $3.15/M
    expect(cat("openai/gpt-4.1-nano")).toBe("economy"); // $0.105/M
    expect(cat("google/gemma-3-27b-it:free")).toBe("free");
    const counts = Object.fromEntries(["free", "economy", "standard", "premium"].map((c) => [c, models.filter((m) => m.category === c).length]));
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(92);
  });

  it("lists every price with the 5% fee, exactly", () => {
    const gpt41 = models.find((m) => m.id === "openai/gpt-4.1");
    expect(gpt41 && listedPrices(gpt41.pricing)).toEqual({ prompt: "0.0000021", completion: "0.0000084", image: "0", request: "0" });
    for (const m of models) {
      const listed = listedPrices(m.pricing);
      expect(new Decimal(listed.prompt).eq(new Decimal(m.pricing.prompt).mul("1.05"))).toBe(true);
      expect(new Decimal(listed.completion).eq(new Decimal(m.pricing.completion).mul("1.05"))).toBe(true);
    }
  });

  it("lists the fee without binary rounding where floats would drift", () => {
    // 0.0000000375 * 1.05 in binary floating point is 3.9375000000000004e-8.
    expect(withPlatformFee("0.0000000375").toFixed()).toBe("0.000000039375");
    expect(listedPrices({ prompt: "0.0000000375", completion: "0.00000015" })).toEqual({ prompt: "0.000000039375", completion: "0.0000001575" });
  });
});

describe("parseUpstreamModels filtering rules", () => {
  it("falls back to architecture.modality when the arrays are missing", () => {
    const r = one(entry({ architecture: { modality: "text+image+file->text" } }));
    expect(r.models[0]?.inputKinds).toEqual(["image", "pdf", "text"]);
    expect(one(entry({ architecture: { modality: "text->text" } })).excluded[0]?.reason).toMatch(/text-only/);
    expect(one(entry({ architecture: { modality: "image->image" } })).excluded[0]?.reason).toMatch(/text output/);
    expect(one(entry({ architecture: { modality: 42 } })).excluded[0]?.reason).toMatch(/modalities/);
  });

  it("requires text output", () => {
    const r = one(entry({ architecture: { input_modalities: ["image"], output_modalities: ["image"] } }));
    expect(r.excluded[0]?.reason).toBe("does not produce text output");
    expect(one(entry({ architecture: { input_modalities: ["image"], output_modalities: ["text", "image"] } })).models[0]?.inputKinds).toEqual(["image"]);
  });

  it.each([
    [{ prompt: "-1", completion: "-1" }, /pricing\.prompt is -1/],
    [{ prompt: "0.000001", completion: "-0.1" }, /pricing\.completion is not a non-negative plain decimal/],
    [{ prompt: "1e-6", completion: "0" }, /pricing\.prompt is not a non-negative plain decimal/],
    [{ prompt: 0.000001, completion: "0" }, /pricing\.prompt is not a decimal string/],
    [{ prompt: "NaN", completion: "0" }, /pricing\.prompt/],
    [{ prompt: "", completion: "0" }, /pricing\.prompt/],
    [{ prompt: " 0.1", completion: "0" }, /pricing\.prompt/],
    [{ completion: "0" }, /pricing\.prompt is missing/],
    [{ prompt: "0" }, /pricing\.completion is missing/],
    [{ prompt: "0", completion: "0", image: "free" }, /pricing\.image/],
    [{ prompt: "0", completion: "0", request: "-1" }, /pricing\.request is -1/],
    [{ prompt: "0", completion: "0", internal_reasoning: "x" }, /pricing\.internal_reasoning/],
  ])("excludes unusable pricing %j", (pricing, reason) => {
    const r = one(entry({ pricing }));
    expect(r.models).toHaveLength(0);
    expect(r.excluded[0]?.reason).toMatch(reason);
  });

  it("excludes a missing pricing object", () => {
    expect(one(entry({ pricing: null })).excluded[0]?.reason).toBe("pricing is missing");
  });

  it("keeps image and request prices only when given", () => {
    const r = one(entry({ pricing: { prompt: "0.000001", completion: "0.000002" } }));
    expect(r.models[0]?.pricing).toEqual({ prompt: "0.000001", completion: "0.000002" });
  });

  it.each([
    ["not a string", 42],
    ["no slash", "gpt-4"],
    ["spaces", "acme/vision 1"],
    ["path tricks", "../etc/passwd"],
    ["too long", `acme/${"x".repeat(300)}`],
    ["empty", ""],
  ])("excludes a malformed id (%s)", (_label, id) => {
    const r = one(entry({ id }));
    expect(r.models).toHaveLength(0);
    expect(r.excluded).toHaveLength(1);
  });

  it("accepts ids with variants and excludes Folio's own namespaces and duplicates", () => {
    expect(one(entry({ id: "google/gemma-3-27b-it:free" })).models).toHaveLength(1);
    expect(one(entry({ id: "folio/quality" })).excluded[0]?.reason).toMatch(/reserved/);
    expect(one(entry({ id: "local/tesseract" })).excluded[0]?.reason).toMatch(/reserved/);
    const dup = parseUpstreamModels({ data: [entry(), entry({ name: "second" })] }, NOW);
    expect(dup.models.map((m) => m.name)).toEqual(["Acme: Vision 1"]);
    expect(dup.excluded).toEqual([{ id: "acme/vision-1", reason: "duplicate id" }]);
  });

  describe("expiry", () => {
    it.each([
      ["ISO date in the past", "2025-05-01", true],
      ["ISO date today (00:00 UTC has passed)", "2025-05-23", true],
      ["ISO date in the future", "2025-06-01", false],
      ["date-time in the past", "2025-05-22T12:00:00Z", true],
      ["date-time in the future, no zone (UTC)", "2025-05-23T00:00:01", false],
      ["unix seconds in the past", NOW - 1, true],
      ["unix seconds now", NOW, true],
      ["unix seconds in the future", NOW + 60, false],
      ["unix milliseconds in the future", (NOW + 60) * 1000, false],
      ["numeric string in the past", String(NOW - 10), true],
      ["null", null, false],
    ])("%s", (_label, expiration_date, expired) => {
      const r = one(entry({ expiration_date }));
      expect(r.models.length).toBe(expired ? 0 : 1);
      if (expired) expect(r.excluded[0]?.reason).toMatch(/expired/);
    });

    it.each([["garbage", "soon"], ["impossible date", "2025-13-45"], ["object", { at: 1 }], ["negative", -5]])(
      "excludes an unreadable expiration_date (%s)",
      (_label, expiration_date) => {
        expect(one(entry({ expiration_date })).excluded[0]?.reason).toBe("expiration_date cannot be read");
      },
    );
  });

  it("requires a positive integer context length, falling back to top_provider", () => {
    expect(one(entry({ context_length: null })).models[0]?.contextLength).toBe(128_000);
    const r = one(entry({ context_length: "big", top_provider: {} }));
    expect(r.excluded[0]?.reason).toMatch(/context_length/);
  });

  it("defaults junk optional fields instead of excluding", () => {
    const r = one(entry({ name: 7, description: { x: 1 }, created: "yesterday", top_provider: "nope" }));
    expect(r.models[0]).toMatchObject({ name: "acme/vision-1", description: "", created: 0, maxCompletionTokens: null });
  });
});

describe("conditional prices are taken at their highest", () => {
  it("uses the highest override per unit, whatever its condition", () => {
    const r = one(
      entry({
        pricing: {
          prompt: "0.00000125",
          completion: "0.00001",
          image: "0.00516",
          overrides: [
            { min_prompt_tokens: 200_000, prompt: "0.0000025", completion: "0.000015" },
            { utc_start: "00:00", utc_end: "08:00", prompt: "0.000000625" },
            { image: "0.01" },
          ],
        },
      }),
    );
    expect(r.models[0]?.pricing).toEqual({ prompt: "0.0000025", completion: "0.000015", image: "0.01" });
  });

  it("adds a unit an override introduces", () => {
    const r = one(entry({ pricing: { prompt: "0.000001", completion: "0.000002", overrides: [{ min_prompt_tokens: 1000, request: "0.002" }] } }));
    expect(r.models[0]?.pricing.request).toBe("0.002");
  });

  it("never lowers a price through an override or a discount", () => {
    const r = one(entry({ pricing: { prompt: "0.000001", completion: "0.000002", discount: 0.5, overrides: [{ prompt: "0", completion: "0" }] } }));
    expect(r.models[0]?.pricing).toMatchObject({ prompt: "0.000001", completion: "0.000002" });
  });

  it("raises completion to a higher internal_reasoning price", () => {
    const r = one(entry({ pricing: { prompt: "0.000001", completion: "0.000002", internal_reasoning: "0.000003" } }));
    expect(r.models[0]?.pricing.completion).toBe("0.000003");
    const o = one(entry({ pricing: { prompt: "0.000001", completion: "0.000002", overrides: [{ internal_reasoning: "0.000004" }] } }));
    expect(o.models[0]?.pricing.completion).toBe("0.000004");
  });

  it.each([
    [{ overrides: "cheap" }, /overrides is not a list/],
    [{ overrides: [null] }, /overrides\[0\] is not an object/],
    [{ overrides: [{ prompt: "-1" }] }, /overrides\[0\]\.prompt is -1/],
    [{ overrides: [{}, { completion: 3 }] }, /overrides\[1\]\.completion/],
  ])("excludes a model whose overrides cannot be read: %j", (extra, reason) => {
    const r = one(entry({ pricing: { prompt: "0.000001", completion: "0.000002", ...extra } }));
    expect(r.models).toHaveLength(0);
    expect(r.excluded[0]?.reason).toMatch(reason);
  });

  it("categorises on the conservative price", () => {
    const r = one(entry({ pricing: { prompt: "0.000002", completion: "0.000008", overrides: [{ min_prompt_tokens: 128_000, prompt: "0.000004" }] } }));
    expect(r.models[0]?.category).toBe("premium");
  });
});

describe("categorize", () => {
  it.each([
    [{ prompt: "0", completion: "0" }, "free"],
    [{ prompt: "0", completion: "0", image: "0", request: "0" }, "free"],
    [{ prompt: "0", completion: "0.000001" }, "economy"],
    [{ prompt: "0", completion: "0", image: "0.001" }, "economy"],
    [{ prompt: "0.000000285", completion: "0" }, "economy"], // $0.29925/M listed
    [{ prompt: "0.0000002858", completion: "0" }, "standard"], // $0.30009/M listed
    [{ prompt: "0.000002380", completion: "0" }, "standard"], // $2.499/M listed
    [{ prompt: "0.000002381", completion: "0" }, "premium"], // $2.50005/M listed
  ])("%j is %s", (pricing, category) => {
    expect(categorize(pricing)).toBe(category);
  });
});

describe("parseUpstreamModels never crashes on junk", () => {
  it("throws a typed error only for a document that is not a model list", () => {
    for (const doc of [null, 42, "models", [], { data: {} }, { models: [] }]) {
      expect(() => parseUpstreamModels(doc, NOW)).toThrow(FolioError);
    }
    expect(parseUpstreamModels({ data: [] }, NOW)).toEqual({ models: [], excluded: [] });
  });

  it("excludes junk entries with their index", () => {
    const r = parseUpstreamModels({ data: [null, 1, "x", [], { id: null }, entry()] }, NOW);
    expect(r.models).toHaveLength(1);
    expect(r.excluded.map((e) => e.id)).toEqual(["#0", "#1", "#2", "#3", "#4"]);
  });

  it("accepts any JSON value as an entry without throwing", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.jsonValue(), fc.record({ id: fc.string(), pricing: fc.jsonValue(), architecture: fc.jsonValue() }))), (data) => {
        const r = parseUpstreamModels({ data }, NOW);
        expect(r.models.length + r.excluded.length).toBe(data.length);
      }),
    );
  });

  it("survives mutated copies of real entries", () => {
    const real = loadModelsSnapshot().data.slice(0, 40);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 39 }), fc.constantFrom("pricing", "architecture", "id", "context_length", "top_provider", "expiration_date"), fc.jsonValue(), (i, key, value) => {
        const e = { ...real[i], [key]: value };
        const r = parseUpstreamModels({ data: [e] }, NOW);
        expect(r.models.length + r.excluded.length).toBe(1);
      }),
    );
  });
});
