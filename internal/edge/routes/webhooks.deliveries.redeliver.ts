/** POST /v1/webhook-endpoints/{id}/events/{event_id}/redeliver: sends an event to an endpoint again, the same webhook-id and body (docs/webhooks.md). */
import { Type } from "typebox";
import { FolioError } from "../../platform/errors/index.ts";
import { redeliverEvent } from "../../webhooks/index.ts";
import { NO_NUL } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, EndpointParams, QueuedDeliveryAnswer, ownedEndpoint, queuedView, webhookRoute } from "./webhooks.shared.ts";

const Params = Type.Object({ ...EndpointParams.properties, event_id: Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: "The event's id (evt_…)." }) });

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    `${ENDPOINTS_PATH}/:id/events/:event_id/redeliver`,
    webhookRoute("write", {
      summary: "Send an event to a webhook endpoint again (the same webhook-id and body)",
      params: Params,
      response: { 202: QueuedDeliveryAnswer },
    }),
    async (req, reply) => {
      const endpoint = await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id);
      const queued = await redeliverEvent(deps.db, endpoint.id, req.params.event_id);
      if (!queued) throw new FolioError("not_found", `event '${req.params.event_id}' was never queued for this endpoint`, { param: "event_id" });
      reply.code(202);
      return queuedView(queued);
    },
  );
}
