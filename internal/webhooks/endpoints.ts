/**
 * An account's webhook endpoints: made with a new signing secret (shown to
 * its owner once, stored sealed: secrets.ts), found, listed, changed and
 * deleted, and rotated with an overlap in which the old secret signs too.
 */
import { sql, type Selectable } from "kysely";
import type { DB, WebhookEndpointsTable } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import type { SecretBox } from "./secrets.ts";
import { newSecret } from "./signing.ts";

export type EndpointRow = Selectable<WebhookEndpointsTable>;

export interface NewEndpoint {
  accountId: string;
  url: string;
  /** Event types, or ["*"] (every type). */
  events: readonly string[];
  description?: string | null;
}

/** Makes an endpoint; returns its row and its secret in clear (the only time it is). */
export async function createEndpoint(db: DB, box: SecretBox, e: NewEndpoint): Promise<{ endpoint: EndpointRow; secret: string }> {
  const id = newId("we");
  const secret = newSecret();
  const endpoint = await db
    .insertInto("webhook_endpoints")
    .values({ id, account_id: e.accountId, url: e.url, events: JSON.stringify(e.events), description: e.description ?? null, secret: box.seal(secret, id), previous_secret: null, previous_secret_expires_at: null, disabled_reason: null, failing_since: null })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { endpoint, secret };
}

/** Endpoint `id` of `accountId`; undefined when the account has no such endpoint. */
export async function findEndpoint(db: DB, accountId: string, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom("webhook_endpoints").selectAll().where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
}

/** The account's endpoints, oldest first. */
export async function listEndpoints(db: DB, accountId: string): Promise<EndpointRow[]> {
  return db.selectFrom("webhook_endpoints").selectAll().where("account_id", "=", accountId).orderBy("created_at").orderBy("id").execute();
}

/** What {@link updateEndpoint} changes: each field given, the others left as they are. */
export interface EndpointChange {
  url?: string;
  /** Event types, or ["*"] (every type). */
  events?: readonly string[];
  description?: string | null;
  disabled?: boolean;
}

/** Changes endpoint `id` of `accountId`; returns it as it is now, or undefined when the account has no such endpoint. */
export async function updateEndpoint(db: DB, accountId: string, id: string, c: EndpointChange): Promise<EndpointRow | undefined> {
  return db
    .updateTable("webhook_endpoints")
    .set({
      ...(c.url !== undefined ? { url: c.url } : {}),
      ...(c.events !== undefined ? { events: JSON.stringify(c.events) } : {}),
      ...(c.description !== undefined ? { description: c.description } : {}),
      // Enabled again: a fresh start (no failing streak); disabled by its owner: no reason of Folio's.
      ...(c.disabled !== undefined ? { disabled: c.disabled, disabled_reason: null, failing_since: null } : {}),
      updated_at: sql`now()`,
    })
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes endpoint `id` of `accountId`, its deliveries and attempts with it; false when the account has no such endpoint. */
export async function deleteEndpoint(db: DB, accountId: string, id: string): Promise<boolean> {
  const r = await db.deleteFrom("webhook_endpoints").where("id", "=", id).where("account_id", "=", accountId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/**
 * Gives endpoint `id` of `accountId` a new secret; the old one keeps signing
 * for `overlapSeconds` (every delivery then carries both signatures).
 * Undefined when the account has no such endpoint.
 */
export async function rotateSecret(db: DB, box: SecretBox, accountId: string, id: string, overlapSeconds: number): Promise<{ endpoint: EndpointRow; secret: string } | undefined> {
  const secret = newSecret();
  const endpoint = await db
    .updateTable("webhook_endpoints")
    .set({
      previous_secret: sql`secret`,
      previous_secret_expires_at: sql`now() + ${overlapSeconds} * interval '1 second'`,
      secret: box.seal(secret, id),
      updated_at: sql`now()`,
    })
    .where("id", "=", id)
    .where("account_id", "=", accountId)
    .returningAll()
    .executeTakeFirst();
  return endpoint ? { endpoint, secret } : undefined;
}
