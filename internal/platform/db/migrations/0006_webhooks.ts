import { sql, type Kysely } from "kysely";

/**
 * Webhooks (docs/webhooks.md): an account's endpoints with their signing
 * secrets (encrypted, webhooks/secrets.ts), the outbox of deliveries (one
 * row an event and endpoint, written in the transaction that writes the
 * event) and every attempt of each.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("webhook_endpoints")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("url", "text", (c) => c.notNull())
    // The event types it receives, or ["*"].
    .addColumn("events", "jsonb", (c) => c.notNull())
    .addColumn("description", "text")
    .addColumn("disabled", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("disabled_reason", "text")
    .addColumn("secret", "text", (c) => c.notNull())
    // During a rotation's overlap the old secret signs too, until previous_secret_expires_at.
    .addColumn("previous_secret", "text")
    .addColumn("previous_secret_expires_at", "timestamptz")
    // Since when every attempt failed (null: the last one succeeded); five days of it disable the endpoint.
    .addColumn("failing_since", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("webhook_endpoints_account").on("webhook_endpoints").columns(["account_id", "created_at"]).execute();

  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("endpoint_id", "text", (c) => c.notNull().references("webhook_endpoints.id").onDelete("cascade"))
    .addColumn("account_id", "text", (c) => c.notNull())
    // The event: its id is the webhook-id of every attempt; its body is fixed when it is queued.
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("job_id", "text")
    .addColumn("sequence", "integer", (c) => c.notNull())
    .addColumn("body", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('pending','delivered','failed','merged')`))
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("next_attempt_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("lease_owner", "text")
    .addColumn("lease_expires_at", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("finished_at", "timestamptz")
    .execute();
  await sql`create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending'`.execute(db);
  await db.schema.createIndex("webhook_deliveries_order").on("webhook_deliveries").columns(["endpoint_id", "job_id", "sequence"]).execute();
  await db.schema.createIndex("webhook_deliveries_event").on("webhook_deliveries").columns(["endpoint_id", "event_id"]).execute();

  await db.schema
    .createTable("webhook_attempts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("delivery_id", "text", (c) => c.notNull().references("webhook_deliveries.id").onDelete("cascade"))
    .addColumn("endpoint_id", "text", (c) => c.notNull())
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("attempt", "integer", (c) => c.notNull())
    .addColumn("http_status", "integer")
    .addColumn("error", "text")
    .addColumn("duration_ms", "integer", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex("webhook_attempts_endpoint").on("webhook_attempts").columns(["endpoint_id", "created_at", "id"]).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("webhook_attempts").ifExists().execute();
  await db.schema.dropTable("webhook_deliveries").ifExists().execute();
  await db.schema.dropTable("webhook_endpoints").ifExists().execute();
}
