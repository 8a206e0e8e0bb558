import { sql, type Kysely } from "kysely";

/** Accounts, API keys, holds, the append-only ledger and usage logs. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("accounts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("email", "text", (c) => c.notNull().unique())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("plan", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("requests_per_minute", "integer", (c) => c.notNull().check(sql`requests_per_minute > 0`))
    .addColumn("requests_per_day", "integer", (c) => c.notNull().check(sql`requests_per_day > 0`))
    .addColumn("balance_cents", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("held_cents", "bigint", (c) => c.notNull().defaultTo(0).check(sql`held_cents >= 0`))
    .addColumn("auto_recharge_enabled", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("auto_recharge_threshold_cents", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("auto_recharge_amount_cents", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable("api_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("key_hash", "text", (c) => c.notNull().unique())
    .addColumn("prefix", "text", (c) => c.notNull())
    .addColumn("permissions", sql`text[]`, (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("last_used_at", "timestamptz")
    .addColumn("expires_at", "timestamptz")
    .addColumn("revoked_at", "timestamptz")
    .execute();
  await db.schema.createIndex("api_keys_account_idx").on("api_keys").columns(["account_id", "created_at"]).execute();

  await db.schema
    .createTable("holds")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("api_key_id", "text")
    .addColumn("amount_cents", "bigint", (c) => c.notNull().check(sql`amount_cents >= 0`))
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('held','settled','released')`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("expires_at", "timestamptz", (c) => c.notNull())
    .addColumn("closed_at", "timestamptz")
    .execute();
  await sql`create index holds_open_idx on holds (expires_at) where status = 'held'`.execute(db);

  await db.schema
    .createTable("ledger_entries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('credit','debit')`))
    .addColumn("amount_cents", "bigint", (c) => c.notNull())
    .addColumn("provider_cost_cents", "numeric")
    .addColumn("platform_fee_cents", "numeric")
    .addColumn("balance_after_cents", "bigint", (c) => c.notNull())
    .addColumn("request_id", "text")
    .addColumn("description", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint("ledger_sign", sql`(kind = 'credit' and amount_cents > 0) or (kind = 'debit' and amount_cents <= 0)`)
    .execute();
  await db.schema.createIndex("ledger_account_idx").on("ledger_entries").columns(["account_id", "created_at"]).execute();
  // The ledger is append-only: the database itself refuses to change history.
  await sql`
    create function ledger_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'ledger_entries is append-only';
    end $$`.execute(db);
  await sql`
    create trigger ledger_no_update before update or delete on ledger_entries
    for each row execute function ledger_append_only()`.execute(db);

  await db.schema
    .createTable("usage_logs")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("api_key_id", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("endpoint", "text", (c) => c.notNull())
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('success','error')`))
    .addColumn("error_code", "text")
    .addColumn("prompt_tokens", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("completion_tokens", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("tokens_used", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("pages_processed", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("provider_cost_cents", "numeric", (c) => c.notNull().defaultTo(0))
    .addColumn("platform_fee_cents", "numeric", (c) => c.notNull().defaultTo(0))
    .addColumn("cost_cents", "numeric", (c) => c.notNull().defaultTo(0))
    .addColumn("processing_time_ms", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex("usage_account_time_idx").on("usage_logs").columns(["account_id", "created_at"]).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ["usage_logs", "ledger_entries", "holds", "api_keys", "accounts"]) {
    await db.schema.dropTable(t).ifExists().execute();
  }
  await sql`drop function if exists ledger_append_only()`.execute(db);
}
