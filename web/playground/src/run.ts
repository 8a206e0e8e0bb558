/**
 * One run of the form: the synchronous call (POST /v1/playground/process),
 * or, for a document with more pages than one request reads, a durable job
 * (docs/jobs.md) shown through the same progress and result views. Knows
 * the wording of progress; knows nothing of the page's elements.
 */
import { RequestFailed, processDocument, type ProcessRequest, type Running } from "./api.ts";
import { cancelJob, followJob, jobPages, jobTables, startJob } from "./jobs.ts";
import type { JobPage, OcrJob, PlaygroundResult, ProgressEvent, Table } from "./types.ts";

/**
 * Most pages one synchronous call reads, until the server says otherwise:
 * the edge's FOLIO_MAX_PAGES default (internal/platform/config). No public
 * route states the limit; a refusal for too many pages carries the server's
 * own (`max_pages`), which replaces this for the rest of the visit.
 */
export const DEFAULT_SYNC_MAX_PAGES = 100;

/** What a run shows: the playground's answer, or a finished job with its pages. */
export type Outcome =
  | { kind: "request"; result: PlaygroundResult }
  | {
      kind: "job";
      job: OcrJob;
      pages: JobPage[];
      /** Tables by page number, when they were asked for. */
      tables: Map<number, Table[]>;
      /** Tables were asked for and could not be read: why (the text is shown regardless). */
      tablesError?: string;
      /** The file name or URL the job read. */
      source: string;
    };

export interface RunView {
  progress(text: string, value?: number): void;
  /** The run became a job: its id, for the user to find it again. */
  job(job: OcrJob): void;
  /** The synchronous limit as the server stated it. */
  limit(maxPages: number): void;
}

let syncMaxPages = DEFAULT_SYNC_MAX_PAGES;
/** Page counts the server gave for whole documents over the limit, by document: run again, they go to a job at once. */
const knownPageCounts = new Map<string, number>();

const documentKey = (req: ProcessRequest) => (req.file ? `file:${req.file.name}:${req.file.size}:${req.file.lastModified}` : `url:${req.url ?? ""}`);
const plural = (n: number, word: string) => `${n.toLocaleString()} ${word}${n === 1 ? "" : "s"}`;
/** Metadata values are at most 500 characters (docs/jobs.md). */
const METADATA_VALUE_MAX = 500;

export interface TooManyPages {
  /** The synchronous limit, as the server states it. */
  maxPages: number;
  /** The whole document's pages, when it is the document that is over the limit (not a selection). */
  documentPages?: number;
}

/**
 * Whether a refusal of the synchronous call means "more pages than one
 * request reads", so that a job (up to FOLIO_JOB_MAX_PAGES) can read them:
 * a 400 with `max_pages` naming either the document's field (`file`, `url`)
 * with its `page_count` over the limit, or `pages`, a selection of more
 * pages than the limit. A selection past the document's end is refused
 * with the same fields; it is taken for over the limit only if the document
 * itself has more pages than the limit (a job then refuses it in its own
 * words if it does reach past the end).
 */
export function tooManyPages(e: RequestFailed): TooManyPages | undefined {
  const { error } = e;
  if (e.status !== 400 || error.code !== "invalid_request" || typeof error.param !== "string" || typeof error.max_pages !== "number") return undefined;
  const pageCount = typeof error.page_count === "number" ? error.page_count : undefined;
  if (error.param !== "pages") return pageCount !== undefined && pageCount > error.max_pages ? { maxPages: error.max_pages, documentPages: pageCount } : undefined;
  if (pageCount !== undefined && pageCount <= error.max_pages) return undefined;
  return { maxPages: error.max_pages };
}

