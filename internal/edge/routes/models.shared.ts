/**
 * How a catalog model is shown by /v1/models*: the common model-list entry
 * ({id, object: "model", created, owned_by}) that OpenAI-compatible clients
 * read, plus the `folio` extension object (docs/models.md).
 */
import { Type } from "typebox";
import { PLATFORM_FEE_PERCENT, listedPrices, pricesOf } from "../../billing/index.ts";
import type { CatalogModel, CatalogView } from "../../contracts/index.ts";
import { extractionOf } from "../services.ts";
import type { EdgeDeps } from "../types.ts";

const PriceSet = Type.Object(
  {
    prompt: Type.String({ description: "Dollars per prompt token." }),
    completion: Type.String({ description: "Dollars per completion token." }),
    image: Type.Optional(Type.String({ description: "Dollars per input image." })),
    request: Type.Optional(Type.String({ description: "Dollars per request." })),
    page: Type.Optional(Type.String({ description: "Dollars per page (local engines)." })),
  },
  { additionalProperties: false },
);

export const ModelEntry = Type.Object({
  id: Type.String(),
  object: Type.Literal("model"),
  created: Type.Integer(),
  owned_by: Type.String(),
  folio: Type.Object({
    name: Type.String(),
    description: Type.String(),
    source: Type.String({ description: "upstream or local" }),
    category: Type.String(),
    context_length: Type.Integer(),
    max_completion_tokens: Type.Union([Type.Integer(), Type.Null()]),
    input_kinds: Type.Array(Type.String()),
    languages: Type.Optional(Type.Array(Type.String(), { description: "Local engines: the languages they read (ISO 639-1 codes, or the engine's own names)." })),
    recommended: Type.Boolean({ description: "True when a routing strategy resolves to this model now." }),
    strategies: Type.Array(Type.String(), { description: "Strategies that resolve to this model now." }),
    pricing: Type.Object({
      currency: Type.Literal("USD"),
      platform_fee_percentage: Type.String(),
      listed: PriceSet,
      provider: PriceSet,
    }),
  }),
});

export function strategiesByModel(view: CatalogView): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const s of view.strategies) m.set(s.resolved, [...(m.get(s.resolved) ?? []), s.strategy]);
  return m;
}

export function modelEntry(model: CatalogModel, byModel: Map<string, string[]>) {
  const strategies = byModel.get(model.id) ?? [];
  return {
    id: model.id,
    object: "model" as const,
    created: model.created,
    owned_by: model.ownedBy,
    folio: {
      name: model.name,
      description: model.description,
      source: model.source,
      category: model.category,
      context_length: model.contextLength,
      max_completion_tokens: model.maxCompletionTokens,
      input_kinds: model.inputKinds,
      ...(model.languages ? { languages: model.languages } : {}),
      recommended: strategies.length > 0,
      strategies,
      pricing: {
        currency: "USD" as const,
        platform_fee_percentage: PLATFORM_FEE_PERCENT,
        listed: listedPrices(model.pricing),
        provider: pricesOf(model.pricing),
      },
    },
  };
}

export const CatalogInfo = Type.Object({
  fetched_at: Type.Union([Type.Integer(), Type.Null()], { description: "When the upstream list was last read (Unix seconds); null when never." }),
  age_seconds: Type.Union([Type.Number(), Type.Null()]),
  stale: Type.Boolean({ description: "True when the last refresh failed and an older list is served." }),
  upstream_configured: Type.Boolean(),
});

export function catalogInfo(view: CatalogView) {
  return {
    fetched_at: view.fetchedAtMs ? Math.floor(view.fetchedAtMs / 1000) : null,
    age_seconds: view.ageSeconds,
    stale: view.stale,
    upstream_configured: view.upstreamConfigured,
  };
}

/** The catalog, with its age in a response header too. */
export async function catalogView(deps: EdgeDeps, reply: { header(k: string, v: string): unknown }): Promise<CatalogView> {
  const view = await extractionOf(deps).listModels();
  if (view.ageSeconds !== null) reply.header("x-folio-catalog-age", String(Math.round(view.ageSeconds)));
  return view;
}

export const publicRoute = { permissions: ["models:read"] as const, anonymous: true };
