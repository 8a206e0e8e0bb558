/** A webhook endpoint's delivery attempts, sending an event again, and a test event (docs/webhooks.md). */
import { Type } from "typebox";
import { unixSeconds } from "../../accounts/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { newId } from "../../platform/ids/index.ts";
import { NO_NUL, UnixSeconds, keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, EndpointParams, ownedEndpoint } from "./webhooks.shared.ts";

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

const Queued = Type.Object({
  id: Type.String({ description: "whd_<id>: the delivery queued." }),
  object: Type.Literal("webhook_delivery"),
  event_id: Type.String(),
  type: Type.String(),
  status: Type.Literal("pending"),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    `${ENDPOINTS_PATH}/:id/deliveries`,
    keyed(["admin", "webhooks:read"], {
      summary: "Every delivery attempt to a webhook endpoint, newest first",
      tags: ["Webhooks"],
      params: EndpointParams,
      querystring: ListQuery,
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(Attempt), has_more: Type.Boolean() }) },
    }),
    async (req) => {
      const endpoint = await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id);
      let q = deps.db.selectFrom("webhook_attempts").selectAll().where("endpoint_id", "=", endpoint.id);
      if (req.query.starting_after !== undefined) {
        const cursor = await deps.db.selectFrom("webhook_attempts").select(["created_at", "id"]).where("id", "=", req.query.starting_after).where("endpoint_id", "=", endpoint.id).executeTakeFirst();
        if (!cursor) throw new FolioError("invalid_request", `no attempt '${req.query.starting_after}' of this endpoint to start after`, { param: "starting_after" });
        q = q.where((eb) => eb.or([eb("created_at", "<", cursor.created_at), eb.and([eb("created_at", "=", cursor.created_at), eb("id", "<", cursor.id)])]));
      }
      const rows = await q.orderBy("created_at", "desc").orderBy("id", "desc").limit(req.query.limit + 1).execute();
      return {
        object: "list" as const,
        data: rows.slice(0, req.query.limit).map((r) => ({
          id: r.id,
          object: "webhook_attempt" as const,
          event_id: r.event_id,
          type: r.type,
          attempt: r.attempt,
          created_at: unixSeconds(r.created_at),
          http_status: r.http_status,
          error: r.error,
          duration_ms: r.duration_ms,
        })),
        has_more: rows.length > req.query.limit,
      };
    },
  );

  app.post(
    `${ENDPOINTS_PATH}/:id/events/:event_id/redeliver`,
    keyed(["admin", "webhooks:write"], {
      summary: "Send an event to a webhook endpoint again (the same webhook-id and body)",
      tags: ["Webhooks"],
      params: Type.Object({ ...EndpointParams.properties, event_id: Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: "The event's id (evt_…)." }) }),
      response: { 202: Queued },
    }),
    async (req, reply) => {
      const endpoint = await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id);
      const sent = await deps.db
        .selectFrom("webhook_deliveries")
        .select(["event_id", "type", "job_id", "sequence", "body", "account_id"])
        .where("endpoint_id", "=", endpoint.id)
        .where("event_id", "=", req.params.event_id)
        .orderBy("created_at")
        .executeTakeFirst();
      if (!sent) throw new FolioError("not_found", `event '${req.params.event_id}' was never queued for this endpoint`, { param: "event_id" });
      const id = newId("whd");
      await deps.db.insertInto("webhook_deliveries").values({ id, endpoint_id: endpoint.id, ...sent, status: "pending" }).execute();
      reply.code(202);
      return { id, object: "webhook_delivery" as const, event_id: sent.event_id, type: sent.type, status: "pending" as const };
    },
  );

  app.post(
    `${ENDPOINTS_PATH}/:id/test`,
    keyed(["admin", "webhooks:write"], {
      summary: "Send a webhook.test event to a webhook endpoint",
      tags: ["Webhooks"],
      params: EndpointParams,
      response: { 202: Queued },
    }),
    async (req, reply) => {
      const endpoint = await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id);
      const eventId = newId("evt");
      const body = JSON.stringify({ id: eventId, type: "webhook.test", sequence: 0, created_at: Math.floor(Date.now() / 1000), data: { endpoint_id: endpoint.id } });
      const id = newId("whd");
      await deps.db
        .insertInto("webhook_deliveries")
        .values({ id, endpoint_id: endpoint.id, account_id: endpoint.account_id, event_id: eventId, type: "webhook.test", job_id: null, sequence: 0, body, status: "pending" })
        .execute();
      reply.code(202);
      return { id, object: "webhook_delivery" as const, event_id: eventId, type: "webhook.test", status: "pending" as const };
    },
  );
}
