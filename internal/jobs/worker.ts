/**
 * A jobs worker: claims page ranges of durable OCR jobs, reads their pages
 * through the extraction service and stores each range with its charge
 * (docs/adr/0005-durable-jobs-queue.md). Several run at once in a process
 * (`concurrency` slots) and any number of processes share one database;
 * none keeps a job's state but in Postgres, so a worker killed mid-range
 * costs that range's lease time and one more reading of its pages, never a
 * page stored or billed twice.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { Decimal } from "../billing/index.ts";
import type { ExtractOptions, PageExtraction, PageInput } from "../contracts/index.ts";
import { streamPdfPages } from "../documents/index.ts";
import { PAGE_DPI } from "../formats/index.ts";
import { parsePages } from "../formats/pages.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { DB } from "../platform/db/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { claimRange, renewLease, type LeasedRange } from "./queue.ts";
import { jobDocument, jobRow, markStarted, storeRange, type JobRequest, type ReadOutcome, type StoreOptions } from "./store.ts";

/** What the worker needs of the extraction service (its gRPC client has it). */
export interface PageReader {
  extractPage(model: string, page: PageInput, options: ExtractOptions, signal?: AbortSignal): Promise<PageExtraction>;
}

export interface JobWorkerOptions {
  db: DB;
  extraction: PageReader;
  log: Pick<Logger, "info" | "warn" | "error">;
  /** Ranges read at once by this process. */
  concurrency: number;
  /**
   * How long a claimed range stays this worker's without a renewal. Renewed
   * every third of it, at least every {@link RENEW_AT_LEAST_EVERY_MS}: a
   * renewal that fails (the job was cancelled, or the lease lost) stops the
   * range's reading.
   */
  leaseMs: number;
  /** How long an idle slot waits before it looks for work again. */
  pollMs: number;
  /** Bounds the rendering of one range's PDF pages. */
  pdfTimeoutMs: number;
  store: StoreOptions;
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

/** A cancelled job's ranges stop being read within this (the API promises 2 s). */
export const RENEW_AT_LEAST_EVERY_MS = 1_000;

export class JobWorker {
  readonly id: string;
  private running = false;
  private readonly slots: Promise<void>[] = [];
  private readonly stopping = new AbortController();

  constructor(private readonly o: JobWorkerOptions) {
    this.id = o.id ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (let i = 0; i < this.o.concurrency; i++) this.slots.push(this.slot());
  }

  /** Stops claiming, aborts the ranges being read (their leases run out) and waits for the slots to end. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    await Promise.all(this.slots);
  }

  private async slot(): Promise<void> {
    while (this.running) {
      let range: LeasedRange | undefined;
      try {
        range = await claimRange(this.o.db, this.id, this.o.leaseMs);
        if (range) await this.process(range);
      } catch (err) {
        if (!this.running) return;
        this.o.log.warn({ err, job: range?.jobId, first_page: range?.firstPage }, "a job range was not stored; its lease will run out and it will be read again");
      }
      if (!range && this.running) await new Promise((r) => setTimeout(r, this.o.pollMs));
    }
  }

  /** Reads one claimed range and stores it; throws (leaving the range to its lease) when it cannot finish it. */
  async process(range: LeasedRange): Promise<void> {
    const abort = new AbortController();
    const stop = () => abort.abort();
    this.stopping.signal.addEventListener("abort", stop, { once: true });
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
      const request = job.request as JobRequest;
      const outcomes: ReadOutcome[] = [];
      for await (const page of await this.pagesOf(range, request, abort.signal)) {
        outcomes.push(await this.readPage(job.model, page, request.extract, abort.signal));
      }
      abort.signal.throwIfAborted();
      await storeRange(this.o.db, range, outcomes, this.o.store);
    } finally {
      clearInterval(renewal);
      this.stopping.signal.removeEventListener("abort", stop);
    }
  }

  /** The range's pages as images, in order, each with its page number in the document. */
  private async pagesOf(range: LeasedRange, request: JobRequest, signal: AbortSignal): Promise<AsyncIterable<PageInput> | PageInput[]> {
    const document = await jobDocument(this.o.db, range.jobId);
    if (request.kind === "image") return [{ pageNumber: 1, image: document, mimeType: request.mime_type }];
    if (request.kind !== "pdf") throw new FolioError("internal_error", `a ${request.kind} job has no pages to read yet`);
    // Ranges count the pages to read (the selection's, or every page); the selection says which page each is.
    const numbers = Array.from({ length: range.lastPage - range.firstPage + 1 }, (_, i) => request.selected?.[range.firstPage + i - 1] ?? range.firstPage + i);
    const parsed = parsePages(numbers.join(","));
    if (!parsed.ok) throw new FolioError("internal_error", `range ${range.firstPage}-${range.lastPage}: ${parsed.problem}`);
    return streamPdfPages(document, { dpi: PAGE_DPI, maxPages: numbers.length, pages: parsed.selection, timeoutMs: this.o.pdfTimeoutMs, signal });
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
          ...(result.layout ? { layout: result.layout } : {}),
        },
        tables: result.tables.map((t) => ({ ...t, page_number: page.pageNumber })),
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
