/**
 * An account's webhook endpoints: made with a new signing secret (shown to
 * its owner once, stored sealed: secrets.ts), and rotated with an overlap in
 * which the old secret signs too.
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
