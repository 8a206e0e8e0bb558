/**
 * Durable OCR jobs from the page (docs/jobs.md): start one, follow its
 * events, read its pages and tables, cancel it. Starting is an
 * XMLHttpRequest (upload progress) and never retried (it is paid); the reads
 * are fetches, retried for the reasons named in RETRY_STATUSES.
 */
import { RequestFailed, errorFromFetch, errorFromResponse, openUpload, requestBody, sendBody, type ProcessRequest, type Running, type UploadHandlers } from "./api.ts";
import { SseParser, StreamStalled, ndjsonLines, textChunks } from "./streams.ts";
import type { JobEvent, JobPage, OcrJob, Table } from "./types.ts";

export const JOBS_PATH = "/v1/ocr/jobs";

/** Pages asked for per GET …/pages: the most the route gives (docs/jobs.md). */
export const PAGES_PER_REQUEST = 200;

/**
 * Silence after which the event stream is taken for dead and opened again:
 * the edge sends a comment after FOLIO_SSE_KEEPALIVE_SECONDS of silence, at
 * most 15 s (internal/platform/config), so three missed ones mean the
 * connection is gone even if it was never closed.
 */
const STALL_MS = 45_000;
/** Reconnection delays double from the first up to the last; they restart once an event arrives. */
const FIRST_DELAY_MS = 1_000;
const LAST_DELAY_MS = 15_000;
/** Attempts in a row without an event before the page gives up (about 1.5 minutes); the job goes on regardless. */
const MAX_RECONNECTS = 8;
/** Attempts of a GET of pages or tables. */
const READ_ATTEMPTS = 3;

/**
 * Statuses after which asking again can help. Only reads are retried (GETs:
 * nothing is charged); starting a job and cancelling it are not.
 */
const RETRY_STATUSES = new Map<number, string>([
  [429, "the account's rate limit: asked again after the Retry-After the edge gave"],
  [502, "a proxy found no edge replica answering (one restarting)"],
  [503, "an edge replica busy or shutting down"],
  [504, "a proxy's timeout"],
]);

const FINAL_EVENTS = new Set<JobEvent["type"]>(["ocr.job.succeeded", "ocr.job.failed", "ocr.job.cancelled"]);

const jobPath = (id: string) => `${JOBS_PATH}/${encodeURIComponent(id)}`;
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const networkError = () => new RequestFailed(0, { code: "network_error", message: "the server could not be reached" });
const cancelled = () => new RequestFailed(0, { code: "cancelled", message: "cancelled" });

/**
 * POST /v1/ocr/jobs with the fields the synchronous call had (multipart for
 * a file, JSON for a URL), and `metadata` kept with the job; the 202's job.
 */
export function startJob(req: ProcessRequest, metadata: Record<string, string> | undefined, on: UploadHandlers): Running<OcrJob> {
  const xhr = new XMLHttpRequest();
  const done = new Promise<OcrJob>((resolve, reject) => {
    openUpload(xhr, JOBS_PATH, req.key, "application/json", on);
    xhr.addEventListener("load", () => {
      if (xhr.status !== 202) return reject(errorFromResponse(xhr));
      try {
        resolve(JSON.parse(xhr.responseText) as OcrJob);
      } catch {
        reject(new RequestFailed(0, { code: "bad_response", message: "the job's answer is not JSON" }));
      }
    });
    xhr.addEventListener("error", () => reject(networkError()));
    xhr.addEventListener("abort", () => reject(cancelled()));
    sendBody(xhr, requestBody(req, metadata));
  });
  return { done, cancel: () => xhr.abort() };
}

export interface FollowHandlers {
  event(e: JobEvent): void;
  /** The stream broke (`why`); attempt `attempt` opens it again after `delayMs`. */
  reconnecting(attempt: number, delayMs: number, why: RequestFailed): void;
}

/**
 * Follows GET /v1/ocr/jobs/{id}/events until the job's final event, which it
 * returns. A stream that breaks, ends early or falls silent is opened again
 * with Last-Event-ID, so no event is missed or seen twice.
 */
