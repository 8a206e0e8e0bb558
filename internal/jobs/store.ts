/**
 * Durable OCR jobs in Postgres: a job and its document are written when it
 * is accepted; a worker's range of pages is stored with its charge, its
 * progress and, for the last range, the end of the job, in one transaction
 * (docs/adr/0005-durable-jobs-queue.md). A range stored twice (a worker that
 * lost its lease finishing after the one that took it over) stores and
 * charges nothing the second time.
 */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { Decimal, chargeJobPages, closeJobBilling, jobCharge, takeHold, type HoldBasis, type IdempotencyClaim, type IdempotencyStore, type StoredAnswer } from "../billing/index.ts";
import type { ExtractOptions, Table } from "../contracts/index.ts";
import { tableOf } from "../extraction/client.ts";
import type { Database, OcrJobsTable } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { newId } from "../platform/ids/index.ts";
import { appendEvent, type JobEventType } from "./events.ts";
import { putDocument, type DocumentStore, type JobDocumentInput } from "./blobs.ts";
import { addRanges, finishRange, openRanges, type LeasedRange } from "./queue.ts";

type Db = Kysely<Database>;
type Trx = Transaction<Database>;
export type JobRow = Selectable<OcrJobsTable>;
export type JobStatus = OcrJobsTable["status"];

/** The usage log's endpoint of a job. */
export const JOBS_ENDPOINT = "/v1/ocr/jobs";

/** What a job was asked to do, kept with it (everything of the request but the document). */
export interface JobRequest {
  mime_type: string;
  /** The `/v1/ocr` options as given (echoed to the client). */
  options: Record<string, unknown>;
  /** The same options as the extraction service takes them. */
  extract: ExtractOptions;
  /** The `pages` selection as given. */
  pages?: string;
  /** The document pages the job reads, in order, when a selection chose them (ranges count positions in it). */
  selected?: number[];
  /**
   * How the worker makes its pages: the document's kind as sniffed, and
   * `pdf` for an office document once converted (convert.ts: its PDF is then
   * the job's document).
   */
  kind: "pdf" | "image" | "office";
  /** Set when an office document was converted and its PDF replaced it (`mime_type` stays the office type sent). */
  converted?: true;
  /** The uploaded file's name (office documents: for the conversion's logs). */
  filename?: string;
  /** What the job's hold was computed from; an office document's hold is set again from it once its pages are counted. */
  holdBasis: HoldBasis;
}

export interface NewJob {
  accountId: string;
  apiKeyId: string | null;
  model: string;
  request: JobRequest;
  metadata: Record<string, string>;
  /** The document: bytes, or a file it was streamed to (read into the database 1 MiB at a time, or moved into the files store). */
  document: JobDocumentInput;
  /** Where the document is kept (blobs.ts). */
  store: DocumentStore;
  /** Pages to read when known at once (PDFs, images); null for an office document until converted. */
  pageCount: number | null;
  /** The hold for the whole job, taken in the transaction that writes it (a 402 when the balance is not there). */
  hold: { cents: number; ttlMs: number } | null;
  rangePages: number;
  /** Stored, in the same transaction, as the answer of the request's Idempotency-Key (the job's id given). */
  idempotency?: { store: IdempotencyStore; claim: IdempotencyClaim; answer: (job: JobRow) => Promise<StoredAnswer> };
}

/** Thrown by {@link insertJob} when the account's available balance cannot cover the job's hold. */
function insufficient(cents: number): FolioError {
  return new FolioError("insufficient_credits", `insufficient credits: this job needs ${cents} cents of available balance`, { extra: { required_cents: cents } });
}

/**
 * Writes a queued job in one transaction: its hold, its document (in
 * chunks), its ranges (when its page count is known; an office document
 * gets one range, its conversion, until its pages are counted) and the
 * Idempotency-Key's answer. Returns its id.
 */
export async function insertJob(db: Db, job: NewJob): Promise<string> {
  const id = newId("job");
  const holdId = job.hold ? newId("hold") : null;
  const size = Buffer.isBuffer(job.document) ? job.document.length : job.document.bytes;
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("ocr_jobs")
      .values({
        id,
        account_id: job.accountId,
        api_key_id: job.apiKeyId,
        status: "queued",
        model: job.model,
        request: JSON.stringify(job.request),
        metadata: JSON.stringify(job.metadata),
        page_count: job.pageCount,
        document_bytes: size,
        hold_id: holdId,
        error_code: null,
        error_message: null,
        started_at: null,
        finished_at: null,
        expires_at: null,
      })
      .execute();
    await putDocument(trx, job.store, id, job.document);
    await addRanges(trx, { id, accountId: job.accountId }, job.pageCount ?? 1, job.pageCount === null ? 1 : job.rangePages);
    // Last: the hold locks the account's row, which the account's other requests need, until this commits.
    if (job.hold && !(await takeHold(trx, { id: holdId!, accountId: job.accountId, apiKeyId: job.apiKeyId, amountCents: job.hold.cents, ttlMs: job.hold.ttlMs }))) {
      throw insufficient(job.hold.cents);
    }
    if (job.idempotency) await job.idempotency.store.complete(job.idempotency.claim, await job.idempotency.answer((await jobRow(trx, id))!), trx);
  });
  return id;
}

