import { sql, type Kysely } from "kysely";

/**
 * Idempotency keys of paid requests (docs/idempotency.md): one row per
 * account and key, claimed by the request that runs, and holding its final
 * answer once it has one (written in the transaction of its usage row and
 * debit when the request was billed).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("idempotency_keys")
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("key", "text", (c) => c.notNull().check(sql`length(key) between 1 and 255`))
    .addColumn("fingerprint", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('running','done')`))
    .addColumn("owner", "text", (c) => c.notNull())
    .addColumn("locked_until", "timestamptz", (c) => c.notNull())
    .addColumn("request_id", "text")
    .addColumn("response_status", "integer")
    .addColumn("response_body", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("idempotency_keys_pkey", ["account_id", "key"])
    .execute();
  await db.schema.createIndex("idempotency_keys_expiry_idx").on("idempotency_keys").column("expires_at").execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("idempotency_keys").ifExists().execute();
}