export async function followJob(key: string, id: string, on: FollowHandlers, signal: AbortSignal): Promise<JobEvent> {
  let lastEventId = "";
  let failures = 0;
  for (;;) {
    let why: RequestFailed;
    let waitMs: number | undefined;
    try {
      const res = await fetch(`${jobPath(id)}/events`, {
        headers: { ...auth(key), accept: "text/event-stream", ...(lastEventId ? { "last-event-id": lastEventId } : {}) },
        cache: "no-store",
        signal,
      });
      if (!res.ok) {
        why = await errorFromFetch(res);
        if (!RETRY_STATUSES.has(res.status)) throw why;
        if (why.retryAfterSeconds !== undefined) waitMs = why.retryAfterSeconds * 1000;
      } else if (!res.body) {
        throw new RequestFailed(0, { code: "bad_response", message: "the job's event stream has no body" });
      } else {
        const parser = new SseParser(lastEventId);
        for await (const chunk of textChunks(res.body, STALL_MS)) {
          for (const message of parser.push(chunk)) {
            let event: JobEvent;
            try {
              event = JSON.parse(message.data) as JobEvent;
            } catch {
              throw new RequestFailed(0, { code: "bad_response", message: "the job's event stream sent data that is not JSON" });
            }
            lastEventId = message.lastEventId;
            failures = 0;
            on.event(event);
            if (FINAL_EVENTS.has(event.type)) return event;
          }
        }
        why = new RequestFailed(0, { code: "stream_ended", message: "the event stream ended before the job did" });
      }
    } catch (err) {
      if (signal.aborted) throw cancelled();
      if (err instanceof RequestFailed) throw err;
      why = err instanceof StreamStalled ? new RequestFailed(0, { code: "stream_stalled", message: err.message }) : networkError();
    }
    failures += 1;
    if (failures > MAX_RECONNECTS) {
      throw new RequestFailed(0, { code: "events_lost", message: `the job's events could not be read again after ${MAX_RECONNECTS} attempts (last: ${why.message})` });
    }
    const delay = waitMs ?? Math.min(LAST_DELAY_MS, FIRST_DELAY_MS * 2 ** (failures - 1));
    on.reconnecting(failures, delay, why);
    await sleep(delay, signal);
  }
}

/** POST /v1/ocr/jobs/{id}/cancel: the job as it is then (a finished one is answered as it is). */
export async function cancelJob(key: string, id: string): Promise<OcrJob> {
  let res: Response;
  try {
    res = await fetch(`${jobPath(id)}/cancel`, { method: "POST", headers: { ...auth(key), accept: "application/json" } });
  } catch {
    throw networkError();
  }
  if (!res.ok) throw await errorFromFetch(res);
  return (await res.json()) as OcrJob;
}

/** The job's stored pages in page order, PAGES_PER_REQUEST at a time (GET …/pages with starting_after). */
export async function* jobPages(key: string, id: string, signal: AbortSignal): AsyncGenerator<JobPage[]> {
  for (let after = 0; ; ) {
    const res = await read(`${jobPath(id)}/pages?starting_after=${after}&limit=${PAGES_PER_REQUEST}`, key, signal);
    const list = (await res.json()) as { data: JobPage[]; has_more: boolean };
    if (list.data.length > 0) yield list.data;
    const last = list.data.at(-1);
    if (!list.has_more || !last) return;
    after = last.page_number;
  }
}

/**
 * The tables of a succeeded job, by page number. The pages list does not
 * carry them; the NDJSON result does, one page a line, for any length.
 */
export async function jobTables(key: string, id: string, signal: AbortSignal): Promise<Map<number, Table[]>> {
  const res = await read(`${jobPath(id)}/result?format=ndjson`, key, signal);
  const byPage = new Map<number, Table[]>();
  if (!res.body) return byPage;
  for await (const line of ndjsonLines<{ page: { page_number: number }; tables: Table[] }>(textChunks(res.body, STALL_MS))) {
    if (line.tables.length > 0) byPage.set(line.page.page_number, line.tables);
  }
  return byPage;
}

/** A GET that answered 200, asked up to READ_ATTEMPTS times for the reasons in RETRY_STATUSES and network failures. */
async function read(path: string, key: string, signal: AbortSignal): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    let why: RequestFailed;
    try {
      const res = await fetch(path, { headers: { ...auth(key), accept: "application/json" }, cache: "no-store", signal });
      if (res.ok) return res;
      why = await errorFromFetch(res);
      if (!RETRY_STATUSES.has(res.status)) throw why;
    } catch (err) {
      if (signal.aborted) throw cancelled();
      if (err instanceof RequestFailed) throw err;
      why = networkError();
    }
    if (attempt >= READ_ATTEMPTS) throw why;
    await sleep(why.retryAfterSeconds !== undefined ? why.retryAfterSeconds * 1000 : FIRST_DELAY_MS * attempt, signal);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(cancelled());
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(cancelled());
    };
    signal.addEventListener("abort", stop, { once: true });
  });
}