export async function jobRow(db: Db | Trx, jobId: string): Promise<JobRow | undefined> {
  return db.selectFrom("ocr_jobs").selectAll().where("id", "=", jobId).executeTakeFirst();
}

/** Which of an account's jobs {@link listJobs} lists. */
export interface JobListing {
  status?: JobStatus;
  /** A job's id: the list starts with the next older job. */
  startingAfter?: string;
  limit: number;
}

/**
 * The account's jobs, newest first, at most `limit`, and whether more
 * follow. Undefined when the account has no job `startingAfter`.
 */
export async function listJobs(db: Db, accountId: string, l: JobListing): Promise<{ rows: JobRow[]; hasMore: boolean } | undefined> {
  let query = db.selectFrom("ocr_jobs").selectAll().where("account_id", "=", accountId);
  if (l.status) query = query.where("status", "=", l.status);
  if (l.startingAfter !== undefined) {
    const cursor = await db.selectFrom("ocr_jobs").select(["created_at", "id"]).where("id", "=", l.startingAfter).where("account_id", "=", accountId).executeTakeFirst();
    if (!cursor) return undefined;
    query = query.where(sql<boolean>`(created_at, id) < (${cursor.created_at}, ${cursor.id})`);
  }
  const rows = await query.orderBy("created_at", "desc").orderBy("id", "desc").limit(l.limit + 1).execute();
  return { rows: rows.slice(0, l.limit), hasMore: rows.length > l.limit };
}

/** The job as the API shows it (`object: "ocr.job"`), also the `data` of its events. */
export function jobView(row: JobRow): Record<string, unknown> {
  const charge = jobCharge(row);
  const seconds = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);
  const prompt = Number(row.prompt_tokens);
  const completion = Number(row.completion_tokens);
  return {
    id: row.id,
    object: "ocr.job",
    status: row.status,
    model: row.model,
    page_count: row.page_count,
    pages_completed: row.pages_completed,
    pages_failed: row.pages_failed,
    usage: {
      pages_processed: row.pages_completed,
      prompt_tokens: prompt,
      completion_tokens: completion,
      tokens_used: prompt + completion,
      provider_cost_cents: charge.providerCostCents.toNumber(),
      platform_fee_cents: charge.platformFeeCents.toNumber(),
      total_cost_cents: charge.chargedCents,
      processing_time_ms: row.started_at ? Math.max(0, (row.finished_at ?? new Date()).getTime() - row.started_at.getTime()) : 0,
    },
    ...(row.error_code ? { error: { code: row.error_code, message: row.error_message ?? "" } } : {}),
    metadata: row.metadata,
    created_at: seconds(row.created_at),
    started_at: seconds(row.started_at),
    finished_at: seconds(row.finished_at),
  };
}

/** Appends an event whose data is the job as it is now in `trx`. */
async function jobEvent(trx: Trx, jobId: string, type: JobEventType): Promise<void> {
  // Read in the transaction that changed the job: the event carries the job with this change in it.
  const row = await trx.selectFrom("ocr_jobs").selectAll().where("id", "=", jobId).executeTakeFirstOrThrow();
  await appendEvent(trx, jobId, type, jobView(row));
}

/** A queued job becomes running when a worker first takes one of its ranges (`ocr.job.started`). */
export async function markStarted(db: Db, jobId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const started = await trx
      .updateTable("ocr_jobs")
      .set({ status: "running", started_at: sql`now()` })
      .where("id", "=", jobId)
      .where("status", "=", "queued")
      .returning("id")
      .executeTakeFirst();
    if (started) await jobEvent(trx, jobId, "ocr.job.started");
  });
}

/** One page of a range as the worker read it, or failed to. */
export type ReadOutcome =
  | { pageNumber: number; ok: true; page: Record<string, unknown>; tables: unknown[]; providerCostCents: Decimal; promptTokens: number; completionTokens: number }
  | { pageNumber: number; ok: false; error: { code: string; message: string } };

