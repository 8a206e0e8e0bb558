import { Type } from "typebox";
import { Decimal, listedPerMillionTokens } from "../../billing/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { errorResponses } from "../schemas.ts";
import { CatalogInfo, catalogInfo, catalogView, publicRoute } from "./models.shared.ts";

const Spread = Type.Union([Type.Object({ min: Type.String(), median: Type.String(), max: Type.String() }), Type.Null()]);

/** min/median/max of listed prices (with fee) in dollars per million tokens; null when no model has one. */
function spread(values: Decimal[]) {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a.comparedTo(b));
  const mid = s.length % 2 ? s[(s.length - 1) / 2]! : s[s.length / 2 - 1]!.add(s[s.length / 2]!).div(2);
  return { min: s[0]!.toFixed(), median: mid.toFixed(), max: s[s.length - 1]!.toFixed() };
}

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/models/stats",
    {
      config: publicRoute,
      schema: {
        summary: "Aggregate figures of the current catalog",
        tags: ["Models"],
        response: {
          200: Type.Object({
            object: Type.Literal("models.stats"),
            total_models: Type.Integer(),
            by_source: Type.Record(Type.String(), Type.Integer()),
            by_category: Type.Record(Type.String(), Type.Integer()),
            by_input_kind: Type.Record(Type.String(), Type.Integer()),
            listed_price_per_million_tokens: Type.Object({ prompt: Spread, completion: Spread }, { description: "Upstream models, dollars, with the platform fee." }),
            folio: CatalogInfo,
          }),
          ...errorResponses,
        },
      },
    },
    async (_req, reply) => {
      const view = await catalogView(deps, reply);
      const count = (key: (m: (typeof view.models)[number]) => string[]) => {
        const out: Record<string, number> = {};
        for (const m of view.models) for (const k of key(m)) out[k] = (out[k] ?? 0) + 1;
        return out;
      };
      const upstream = view.models.filter((m) => m.source === "upstream");
      return {
        object: "models.stats" as const,
        total_models: view.models.length,
        by_source: count((m) => [m.source]),
        by_category: count((m) => [m.category]),
        by_input_kind: count((m) => m.inputKinds),
        listed_price_per_million_tokens: {
          prompt: spread(upstream.map((m) => listedPerMillionTokens(m.pricing.prompt))),
          completion: spread(upstream.map((m) => listedPerMillionTokens(m.pricing.completion))),
        },
        folio: catalogInfo(view),
      };
    },
  );
}
