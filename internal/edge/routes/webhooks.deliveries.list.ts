/** GET /v1/webhook-endpoints/{id}/deliveries: every delivery attempt to an endpoint, newest first (docs/webhooks.md). */
import { Type } from "typebox";
import { unixSeconds } from "../../accounts/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { listAttempts, type AttemptRow } from "../../webhooks/index.ts";
import { NO_NUL, UnixSeconds } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, EndpointParams, ownedEndpoint, webhookRoute } from "./webhooks.shared.ts";

const Attempt = Type.Object({
  id: Type.String({ description: "wha_<id>" }),
  object: Type.Literal("webhook_attempt"),
  event_id: Type.String({ description: "The event's id: the webhook-id header of every attempt of it." }),
  type: Type.String(),
  attempt: Type.Integer({ description: "1 for the first attempt of a delivery." }),
  created_at: UnixSeconds,
  http_status: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's answer; null when none came." }),
  error: Type.Union([Type.String(), Type.Null()], { description: "What went wrong when no 2xx came: the network error, no answer within the time limit, a refused address." }),
  duration_ms: Type.Integer(),
});

const ListQuery = Type.Object({
  starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: "An attempt's id: the page starts with the next older attempt." })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: "Attempts per page, at most 100." }),
});

function attemptView(r: AttemptRow) {
  return {
    id: r.id,
    object: "webhook_attempt" as const,
    event_id: r.event_id,
    type: r.type,
    attempt: r.attempt,
    created_at: unixSeconds(r.created_at),
    http_status: r.http_status,
    error: r.error,
    duration_ms: r.duration_ms,
  };
}

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    `${ENDPOINTS_PATH}/:id/deliveries`,
    webhookRoute("read", {
      summary: "Every delivery attempt to a webhook endpoint, newest first",
      params: EndpointParams,
      querystring: ListQuery,
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(Attempt), has_more: Type.Boolean() }) },
    }),
    async (req) => {
      const endpoint = await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id);
      const page = await listAttempts(deps.db, endpoint.id, { startingAfter: req.query.starting_after, limit: req.query.limit });
      if (!page) throw new FolioError("invalid_request", `no attempt '${req.query.starting_after}' of this endpoint to start after`, { param: "starting_after" });
      return { object: "list" as const, data: page.rows.map(attemptView), has_more: page.hasMore };
    },
  );
}