export interface StoreOptions {
  /** How long a finished job's results are kept. */
  retentionMs: number;
  /** At most one progress event per this many ms (the last range's end is an event of its own). */
  progressIntervalMs: number;
}

/**
 * Stores a range's pages in one transaction: the range finished (once), its
 * pages stored, the pages read charged, the counters moved, a progress event
 * when the last is old enough, and when it was the job's last open range,
 * the job ended. Returns false when the range had been stored already.
 */
export async function storeRange(db: Db, range: Pick<LeasedRange, "jobId" | "firstPage" | "lastPage">, pages: readonly ReadOutcome[], o: StoreOptions): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (!(await finishRange(trx, range))) return false;
    const job = await trx.selectFrom("ocr_jobs").select(["status"]).where("id", "=", range.jobId).forUpdate().executeTakeFirstOrThrow();
    // A cancelled or failed job keeps what it had: pages read after it ended are neither stored nor charged.
    if (job.status !== "running" && job.status !== "queued") return true;
    const inserted = pages.length
      ? await trx
          .insertInto("ocr_job_pages")
          .values(
            pages.map((p) => ({
              job_id: range.jobId,
              page_number: p.pageNumber,
              status: p.ok ? ("ok" as const) : ("failed" as const),
              // The page as /v1/ocr's result.pages has it (a failed one: no text, its error), and its tables.
              page: JSON.stringify(p.ok ? { page: p.page, tables: p.tables } : { page: { page_number: p.pageNumber, text: "", error: p.error }, tables: [] }),
            })),
          )
          .onConflict((oc) => oc.columns(["job_id", "page_number"]).doNothing())
          .returning("page_number")
          .execute()
      : [];
    const fresh = new Set(inserted.map((r) => r.page_number));
    const read = pages.filter((p): p is Extract<ReadOutcome, { ok: true }> => p.ok && fresh.has(p.pageNumber));
    const failed = pages.filter((p) => !p.ok && fresh.has(p.pageNumber)).length;
    if (read.length > 0) {
      await chargeJobPages(trx, range.jobId, {
        providerCostCents: read.reduce((sum, p) => sum.add(p.providerCostCents), new Decimal(0)),
        promptTokens: read.reduce((n, p) => n + p.promptTokens, 0),
        completionTokens: read.reduce((n, p) => n + p.completionTokens, 0),
        pages: `${range.firstPage}-${range.lastPage}`,
      });
    }
    await trx
      .updateTable("ocr_jobs")
      .set({ pages_completed: sql`pages_completed + ${read.length}`, pages_failed: sql`pages_failed + ${failed}` })
      .where("id", "=", range.jobId)
      .execute();
    if ((await openRanges(trx, range.jobId)) === 0) {
      // A job whose pages were read succeeds, its unreadable pages counted and listed with their errors;
      // it fails only when no page could be read.
      const counts = await trx.selectFrom("ocr_jobs").select(["pages_completed", "pages_failed"]).where("id", "=", range.jobId).executeTakeFirstOrThrow();
      const nothingRead = counts.pages_completed === 0 && counts.pages_failed > 0;
      await endJob(trx, range.jobId, nothingRead ? "failed" : "succeeded", nothingRead ? { code: "page_failed", message: `none of the ${counts.pages_failed} pages could be read` } : null, o);
    } else if (await progressDue(trx, range.jobId, o.progressIntervalMs)) {
      await jobEvent(trx, range.jobId, "ocr.job.progress");
    }
    return true;
  });
}

/** Whether the job's last event is older than `intervalMs` (progress is coalesced to about one per interval). */
async function progressDue(trx: Trx, jobId: string, intervalMs: number): Promise<boolean> {
  const last = await trx.selectFrom("ocr_job_events").select("created_at").where("job_id", "=", jobId).orderBy("sequence", "desc").limit(1).executeTakeFirst();
  return !last || Date.now() - last.created_at.getTime() >= intervalMs;
}

/**
 * Ends a job in `trx`: its status and error, its open ranges closed, its
 * billing closed (the hold's remainder back, the usage entry), its document
 * deleted, its retention clock started, and its final event.
 */
