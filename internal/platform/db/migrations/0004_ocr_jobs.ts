import { sql, type Kysely } from "kysely";

/**
 * Durable OCR jobs (docs/adr/0005-durable-jobs-queue.md): the job, its
 * document in chunks, its page ranges (the units workers lease), the pages
 * read, and the job's events with a gapless sequence.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("ocr_jobs")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id").onDelete("cascade"))
    .addColumn("api_key_id", "text")
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('queued','running','succeeded','failed','cancelled')`))
    .addColumn("model", "text", (c) => c.notNull())
    // The request as accepted (mime type, options, pages), without the document.
    .addColumn("request", "jsonb", (c) => c.notNull())
    .addColumn("metadata", "jsonb", (c) => c.notNull())
    .addColumn("page_count", "integer")
    .addColumn("pages_completed", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("pages_failed", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("document_bytes", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("hold_id", "text")
    // The model component: exact provider cost of the pages read so far (cents, fractional) and the
    // whole cents debited for it (the pricing rule applied to that cost), with the tokens.
    .addColumn("provider_cost_cents", "numeric", (c) => c.notNull().defaultTo(0))
    .addColumn("model_charged_cents", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("prompt_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("completion_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    // The conversion component of an office document, charged once when it is converted.
    .addColumn("conversion_cost_cents", "numeric")
    .addColumn("conversion_charged_cents", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("conversion_ms", "integer")
    .addColumn("error_code", "text")
    .addColumn("error_message", "text")
    // The sequence number the job's next event gets.
    .addColumn("next_sequence", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("started_at", "timestamptz")
    .addColumn("finished_at", "timestamptz")
    .addColumn("expires_at", "timestamptz")
    .execute();
  await db.schema.createIndex("ocr_jobs_account_idx").on("ocr_jobs").columns(["account_id", "created_at"]).execute();
  await sql`create index ocr_jobs_active_idx on ocr_jobs (created_at) where status in ('queued','running')`.execute(db);
  await sql`create index ocr_jobs_expiry_idx on ocr_jobs (expires_at) where expires_at is not null`.execute(db);

  await db.schema
    .createTable("ocr_job_chunks")
    .addColumn("job_id", "text", (c) => c.notNull().references("ocr_jobs.id").onDelete("cascade"))
    .addColumn("seq", "integer", (c) => c.notNull())
    .addColumn("data", "bytea", (c) => c.notNull())
    .addPrimaryKeyConstraint("ocr_job_chunks_pkey", ["job_id", "seq"])
    .execute();

  await db.schema
    .createTable("ocr_job_ranges")
    .addColumn("job_id", "text", (c) => c.notNull().references("ocr_jobs.id").onDelete("cascade"))
    .addColumn("first_page", "integer", (c) => c.notNull().check(sql`first_page >= 1`))
    .addColumn("last_page", "integer", (c) => c.notNull())
    // Denormalised from the job, so the fair claim needs no join to count an account's leases.
    .addColumn("account_id", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('pending','leased','done')`))
    .addColumn("lease_owner", "text")
    .addColumn("lease_expires_at", "timestamptz")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint("ocr_job_ranges_pkey", ["job_id", "first_page"])
    .addCheckConstraint("ocr_job_ranges_order", sql`last_page >= first_page`)
    .execute();
  await sql`create index ocr_job_ranges_open_idx on ocr_job_ranges (account_id, job_id, first_page) where status <> 'done'`.execute(db);

  await db.schema
    .createTable("ocr_job_pages")
    .addColumn("job_id", "text", (c) => c.notNull().references("ocr_jobs.id").onDelete("cascade"))
    .addColumn("page_number", "integer", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('ok','failed')`))
    // The page as /v1/ocr's result.pages has it (or the error of a failed page).
    .addColumn("page", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("ocr_job_pages_pkey", ["job_id", "page_number"])
    .execute();

  await db.schema
    .createTable("ocr_job_events")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("job_id", "text", (c) => c.notNull().references("ocr_jobs.id").onDelete("cascade"))
    .addColumn("sequence", "integer", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("data", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("ocr_job_events_sequence_key", ["job_id", "sequence"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ["ocr_job_events", "ocr_job_pages", "ocr_job_ranges", "ocr_job_chunks", "ocr_jobs"]) {
    await db.schema.dropTable(t).ifExists().execute();
  }
}
