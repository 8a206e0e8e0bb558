import { Type } from "typebox";
import { PLATFORM_FEE_PERCENT } from "../../billing/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { errorResponses } from "../schemas.ts";
import { CatalogInfo, ModelEntry, catalogInfo, catalogView, modelEntry, publicRoute, strategiesByModel } from "./models.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/models",
    {
      config: publicRoute,
      schema: {
        summary: `The live catalog of vision models, prices with the ${PLATFORM_FEE_PERCENT}% platform fee`,
        description: "Answers without a key (limited per client address); a key that is sent must be valid. Text-only, unavailable and unpriced models are excluded.",
        tags: ["Models"],
        response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(ModelEntry), folio: CatalogInfo }), ...errorResponses },
      },
    },
    async (_req, reply) => {
      const view = await catalogView(deps, reply);
      const byModel = strategiesByModel(view);
      return { object: "list" as const, data: view.models.map((m) => modelEntry(m, byModel)), folio: catalogInfo(view) };
    },
  );
}
