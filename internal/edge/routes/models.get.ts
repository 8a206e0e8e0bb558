import { Type } from "typebox";
import { FolioError } from "../../platform/errors/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { errorResponses } from "../schemas.ts";
import { ModelEntry, catalogView, modelEntry, publicRoute, strategiesByModel } from "./models.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/models/*",
    {
      config: publicRoute,
      schema: {
        summary: "One model of the live catalog (ids contain '/', e.g. /v1/models/openai/gpt-4.1)",
        tags: ["Models"],
        params: Type.Object({ "*": Type.String({ minLength: 1, maxLength: 300 }) }),
        response: { 200: ModelEntry, ...errorResponses },
      },
    },
    async (req, reply) => {
      const id = req.params["*"];
      const view = await catalogView(deps, reply);
      const model = view.models.find((m) => m.id === id);
      if (!model) throw new FolioError("not_found", `model '${id}' is not in the current catalog; see GET /v1/models`, { param: "model_id" });
      return modelEntry(model, strategiesByModel(view));
    },
  );
}
