import { Type } from "typebox";
import type { App, EdgeDeps } from "../types.ts";
import { errorResponses } from "../schemas.ts";
import { CatalogInfo, ModelEntry, catalogInfo, catalogView, modelEntry, publicRoute, strategiesByModel } from "./models.shared.ts";

/** Category order and meaning (docs/models.md). */
export const CATEGORY_DESCRIPTIONS: Record<string, string> = {
  premium: "highest listed prompt prices: the most capable general vision models",
  standard: "mid-priced general vision models",
  economy: "low-priced vision models",
  free: "models the provider lists at no cost (a minimum charge still applies)",
  local: "OCR engines that run on Folio's own machines",
};

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/models/categories",
    {
      config: publicRoute,
      schema: {
        summary: "The current catalog grouped by category",
        tags: ["Models"],
        response: {
          200: Type.Object({
            object: Type.Literal("list"),
            data: Type.Array(
              Type.Object({ id: Type.String(), object: Type.Literal("model.category"), description: Type.String(), model_count: Type.Integer(), models: Type.Array(ModelEntry) }),
            ),
            folio: CatalogInfo,
          }),
          ...errorResponses,
        },
      },
    },
    async (_req, reply) => {
      const view = await catalogView(deps, reply);
      const byModel = strategiesByModel(view);
      const groups = new Map<string, typeof view.models>();
      for (const m of view.models) groups.set(m.category, [...(groups.get(m.category) ?? []), m]);
      const order = Object.keys(CATEGORY_DESCRIPTIONS);
      const ids = [...groups.keys()].sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99) || a.localeCompare(b));
      return {
        object: "list" as const,
        data: ids.map((id) => ({
          id,
          object: "model.category" as const,
          description: CATEGORY_DESCRIPTIONS[id] ?? id,
          model_count: groups.get(id)!.length,
          models: groups.get(id)!.map((m) => modelEntry(m, byModel)),
        })),
        folio: catalogInfo(view),
      };
    },
  );
}