export function run(req: ProcessRequest, view: RunView): Running<Outcome> {
  const stop = new AbortController();
  /** The upload in flight (the synchronous call or the job's start), aborted by cancel. */
  let uploading: Running<unknown> | null = null;
  let job: OcrJob | null = null;
  let cancelling = false;

  const syncEvent = (e: ProgressEvent) => {
    switch (e.event) {
      case "started":
        return view.progress(`Started: ${e.document.format} with ${e.model}…`);
      case "converting":
        return view.progress(`Converting the ${e.format} document to page images…`);
      case "rasterizing":
        return view.progress("Rendering the PDF's pages…");
      case "extracting":
        return view.progress(`Extracting page 1 of ${e.page_count}…`, 0);
      case "page":
        return view.progress(e.completed < e.of ? `Extracting page ${e.completed + 1} of ${e.of}…` : `Extracted ${e.of} of ${e.of} pages`, (100 * e.completed) / e.of);
    }
  };
  const uploadHandlers = (what: string, then: string) => ({
    uploadProgress: (loaded: number, total: number) => req.file && view.progress(`${what}… ${Math.round((100 * loaded) / total)}%`, (100 * loaded) / total),
    uploaded: () => view.progress(then),
  });

  async function synchronous(): Promise<Outcome | { tooLong: string }> {
    view.progress(req.file ? "Uploading… 0%" : "Sending…", req.file ? 0 : undefined);
    const call = processDocument(req, { ...uploadHandlers("Uploading", "Uploaded; waiting for the server…"), event: syncEvent });
    uploading = call;
    try {
      return { kind: "request", result: await call.done };
    } catch (err) {
      const over = err instanceof RequestFailed ? tooManyPages(err) : undefined;
      if (!over) throw err;
      syncMaxPages = over.maxPages;
      view.limit(over.maxPages);
      const limit = `more than the ${over.maxPages} one request reads`;
      if (over.documentPages === undefined) return { tooLong: `The pages asked for are ${limit}: running them as a job` };
      knownPageCounts.set(documentKey(req), over.documentPages);
      return { tooLong: `The document has ${plural(over.documentPages, "page")}, ${limit}: running it as a job` };
    } finally {
      uploading = null;
    }
  }

  async function asJob(why: string): Promise<Outcome> {
    const source = req.file ? req.file.name : (req.url ?? "");
    view.progress(`${why}; ${req.file ? "uploading… 0%" : "sending…"}`, req.file ? 0 : undefined);
    // The file's name goes with the job (its metadata), so the job can be told apart in GET /v1/ocr/jobs.
    const metadata = req.file ? { filename: source.slice(0, METADATA_VALUE_MAX) } : undefined;
    const start = startJob(req, metadata, uploadHandlers(`${why}; uploading`, "Uploaded; starting the job…"));
    uploading = start;
    let started: OcrJob;
    try {
      started = await start.done;
    } finally {
      uploading = null;
    }
    job = started;
    view.job(started);
    showJob(started);
    const end = await followJob(req.key, started.id, {
      event: (e) => {
        job = e.data;
        if (!cancelling || e.type === "ocr.job.cancelled") showJob(e.data);
      },
      reconnecting: (attempt, delayMs) => view.progress(`The connection to the job's events was lost; trying again in ${Math.ceil(delayMs / 1000)} s (attempt ${attempt})…`),
    }, stop.signal);
    const last = end.data;
    job = last;
    if (end.type === "ocr.job.failed") {
      throw new RequestFailed(0, { code: last.error?.code ?? "job_failed", message: last.error?.message ?? "the job failed", job_id: last.id });
    }
    if (end.type === "ocr.job.cancelled") {
      throw new RequestFailed(0, { code: "job_cancelled", message: "the job was cancelled", job_id: last.id, pages_completed: last.pages_completed, total_cost_cents: last.usage.total_cost_cents });
    }
    try {
      return { kind: "job", job: last, source, ...(await results(last)) };
    } catch (err) {
      // Stopped while loading: the job itself succeeded, and its result stays readable by its id.
      if (stop.signal.aborted) throw new RequestFailed(0, { code: "cancelled", message: "loading the job's result was stopped", job_id: last.id });
      throw err;
    }
  }

  function showJob(j: OcrJob): void {
    const read = j.pages_completed + j.pages_failed;
    const failed = j.pages_failed > 0 ? ` (${plural(j.pages_failed, "page")} could not be read)` : "";
    switch (j.status) {
      case "queued":
        return view.progress("Job queued: waiting for a worker…", 0);
      case "running":
        if (j.page_count === null) return view.progress("Job running: converting the document to page images…");
        return view.progress(`Job running: read ${read} of ${plural(j.page_count, "page")}${failed}…`, (100 * read) / Math.max(1, j.page_count));
      case "succeeded":
        return view.progress(`Job done: read ${read} of ${plural(j.page_count ?? read, "page")}${failed}; loading the result…`, 100);
      case "failed":
        return view.progress("Job failed.");
      case "cancelled":
        return view.progress(`Job cancelled after ${plural(j.pages_completed, "page")}.`);
    }
  }

  /** The job's pages, PAGES_PER_REQUEST at a time, and its tables when they were asked for. */
  async function results(j: OcrJob): Promise<Pick<Extract<Outcome, { kind: "job" }>, "pages" | "tables" | "tablesError">> {
    const total = j.page_count ?? j.pages_completed + j.pages_failed;
    const pages: JobPage[] = [];
    for await (const batch of jobPages(req.key, j.id, stop.signal)) {
      pages.push(...batch);
      view.progress(`Loading the result: ${pages.length} of ${plural(total, "page")}…`, (100 * pages.length) / Math.max(1, total));
    }
    if (!req.extractTables) return { pages, tables: new Map() };
    view.progress("Loading the tables…");
    try {
      return { pages, tables: await jobTables(req.key, j.id, stop.signal) };
    } catch (err) {
      if (stop.signal.aborted) throw err;
      return { pages, tables: new Map(), tablesError: err instanceof Error ? err.message : String(err) };
    }
  }

  const done = (async (): Promise<Outcome> => {
    const known = knownPageCounts.get(documentKey(req));
    if (known !== undefined && known > syncMaxPages && !req.pages) {
      return asJob(`The document has ${plural(known, "page")}, more than the ${syncMaxPages} one request reads: running it as a job`);
    }
    const first = await synchronous();
    if (!("tooLong" in first)) return first;
    if (stop.signal.aborted) throw new RequestFailed(0, { code: "cancelled", message: "cancelled" });
    return asJob(first.tooLong);
  })();

  return {
    done,
    cancel: () => {
      if (uploading) return uploading.cancel();
      if (job && (job.status === "queued" || job.status === "running")) {
        // The job ends on the server; its final event (cancelled) ends the run.
        if (cancelling) return;
        cancelling = true;
        view.progress("Cancelling the job…");
        const id = job.id;
        cancelJob(req.key, id).then(
          (j) => {
            // Already finished (it succeeded or failed meanwhile): its own final event says so.
            if (j.status !== "cancelled") cancelling = false;
          },
          (err: unknown) => {
            cancelling = false;
            view.progress(`The job could not be cancelled (${err instanceof Error ? err.message : String(err)}); it goes on.`);
          },
        );
        return;
      }
      // Between the calls, or loading a finished job's result.
      stop.abort();
    },
  };
}