export async function endJob(trx: Trx, jobId: string, status: Exclude<JobStatus, "queued" | "running">, error: { code: string; message: string } | null, o: Pick<StoreOptions, "retentionMs">): Promise<void> {
  await trx
    .updateTable("ocr_jobs")
    .set({
      status,
      error_code: error?.code ?? null,
      error_message: error?.message ?? null,
      started_at: sql`coalesce(started_at, now())`,
      finished_at: sql`now()`,
      expires_at: sql`now() + ${o.retentionMs} * interval '1 millisecond'`,
    })
    .where("id", "=", jobId)
    .execute();
  await trx.updateTable("ocr_job_ranges").set({ status: "done", lease_owner: null, lease_expires_at: null }).where("job_id", "=", jobId).where("status", "<>", "done").execute();
  const row = await trx.selectFrom("ocr_jobs").select(["started_at", "finished_at"]).where("id", "=", jobId).executeTakeFirstOrThrow();
  await closeJobBilling(trx, jobId, {
    endpoint: JOBS_ENDPOINT,
    status: status === "succeeded" ? "success" : "error",
    errorCode: status === "succeeded" ? null : status === "cancelled" ? "cancelled" : (error?.code ?? "internal_error"),
    processingTimeMs: row.finished_at && row.started_at ? row.finished_at.getTime() - row.started_at.getTime() : 0,
  });
  await trx.deleteFrom("ocr_job_chunks").where("job_id", "=", jobId).execute();
  await trx.deleteFrom("ocr_job_images").where("job_id", "=", jobId).execute();
  await jobEvent(trx, jobId, status === "succeeded" ? "ocr.job.succeeded" : status === "failed" ? "ocr.job.failed" : "ocr.job.cancelled");
}

/** A row of ocr_job_pages as stored: the page as /v1/ocr's result.pages has it (a failed one: no text, its error), and its tables. */
export interface StoredPage {
  page: { page_number: number; text: string; confidence?: number } & Record<string, unknown>;
  tables: unknown[];
}

/** Pages read from the database at a time while a job's result is assembled or streamed. */
const RESULT_BATCH = 100;

/** Every stored page of the job, in page order, RESULT_BATCH at a time: what its result, of any length, is assembled or streamed from. */
export async function* storedPages(db: Db, jobId: string): AsyncGenerator<StoredPage> {
  for (let after = 0; ; ) {
    const rows = await db.selectFrom("ocr_job_pages").select(["page_number", "page"]).where("job_id", "=", jobId).where("page_number", ">", after).orderBy("page_number").limit(RESULT_BATCH).execute();
    for (const r of rows) yield r.page as StoredPage;
    if (rows.length < RESULT_BATCH) return;
    after = rows.at(-1)!.page_number;
  }
}

/** The pages of a job stored so far after page `startingAfter`, in page order, at most `limit` (one more tells `has_more`). */
export async function pagesAfter(db: Db, jobId: string, startingAfter: number, limit: number): Promise<{ data: unknown[]; has_more: boolean }> {
  const rows = await db.selectFrom("ocr_job_pages").select("page").where("job_id", "=", jobId).where("page_number", ">", startingAfter).orderBy("page_number").limit(limit + 1).execute();
  return { data: rows.slice(0, limit).map((r) => ({ ...(r.page as StoredPage).page, tables: (r.page as StoredPage).tables.map(storedTable) })), has_more: rows.length > limit };
}

/** A stored table as answered today: one a worker stored before tables had cells, HTML and page numbers gets them from its rows. */
function storedTable(t: unknown): unknown {
  const table = t as Partial<Table> & { page_number: number; rows: string[][] };
  if (table.cells && table.html !== undefined && table.page_numbers) return table;
  return { ...tableOf(table.page_number, table.rows), page_numbers: [table.page_number] };
}

/**
 * Cancels a job of `accountId`: it ends as `cancelled` at once (its open
 * ranges closed, so the workers reading them lose their leases and stop at
 * their next renewal), the pages already read stay stored and billed, and
 * the rest of the hold is given back. A job that has ended is left as it
 * is. Undefined when the account has no such job.
 */
export async function cancelJob(db: Db, accountId: string, jobId: string, o: Pick<StoreOptions, "retentionMs">): Promise<JobRow | undefined> {
  return db.transaction().execute(async (trx) => {
    const job = await trx.selectFrom("ocr_jobs").select(["status"]).where("id", "=", jobId).where("account_id", "=", accountId).forUpdate().executeTakeFirst();
    if (!job) return undefined;
    if (job.status === "queued" || job.status === "running") await endJob(trx, jobId, "cancelled", null, o);
    return jobRow(trx, jobId);
  });
}

/** Deletes the jobs whose retention has run out, with everything of theirs; returns how many. */
export async function deleteExpiredJobs(db: Db): Promise<number> {
  const r = await db.deleteFrom("ocr_jobs").where("expires_at", "<", sql<Date>`now()`).executeTakeFirst();
  return Number(r.numDeletedRows);
}
