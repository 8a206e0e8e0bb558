/** POST /v1/webhook-endpoints/{id}/test: sends a webhook.test event to an endpoint (docs/webhooks.md). */
import { queueTestEvent } from "../../webhooks/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, EndpointParams, QueuedDeliveryAnswer, ownedEndpoint, queuedView, webhookRoute } from "./webhooks.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    `${ENDPOINTS_PATH}/:id/test`,
    webhookRoute("write", { summary: "Send a webhook.test event to a webhook endpoint", params: EndpointParams, response: { 202: QueuedDeliveryAnswer } }),
    async (req, reply) => {
      const endpoint = await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id);
      const queued = await queueTestEvent(deps.db, endpoint);
      reply.code(202);
      return queuedView(queued);
    },
  );
}
