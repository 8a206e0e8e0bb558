/** DELETE /v1/webhook-endpoints/{id}: deletes an endpoint, its pending deliveries with it (docs/webhooks.md). */
import { Type } from "typebox";
import { deleteEndpoint } from "../../webhooks/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, EndpointParams, ownedEndpoint, webhookRoute } from "./webhooks.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.delete(
    `${ENDPOINTS_PATH}/:id`,
    webhookRoute("write", {
      summary: "Delete a webhook endpoint (its pending deliveries with it)",
      params: EndpointParams,
      response: { 200: Type.Object({ id: Type.String(), object: Type.Literal("webhook_endpoint"), deleted: Type.Literal(true) }) },
    }),
    async (req) => {
      const accountId = principalOf(req).accountId;
      await ownedEndpoint(deps.db, accountId, req.params.id);
      await deleteEndpoint(deps.db, accountId, req.params.id);
      return { id: req.params.id, object: "webhook_endpoint" as const, deleted: true as const };
    },
  );
}
