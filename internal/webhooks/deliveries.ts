/**
 * What an endpoint's owner does with its deliveries through the API
 * (docs/webhooks.md): reads every attempt, sends an event again, sends a
 * test event. A delivery queued here is a row of the outbox (outbox.ts) like
 * any other, attempted by the deliverer the same way.
 */
import type { Selectable } from "kysely";
import type { DB, WebhookAttemptsTable } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import type { EndpointRow } from "./endpoints.ts";

export type AttemptRow = Selectable<WebhookAttemptsTable>;

/**
 * The attempts to endpoint `endpointId`, newest first, after attempt
 * `startingAfter` when given: at most `limit`, and whether more follow.
 * Undefined when the endpoint has no attempt `startingAfter`.
 */
export async function listAttempts(db: DB, endpointId: string, page: { startingAfter?: string; limit: number }): Promise<{ rows: AttemptRow[]; hasMore: boolean } | undefined> {
  let q = db.selectFrom("webhook_attempts").selectAll().where("endpoint_id", "=", endpointId);
  if (page.startingAfter !== undefined) {
    const cursor = await db.selectFrom("webhook_attempts").select(["created_at", "id"]).where("id", "=", page.startingAfter).where("endpoint_id", "=", endpointId).executeTakeFirst();
    if (!cursor) return undefined;
    q = q.where((eb) => eb.or([eb("created_at", "<", cursor.created_at), eb.and([eb("created_at", "=", cursor.created_at), eb("id", "<", cursor.id)])]));
  }
  const rows = await q.orderBy("created_at", "desc").orderBy("id", "desc").limit(page.limit + 1).execute();
  return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
}

/** A delivery queued by the API: its id (whd_…), and the event's id and type. */
export interface QueuedDelivery {
  id: string;
  eventId: string;
  type: string;
}

/**
 * Queues event `eventId` for endpoint `endpointId` again: a new delivery of
 * the same event (its webhook-id and body as first queued). Undefined when
 * the event was never queued for the endpoint.
 */
export async function redeliverEvent(db: DB, endpointId: string, eventId: string): Promise<QueuedDelivery | undefined> {
  const sent = await db
    .selectFrom("webhook_deliveries")
    .select(["event_id", "type", "job_id", "sequence", "body", "account_id"])
    .where("endpoint_id", "=", endpointId)
    .where("event_id", "=", eventId)
    .orderBy("created_at")
    .executeTakeFirst();
  if (!sent) return undefined;
  const id = newId("whd");
  await db.insertInto("webhook_deliveries").values({ id, endpoint_id: endpointId, ...sent, status: "pending" }).execute();
  return { id, eventId: sent.event_id, type: sent.type };
}

/** The type of the event {@link queueTestEvent} sends, of no job. */
const TEST_EVENT = "webhook.test";

/** Queues a `webhook.test` event for `endpoint` (whatever types it takes): sequence 0, its data the endpoint's id. */
export async function queueTestEvent(db: DB, endpoint: Pick<EndpointRow, "id" | "account_id">): Promise<QueuedDelivery> {
  const eventId = newId("evt");
  const body = JSON.stringify({ id: eventId, type: TEST_EVENT, sequence: 0, created_at: Math.floor(Date.now() / 1000), data: { endpoint_id: endpoint.id } });
  const id = newId("whd");
  await db
    .insertInto("webhook_deliveries")
    .values({ id, endpoint_id: endpoint.id, account_id: endpoint.account_id, event_id: eventId, type: TEST_EVENT, job_id: null, sequence: 0, body, status: "pending" })
    .execute();
  return { id, eventId, type: TEST_EVENT };
}
