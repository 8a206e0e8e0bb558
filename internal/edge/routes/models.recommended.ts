import { Type } from "typebox";
import type { App, EdgeDeps } from "../types.ts";
import { errorResponses } from "../schemas.ts";
import { CatalogInfo, ModelEntry, catalogInfo, catalogView, modelEntry, publicRoute, strategiesByModel } from "./models.shared.ts";

const Strategy = Type.Object({
  strategy: Type.String(),
  alias: Type.String({ description: "The model id that selects the same model, folio/<strategy>." }),
  model: Type.String({ description: "What the strategy resolves to now." }),
  configured: Type.Array(Type.String(), { description: "Configured preference list, first present wins." }),
  fallback: Type.Boolean({ description: "True when no configured model is in the live catalog and the documented fallback applies." }),
  reason: Type.Optional(Type.String()),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/models/recommended",
    {
      config: publicRoute,
      schema: {
        summary: "Models that back a routing strategy now, and what each strategy resolves to",
        tags: ["Models"],
        response: {
          200: Type.Object({ object: Type.Literal("list"), data: Type.Array(ModelEntry), strategies: Type.Array(Strategy), folio: CatalogInfo }),
          ...errorResponses,
        },
      },
    },
    async (_req, reply) => {
      const view = await catalogView(deps, reply);
      const byModel = strategiesByModel(view);
      return {
        object: "list" as const,
        data: view.models.filter((m) => byModel.has(m.id)).map((m) => modelEntry(m, byModel)),
        strategies: view.strategies.map((s) => ({
          strategy: s.strategy,
          alias: `folio/${s.strategy}`,
          model: s.resolved,
          configured: s.configured,
          fallback: s.fallback,
          ...(s.reason ? { reason: s.reason } : {}),
        })),
        folio: catalogInfo(view),
      };
    },
  );
}
