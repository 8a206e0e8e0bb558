/**
 * What the webhook endpoint routes share: what they ask of a key, the
 * endpoint's wire shape, its path parameter, finding an account's endpoint,
 * and the answer of a queued delivery (docs/webhooks.md).
 */
import { Type } from "typebox";
import { unixSeconds } from "../../accounts/index.ts";
import { checkedClient } from "../../documents/index.ts";
import { JOB_EVENT_TYPES } from "../../jobs/index.ts";
import type { DB } from "../../platform/db/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { findEndpoint, type EndpointRow, type QueuedDelivery, type SecretBox } from "../../webhooks/index.ts";
import { NO_NUL, UnixSeconds, keyed } from "../schemas.ts";
import type { EdgeDeps } from "../types.ts";

export const ENDPOINTS_PATH = "/v1/webhook-endpoints";

/** A webhook route's options: a key with `admin` and webhooks:read (or webhooks:write, for `write`), under the Webhooks tag. */
export function webhookRoute<const S extends { response: Record<number, unknown> }>(access: "read" | "write", schema: S) {
  return keyed(["admin", `webhooks:${access}`], { tags: ["Webhooks"], ...schema });
}

/** The event types an endpoint may take; `*` is every one. */
export const EVENT_CHOICES = [...JOB_EVENT_TYPES, "*"] as const;

export const EndpointUrl = Type.String({ minLength: 1, maxLength: 2048, pattern: NO_NUL, description: "Where events are POSTed: http or https, a public address (the rules of document URLs, docs/webhooks.md)." });
export const EndpointEvents = Type.Array(Type.String({ enum: [...EVENT_CHOICES] }), {
  minItems: 1,
  maxItems: EVENT_CHOICES.length,
  uniqueItems: true,
  description: "The job event types it receives, or [\"*\"] for every type (the default).",
});
export const EndpointDescription = Type.Union([Type.String({ maxLength: 500, pattern: NO_NUL }), Type.Null()], { description: "Your note about the endpoint." });

export const WebhookEndpoint = Type.Object(
  {
    id: Type.String({ description: "we_<id>" }),
    object: Type.Literal("webhook_endpoint"),
    url: Type.String(),
    events: Type.Array(Type.String()),
    description: Type.Union([Type.String(), Type.Null()]),
    disabled: Type.Boolean(),
    disabled_reason: Type.Union([Type.String(), Type.Null()], { description: "Why Folio disabled it (every delivery failing for 5 days); null when it is enabled or you disabled it." }),
    previous_secret_expires_at: Type.Union([UnixSeconds, Type.Null()], { description: "Until then the secret before the last rotation signs too." }),
    created_at: UnixSeconds,
    updated_at: UnixSeconds,
  },
  { description: "A webhook endpoint (docs/webhooks.md). Its secret is shown once, when it is made or rotated." },
);

export const EndpointParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: "The endpoint's id (we_…)." }) });

/** The signing secret, in the answers that show it (made, rotated). */
export const EndpointSecret = Type.String({ description: "whsec_… : the signing secret, shown this once (docs/webhooks-signing.md)." });

/** ["*"] stays as it is; otherwise the types in a stable order. */
export const normalizeEvents = (events: readonly string[] | undefined) => (!events || events.includes("*") ? ["*"] : [...events].sort());

export function endpointView(r: EndpointRow) {
  const overlap = r.previous_secret_expires_at && r.previous_secret_expires_at.getTime() > Date.now() ? unixSeconds(r.previous_secret_expires_at) : null;
  return {
    id: r.id,
    object: "webhook_endpoint" as const,
    url: r.url,
    events: r.events,
    description: r.description,
    disabled: r.disabled,
    disabled_reason: r.disabled_reason,
    previous_secret_expires_at: overlap,
    created_at: unixSeconds(r.created_at),
    updated_at: unixSeconds(r.updated_at),
  };
}

/** The account's endpoint, or a 404. */
export async function ownedEndpoint(db: DB, accountId: string, id: string): Promise<EndpointRow> {
  return (await findEndpoint(db, accountId, id)) ?? endpointNotFound(id);
}

/** The 404 of an endpoint the account does not have (or no longer has). */
export function endpointNotFound(id: string): never {
  throw new FolioError("not_found", `no webhook endpoint '${id}' in this account`, { param: "id" });
}

/** The answer (202) of a route that queues a delivery. */
export const QueuedDeliveryAnswer = Type.Object({
  id: Type.String({ description: "whd_<id>: the delivery queued." }),
  object: Type.Literal("webhook_delivery"),
  event_id: Type.String(),
  type: Type.String(),
  status: Type.Literal("pending"),
});

export function queuedView(q: QueuedDelivery) {
  return { id: q.id, object: "webhook_delivery" as const, event_id: q.eventId, type: q.type, status: "pending" as const };
}

/** The secret box, or a 503 naming what the operator must set. */
export function secretBoxOf(deps: EdgeDeps): SecretBox {
  if (!deps.webhooks.secrets) throw new FolioError("service_unavailable", "webhooks are not configured on this server: its operator must set FOLIO_WEBHOOK_SECRET_KEY (docs/webhooks.md)");
  return deps.webhooks.secrets;
}

/** Refuses (400, param `url`) a URL Folio would not deliver to: the rules of document URLs, checked now and again at every delivery. */
export async function checkEndpointUrl(deps: EdgeDeps, url: string): Promise<void> {
  const { client } = await checkedClient(url, deps.documents.fetch, "url", AbortSignal.timeout(deps.documents.fetch.timeoutMs));
  await client.destroy().catch(() => undefined);
}
