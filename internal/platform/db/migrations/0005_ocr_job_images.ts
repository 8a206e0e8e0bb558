import type { Kysely } from "kysely";

/**
 * The page images of a durable job's office document (docs/jobs.md): the
 * document is converted once, by the worker that takes its conversion, and
 * its pages are kept here, 200-DPI PNG, until the job ends; the job's ranges
 * then read them like a PDF's pages. `position` counts the pages converted
 * (1…n, what ranges count); `page_number` is the page in the document.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("ocr_job_images")
    .addColumn("job_id", "text", (c) => c.notNull().references("ocr_jobs.id").onDelete("cascade"))
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("page_number", "integer", (c) => c.notNull())
    .addColumn("png", "bytea", (c) => c.notNull())
    .addPrimaryKeyConstraint("ocr_job_images_pkey", ["job_id", "position"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable("ocr_job_images").ifExists().execute();
}
