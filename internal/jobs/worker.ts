/**
 * A jobs worker: claims page ranges of durable OCR jobs, reads their pages
 * through the extraction service and stores each range with its charge
 * (docs/adr/0005-durable-jobs-queue.md). Several run at once in a process
 * (`concurrency` slots) and any number of processes share one database;
 * none keeps a job's state but in Postgres, so a worker killed mid-range
 * costs that range's lease time and one more reading of its pages, never a
 * page stored or billed twice.
 */
import { Decimal } from "../billing/index.ts";
import type { ExtractOptions, PageExtraction, PageInput } from "../contracts/index.ts";
import { inspectPdf, rasterizePdf, streamPdfPages } from "../documents/index.ts";
import { PAGE_DPI } from "../formats/index.ts";
import { parsePages } from "../formats/pages.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { DB } from "../platform/db/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { WorkerMetrics } from "../platform/metrics/index.ts";
import { LeasedWorker } from "../platform/poller/index.ts";
import { readFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import type { DocumentStore } from "./blobs.ts";
import { convertJob, type DocumentConverter } from "./convert.ts";
import { JobDocuments } from "./documents.ts";
import { claimRange, finishRange, releaseLease, renewLease, type LeasedRange } from "./queue.ts";
import { endJob, jobRow, markStarted, storeRange, type JobRequest, type JobRow, type ReadOutcome, type StoreOptions } from "./store.ts";

/** What the worker needs of the extraction service (its gRPC client has it). */
export interface PageReader {
  extractPage(model: string, page: PageInput, options: ExtractOptions, signal?: AbortSignal): Promise<PageExtraction>;
}

export interface JobWorkerOptions {
  db: DB;
  extraction: PageReader;
  /** Where jobs' documents are kept (blobs.ts). */
  documents: DocumentStore;
  /** The conversion service, for office documents (absent: their jobs fail with conversion_not_available). */
  conversion?: DocumentConverter;
  log: Pick<Logger, "info" | "warn" | "error">;
  /** Ranges read at once by this process. */
  concurrency: number;
  /**
   * Slots besides `concurrency` that claim only ranges of accounts none of
   * whose ranges is being read (default 0): with every other slot reading
   * one account's long job, another account's one-page job starts at once
   * instead of after a range of it (docs/jobs.md "Fair").
   */
  expressSlots?: number;
  /**
   * How long a claimed range stays this worker's without a renewal. Renewed
   * every third of it, at least every {@link RENEW_AT_LEAST_EVERY_MS}: a
   * renewal that fails (the job was cancelled, or the lease lost) stops the
   * range's reading.
   */
  leaseMs: number;
  /**
   * How long an idle worker waits before it looks for work again: its first
   * slot every `pollMs`, the others every {@link IDLE_SLOT_MS} at most (a
   * slot that claims a range wakes them, so an idle worker costs one query a
   * poll, whatever its slots).
   */
  pollMs: number;
  /**
   * Subscribes to the queue's notifications (DatabaseHandle.listen on
   * QUEUE_CHANNEL): ranges queued or given back wake the idle slots at
   * once instead of at their next poll.
   */
  listen?: (onNotify: () => void) => () => Promise<void>;
  /** Bounds the rendering of one range's PDF pages. */
  pdfTimeoutMs: number;
  /** Pages of a range (an office document's pages are queued once they are counted). */
  rangePages: number;
  /** Most pages of one job (an office document's conversion is asked for no more). */
  maxPages: number;
  /**
   * Claims of one range before it is given up: a range whose reading kills
   * its worker every time (a page that crashes the engine) has its pages
   * stored as failed instead of being read forever.
   */
  maxAttempts: number;
  /** Jobs of at least this many pages have their first page read alone (default {@link FIRST_PAGE_ALONE_MIN_PAGES}). */
  firstPageAloneMinPages?: number;
  store: StoreOptions;
  metrics?: WorkerMetrics;
  /** Names this worker in leases (default: host, pid and a random part). */
  id?: string;
}

/**
 * Errors that end a range without storing it: its lease then runs out and
 * the range is read again, here or by another worker. The rest fail only
 * the page they happened to.
 */
function abandonsRange(err: unknown): boolean {
  // A dependency away (the extraction service, the database) or this worker stopping: another try can succeed.
  return err instanceof FolioError ? err.code === "service_unavailable" || err.retryable : err instanceof Error && err.name === "AbortError";
}

/** How long a worker keeps its file of a job's document after its last range of that job. */
const DOCUMENT_IDLE_MS = 60_000;

/** The document pages of a range: ranges count the pages to read (the selection's, or every page). */
function pageNumbers(job: JobRow, range: LeasedRange): number[] {
  const selected = (job.request as JobRequest).selected;
  return Array.from({ length: range.lastPage - range.firstPage + 1 }, (_, i) => selected?.[range.firstPage + i - 1] ?? range.firstPage + i);
}

/** The longest an idle slot other than the first sleeps without being woken (see `pollMs`). */
const IDLE_SLOT_MS = 5_000;

/**
 * A job of at least {@link FIRST_PAGE_ALONE_MIN_PAGES} pages has its first
 * page read alone, for at most {@link FIRST_PAGE_ALONE_MS}: this worker's
 * other slots wait to read a later range of the same job while its page 1 is
 * read (docs/jobs.md "Workers"). A shorter job is read at full speed from
 * the start: its client waits for the whole of it, which a slot left idle
 * would delay by up to a page's reading in a few pages.
 */
export const FIRST_PAGE_ALONE_MS = 5_000;
export const FIRST_PAGE_ALONE_MIN_PAGES = 20;

/** A cancelled job's ranges stop being read within this (the API promises 2 s). */
export const RENEW_AT_LEAST_EVERY_MS = 1_000;

/**
 * A slot of the worker's poller: it claims and reads ranges until stopped;
 * an `express` slot only ranges of accounts nothing of which is being read.
 * Idle, the slot that `polls` looks every `pollMs`, the others sleep until
 * woken (see `pollMs`).
 */
interface RangeSlot {
  express: boolean;
  polls: boolean;
}

export class JobWorker extends LeasedWorker<LeasedRange, RangeSlot> {
  private readonly documents: JobDocuments;
  /** Jobs whose first page a slot of this worker is reading: settled when it is stored or given up. */
  private readonly firstPages = new Map<string, Promise<void>>();

  constructor(private readonly o: JobWorkerOptions) {
    super(o.id, {
      slots: [
        ...Array.from({ length: o.concurrency }, (_, i) => ({ express: false, polls: i === 0 })),
        ...Array.from({ length: o.expressSlots ?? 0 }, () => ({ express: true, polls: false })),
      ],
      claim: (slot) => claimRange(o.db, this.id, o.leaseMs, { unservedOnly: slot.express }),
      handle: (range) => this.process(range),
      // Stopping: the range goes back to the queue now, not after its lease (if the database answers).
      release: (range) => releaseLease(o.db, range, this.id),
      onAbandoned: () => o.metrics?.ranges.inc({ outcome: "abandoned" }),
      onError: (err, range) => o.log.warn({ err, job: range?.jobId, first_page: range?.firstPage }, "a job range was not stored; its lease will run out and it will be read again"),
      pollMs: o.pollMs,
      idleSlotMs: IDLE_SLOT_MS,
      listen: o.listen,
    });
    this.documents = new JobDocuments(o.db, o.documents, DOCUMENT_IDLE_MS);
  }

  /**
   * Stops claiming, lets the ranges being read finish for up to `drainMs`
   * (a rollout or a scale-down then costs no reading twice), aborts what is
   * still being read (its leases run out and other workers read it again),
   * and waits for the slots to end.
   */
  override async stop(drainMs = 0): Promise<void> {
    await super.stop(drainMs);
    await this.documents.close();
  }

  /** Reads one claimed range and stores it; throws (leaving the range to its lease) when it cannot finish it. */
  async process(range: LeasedRange): Promise<void> {
    const claimedAt = Date.now();
    const firstPageStored = range.firstPage === 1 ? this.readingFirstPage(range.jobId) : undefined;
    const abort = new AbortController();
    const stop = () => abort.abort();
    this.poller.signal.addEventListener("abort", stop, { once: true });
    const renewal = setInterval(() => {
      renewLease(this.o.db, range, this.id, this.o.leaseMs).then(
        (held) => held || abort.abort(),
        () => undefined, // the database away: the next renewal tries again; the lease covers two misses
      );
    }, Math.max(50, Math.min(RENEW_AT_LEAST_EVERY_MS, Math.floor(this.o.leaseMs / 3))));
    try {
      await markStarted(this.o.db, range.jobId);
      const job = await jobRow(this.o.db, range.jobId);
      if (!job || (job.status !== "running" && job.status !== "queued")) return;
      if (range.attempts > this.o.maxAttempts) return await this.giveUp(job, range);
      if (job.page_count === null) return await this.convert(job, range, abort.signal);
      const request = job.request as JobRequest;
      const outcomes: ReadOutcome[] = [];
      if ((job.page_count ?? 0) >= (this.o.firstPageAloneMinPages ?? FIRST_PAGE_ALONE_MIN_PAGES)) await this.afterFirstPage(range, abort.signal);
      await this.withPages(job, range, abort.signal, async (pages) => {
        for await (const page of pages) outcomes.push(await this.readPage(job.model, page, request.extract, abort.signal));
      });
      abort.signal.throwIfAborted();
      const stored = await storeRange(this.o.db, range, outcomes, this.o.store);
      const m = this.o.metrics;
      if (m) {
        m.ranges.inc({ outcome: stored ? "stored" : "duplicate" });
        m.rangeDuration.observe((Date.now() - claimedAt) / 1000);
        if (stored) {
          const ok = outcomes.filter((p) => p.ok).length;
          m.pages.inc({ outcome: "ok" }, ok);
          m.pages.inc({ outcome: "failed" }, outcomes.length - ok);
        }
      }
    } finally {
      firstPageStored?.();
      clearInterval(renewal);
      this.poller.signal.removeEventListener("abort", stop);
    }
  }

  /** Marks `jobId`'s first page as being read here (see {@link afterFirstPage}); call what it returns once that range ends. */
  private readingFirstPage(jobId: string): () => void {
    let stored!: () => void;
    const gate = new Promise<void>((r) => (stored = r));
    this.firstPages.set(jobId, gate);
    return () => {
      stored();
      if (this.firstPages.get(jobId) === gate) this.firstPages.delete(jobId);
    };
  }

  /**
   * A later range of a job whose first page this worker is reading waits
   * until that range ends, for at most {@link FIRST_PAGE_ALONE_MS}: on the
   * cores the slots share, page 1 read beside pages 2 and 3 and their
   * rendering was listed 3.8–5.0 s after the 202, alone 2.8–3.1 s
   * (docs/benchmarks/jobs.md "The first page read alone"), and a client waits for
   * it to see its first result.
   */
  private async afterFirstPage(range: LeasedRange, signal: AbortSignal): Promise<void> {
    const first = range.firstPage === 1 ? undefined : this.firstPages.get(range.jobId);
    if (!first) return;
    const done = new AbortController();
    try {
      // The timer ends early, without a rejection anyone must catch, when the page is stored or the range aborted.
      await Promise.race([first, sleep(FIRST_PAGE_ALONE_MS, undefined, { signal: AbortSignal.any([signal, done.signal]) }).catch(() => undefined)]);
    } finally {
      done.abort();
    }
    signal.throwIfAborted();
  }

  /** An office document's conversion range: converted once, its pages queued (see convert.ts). */
  private async convert(job: JobRow, range: LeasedRange, signal: AbortSignal): Promise<void> {
    if (!this.o.conversion) return this.failJob(job, range, new FolioError("conversion_not_available", "office documents need the conversion service, which this worker was not given"));
    try {
      await convertJob(this.o.db, job, range, { converter: this.o.conversion, rangePages: this.o.rangePages, maxPages: this.o.maxPages, store: this.o.store, documents: this.o.documents }, signal);
      this.o.metrics?.ranges.inc({ outcome: "converted" });
    } catch (err) {
      if (abandonsRange(err) || signal.aborted) throw err;
      // The document cannot be converted (damaged, too many pages, …): another try would fail the same way.
      await this.failJob(job, range, err instanceof FolioError ? err : new FolioError("internal_error", "the document could not be converted"));
    }
  }

  /** Ends the job as failed with `err` (its range finished with it: once). */
  private async failJob(job: JobRow, range: LeasedRange, err: FolioError): Promise<void> {
    await this.o.db.transaction().execute(async (trx) => {
      if (await finishRange(trx, range)) await endJob(trx, job.id, "failed", { code: err.code, message: err.message }, this.o.store);
    });
  }

  /** A range claimed more than maxAttempts times: its pages are stored as failed (the conversion's: the job fails). */
  private async giveUp(job: JobRow, range: LeasedRange): Promise<void> {
    const why = `gave up after ${range.attempts - 1} attempts to read pages ${range.firstPage}-${range.lastPage}, each ended by its worker stopping`;
    this.o.log.error({ job: job.id, first_page: range.firstPage, attempts: range.attempts }, "job range given up");
    this.o.metrics?.ranges.inc({ outcome: "given_up" });
    if (job.page_count === null) return this.failJob(job, range, new FolioError("internal_error", why));
    const numbers = pageNumbers(job, range);
    await storeRange(this.o.db, range, numbers.map((pageNumber) => ({ pageNumber, ok: false as const, error: { code: "page_failed", message: why } })), this.o.store);
  }

  /**
   * Runs `use` over the range's pages as images, in order, each with its
   * page number in the document: a PDF's rendered from this worker's file
   * of the document (an office document's PDF once converted), an image as
   * it is. A job whose office document an older worker converted reads the
   * page images that worker kept (ocr_job_images) until it ends.
   */
  private async withPages(job: JobRow, range: LeasedRange, signal: AbortSignal, use: (pages: AsyncIterable<PageInput> | PageInput[]) => Promise<void>): Promise<void> {
    const request = job.request as JobRequest;
    if (request.kind === "office") {
      const images = await this.o.db
        .selectFrom("ocr_job_images")
        .select(["page_number", "png"])
        .where("job_id", "=", job.id)
        .where("position", ">=", range.firstPage)
        .where("position", "<=", range.lastPage)
        .orderBy("position")
        .execute();
      return use(images.map((i) => ({ pageNumber: i.page_number, image: i.png, mimeType: "image/png" })));
    }
    const path = await this.documents.acquire(job.id);
    try {
      if (!path) throw new FolioError("service_unavailable", `job ${job.id} has no stored document (it ended)`, { retryable: true });
      if (request.kind === "image") return await use([{ pageNumber: 1, image: await readFile(path), mimeType: request.mime_type }]);
      const parsed = parsePages(pageNumbers(job, range).join(","));
      if (!parsed.ok) throw new FolioError("internal_error", `range ${range.firstPage}-${range.lastPage}: ${parsed.problem}`);
      // The file's page count and sizes are read once for every range of the job this worker reads (pdfinfo).
      const inspected = await this.documents.inspected(job.id, () => inspectPdf(path, { maxPages: this.o.maxPages, timeoutMs: this.o.pdfTimeoutMs, signal }));
      const rendering = { dpi: PAGE_DPI, maxPages: range.lastPage - range.firstPage + 1, pages: parsed.selection, timeoutMs: this.o.pdfTimeoutMs, signal, inspected };
      // A local engine reads raw grey pixels as they are rendered; an upstream model gets PNG, as /v1/ocr sends it (pipeline.ts).
      if (request.holdBasis.model?.source === "local") return await use(streamPdfPages({ path }, rendering));
      const png = await rasterizePdf({ path }, rendering);
      await use(png.pages.map((image, i) => ({ pageNumber: png.pageNumbers[i]!, image, mimeType: "image/png" })));
    } finally {
      this.documents.release(job.id);
    }
  }

  private async readPage(model: string, page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<ReadOutcome> {
    try {
      const r = await this.o.extraction.extractPage(model, page, options, signal);
      const result = r.result;
      return {
        pageNumber: page.pageNumber,
        ok: true,
        page: {
          page_number: page.pageNumber,
          text: result.text,
          ...(result.confidence !== undefined ? { confidence: result.confidence } : {}),
          ...(result.rotation !== undefined ? { rotation: result.rotation, skew_degrees: result.skewDegrees ?? 0 } : {}),
          ...(result.layout ? { layout: result.layout } : {}),
          ...(result.blocks ? { blocks: result.blocks } : {}),
        },
        // A job's tables stay with their page (GET …/pages lists pages as they are read): one continued on the next page is not joined.
        tables: result.tables.map(({ opens_page: _o, closes_page: _c, ...t }) => ({ ...t, page_number: page.pageNumber, page_numbers: [page.pageNumber] })),
        providerCostCents: new Decimal(r.providerCostCents),
        promptTokens: result.usage.promptTokens,
        completionTokens: result.usage.completionTokens,
      };
    } catch (err) {
      if (abandonsRange(err) || signal.aborted) throw err;
      const e = err instanceof FolioError ? err : new FolioError("internal_error", "the page could not be read");
      return { pageNumber: page.pageNumber, ok: false, error: { code: e.code, message: e.message } };
    }
  }
}
