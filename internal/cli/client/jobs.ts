/**
 * `folio ocr --async` and `folio ocr --job`: a durable OCR job (docs/jobs.md)
 * submitted, followed over its server-sent events with a progress display,
 * and its result written the way the synchronous command writes one. Ctrl-C
 * while following leaves the job running (or cancels it with
 * `--cancel-on-interrupt`) and says how to pick it up again.
 */
import { once } from "node:events";
import type { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { basename } from "node:path";
import { formatCents } from "../../billing/format.ts";
import type { Io, OcrOptions } from "./commands.ts";
import { ClientError, apiFailure, ndjson, send, type Connection } from "./http.ts";
import { openInput } from "./input.ts";
import { JobProgress, type JobProgressView, type ProgressMode } from "./job-progress.ts";
import { sseMessages } from "./sse.ts";

/** The exit status after Ctrl-C, as shells report a process ended by SIGINT (128 + 2). */
export const INTERRUPTED = 130;

const JOBS = "/v1/ocr/jobs";
const FINAL_EVENTS = new Set(["ocr.job.succeeded", "ocr.job.failed", "ocr.job.cancelled"]);
const FINISHED = new Set(["succeeded", "failed", "cancelled"]);

/**
 * Answers to the events request that another try can get past. Reading
 * events is free and resumable from the last one seen, so retrying is safe;
 * every other status (401, 403, 404 …) is final.
 */
const RETRY_STATUSES: Record<number, string> = {
  429: "the rate limit: wait as long as Retry-After says",
  502: "a proxy or load balancer found no replica (one restarting)",
  503: "the replica is stopping or overloaded",
  504: "a proxy gave up waiting for a replica",
};
/**
 * Tries in a row without getting an event before the follower gives up (the
 * job goes on regardless). With RETRY_DELAYS_MS they span about a minute:
 * long enough for a rolling restart of the edge.
 */
const MAX_RETRIES = 8;
const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 15_000];

/** The job as the API shows it (docs/jobs.md): the fields the terminal uses. */
export interface Job extends JobProgressView {
  model: string;
  error?: { code: string; message: string };
  usage: { pages_processed: number; total_cost_cents: number; processing_time_ms: number };
}

interface JobEvent {
  id: string;
  type: string;
  sequence: number;
  data: Job;
}

/** A stored page, as the result lists it and its NDJSON streams it. */
interface ResultPage {
  page_number: number;
  text: string;
  error?: { code: string; message: string };
}

/** `folio ocr --async FILE|URL`: submits the job, follows it, writes its result. Answers the exit status. */
export async function runOcrJob(conn: Connection, target: string, o: OcrOptions, io: Io): Promise<number> {
  // Listening before the job's id is printed: a Ctrl-C right after it still gets the way back to the job.
  const ctrlC = new Interruption(io);
  try {
    let job: Job;
    try {
      job = await submit(conn, target, o, ctrlC.signal);
    } catch (err) {
      if (!ctrlC.happened) throw err;
      io.stderr.write("folio: interrupted before Folio answered the submission (had it accepted the job already, the job goes on: GET /v1/ocr/jobs lists it)\n");
      return INTERRUPTED;
    }
    const count = job.page_count === null ? "pages not known until converted" : `${job.page_count} page${job.page_count === 1 ? "" : "s"}`;
    io.stderr.write(`job ${job.id} ${job.status} · ${count} · ${job.model}\n`);
    return await followAndWrite(conn, job, o, io, ctrlC);
  } finally {
    ctrlC.dispose();
  }
}

/** `folio ocr --job ID`: follows a job until it ends (at once for a finished one), writes its result. Answers the exit status. */
export async function runFollowJob(conn: Connection, id: string, o: OcrOptions, io: Io): Promise<number> {
  const res = await send(conn, `${JOBS}/${encodeURIComponent(id)}`, { headers: conn.headers });
  if (res.status !== 200) throw await apiFailure(res);
  const ctrlC = new Interruption(io);
  try {
    return await followAndWrite(conn, (await res.json()) as Job, o, io, ctrlC);
  } finally {
    ctrlC.dispose();
  }
}

/**
 * Ctrl-C while a job is submitted or followed: noted, and the request in
 * flight aborted. Only the first: once it happened the process's own
 * handling is back, so a second Ctrl-C ends the command at once.
 */
class Interruption {
  private readonly stop = new AbortController();
  private off: (() => void) | undefined;

  constructor(io: Io) {
    this.off = io.onInterrupt?.(() => {
      this.dispose();
      this.stop.abort();
    });
  }

  get signal(): AbortSignal {
    return this.stop.signal;
  }

  get happened(): boolean {
    return this.stop.signal.aborted;
  }

  dispose(): void {
    this.off?.();
    this.off = undefined;
  }
}

async function followAndWrite(conn: Connection, job: Job, o: OcrOptions, io: Io, ctrlC: Interruption): Promise<number> {
  const mode: ProgressMode = o.progress === false ? "off" : io.stderr.isTTY === true ? "bar" : "lines";
  const progress = new JobProgress(io.stderr, mode);
  let final = job;
  if (!FINISHED.has(job.status)) {
    try {
      progress.update(job);
      final = await follow(conn, job, progress, ctrlC.signal);
    } catch (err) {
      if (!ctrlC.happened) throw err;
    } finally {
      progress.stop();
    }
    if (ctrlC.happened) {
      await interrupt(conn, job.id, o, io);
      return INTERRUPTED;
    }
  }
  // The job has ended: Ctrl-C from here is the process's (nothing to leave running or cancel).
  ctrlC.dispose();
  await finish(conn, final, o, io);
  return 0;
}

/** Ctrl-C: the job goes on (said how to follow it again), or with --cancel-on-interrupt is cancelled. */
async function interrupt(conn: Connection, id: string, o: OcrOptions, io: Io): Promise<void> {
  const again = `folio ocr --job ${id}${o.format && o.format !== "text" ? ` --format ${o.format}` : ""}`;
  if (!o.cancelOnInterrupt) {
    io.stderr.write(`folio: interrupted; job ${id} goes on without this terminal. Follow it again and write its result: ${again}\n`);
    return;
  }
  try {
    const res = await send(conn, `${JOBS}/${encodeURIComponent(id)}/cancel`, { method: "POST", headers: conn.headers });
    if (res.status !== 200) throw await apiFailure(res);
    const job = (await res.json()) as Job;
    io.stderr.write(
      job.status === "cancelled"
        ? `folio: interrupted; job ${id} cancelled after ${job.pages_completed} page${job.pages_completed === 1 ? "" : "s"} (charged ${formatCents(job.usage.total_cost_cents)})\n`
        : `folio: interrupted; job ${id} had already ${job.status}: ${again} writes its result\n`,
    );
  } catch (err) {
    io.stderr.write(`folio: interrupted; job ${id} could not be cancelled (${(err as Error).message}); it goes on: ${again}\n`);
  }
}

async function submit(conn: Connection, target: string, o: OcrOptions, signal: AbortSignal): Promise<Job> {
  const metadata = metadataOf(o.metadata ?? []);
  let init: RequestInit;
  if (/^https?:\/\//i.test(target)) {
    const options = {
      ...(o.tables ? { extract_tables: true } : {}),
      ...(o.language ? { language: o.language } : {}),
      output_format: o.format ?? "text",
    };
    const body = {
      url: target,
      ...(o.model ? { model: o.model } : {}),
      ...(o.strategy ? { strategy: o.strategy } : {}),
      ...(o.pages !== undefined ? { pages: o.pages } : {}),
      options,
      ...(metadata ? { metadata } : {}),
    };
    init = { method: "POST", headers: { ...conn.headers, "content-type": "application/json" }, body: JSON.stringify(body), signal };
  } else {
    // The file part first: the server streams it to disk as it arrives; the fields are small.
    const form = new FormData();
    form.append("file", await openInput(target), basename(target));
    const fields: Record<string, string | undefined> = {
      model: o.model,
      strategy: o.strategy,
      pages: o.pages,
      extract_tables: o.tables ? "true" : undefined,
      language: o.language,
      output_format: o.format ?? "text",
      metadata: metadata ? JSON.stringify(metadata) : undefined,
    };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) form.append(k, v);
    init = { method: "POST", headers: conn.headers, body: form, signal };
  }
  const res = await send(conn, JOBS, init);
  if (res.status !== 202) throw await apiFailure(res);
  return (await res.json()) as Job;
}

/** `--metadata k=v` (repeatable) as the job's metadata; the server checks the sizes (docs/jobs.md). */
export function metadataOf(pairs: readonly string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const metadata: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new ClientError(`--metadata takes key=value, not '${pair}'`);
    const key = pair.slice(0, eq);
    if (Object.hasOwn(metadata, key)) throw new ClientError(`--metadata names '${key}' twice`);
    metadata[key] = pair.slice(eq + 1);
  }
  return metadata;
}

/**
 * The job's events until its final one: the job as that event left it.
 * A dropped connection, a stream that ends early or a RETRY_STATUSES answer
 * is picked up again with Last-Event-ID, the last sequence seen.
 */
async function follow(conn: Connection, job: Job, progress: JobProgress, signal: AbortSignal): Promise<Job> {
  let lastSequence = 0;
  let failures = 0;
  for (;;) {
    let problem: string;
    let waitMs: number | undefined;
    try {
      const res = await fetch(`${conn.baseUrl}${JOBS}/${encodeURIComponent(job.id)}/events`, {
        headers: { ...conn.headers, accept: "text/event-stream", ...(lastSequence > 0 ? { "last-event-id": String(lastSequence) } : {}) },
        signal,
      });
      if (res.status === 200 && res.body) {
        for await (const message of sseMessages(res.body)) {
          const event = parseEvent(message.data);
          lastSequence = event.sequence;
          failures = 0;
          progress.update(event.data);
          // Leaving the loop cancels the stream (the server ends it after this event anyway).
          if (FINAL_EVENTS.has(event.type)) return event.data;
        }
        problem = "the event stream ended before the job did";
      } else if (RETRY_STATUSES[res.status]) {
        const retryAfter = Number(res.headers.get("retry-after"));
        if (retryAfter > 0) waitMs = retryAfter * 1000;
        await res.body?.cancel().catch(() => undefined);
        problem = `HTTP ${res.status}`;
      } else {
        throw await apiFailure(res);
      }
    } catch (err) {
      if (signal.aborted || err instanceof ClientError) throw err;
      // fetch's own failures: the connection refused, reset or cut mid-stream ("terminated").
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      problem = cause?.code ?? cause?.message ?? (err as Error).message;
    }
    failures++;
    if (failures > MAX_RETRIES) {
      throw new ClientError(`lost job ${job.id}'s events after ${MAX_RETRIES} tries (${problem}); the job goes on: folio ocr --job ${job.id} follows it again`);
    }
    await sleep(waitMs ?? RETRY_DELAYS_MS[Math.min(failures, RETRY_DELAYS_MS.length) - 1]!, undefined, { signal });
  }
}

function parseEvent(data: string): JobEvent {
  try {
    const event = JSON.parse(data) as JobEvent;
    if (typeof event.sequence === "number" && typeof event.type === "string" && event.data && typeof event.data.id === "string") return event;
  } catch {
    /* reported below */
  }
  throw new ClientError(`the server sent a job event that is not one: ${data.slice(0, 100)}`);
}

/** A finished job: its result on stdout and the cost on stderr, or (failed, cancelled) its error as the command's failure. */
async function finish(conn: Connection, job: Job, o: OcrOptions, io: Io): Promise<void> {
  if (job.status === "failed") {
    const e = job.error ?? { code: "internal_error", message: "the server gave no reason" };
    throw new ClientError(`job ${job.id} failed: ${e.message} [${e.code}]`, e.code);
  }
  if (job.status === "cancelled") {
    throw new ClientError(`job ${job.id} was cancelled after ${job.pages_completed} of ${job.page_count ?? "?"} pages (charged ${formatCents(job.usage.total_cost_cents)}) [cancelled]`, "cancelled");
  }
  const path = `${JOBS}/${encodeURIComponent(job.id)}/result`;
  if (o.format === "json") {
    // The whole result, as the synchronous command prints it: one JSON document.
    const res = await send(conn, path, { headers: conn.headers });
    if (res.status !== 200) throw await apiFailure(res);
    const body = (await res.json()) as { result: { pages: ResultPage[] } };
    for (const p of body.result.pages) warnFailed(io.stderr, p);
    await put(io.stdout, `${JSON.stringify(body, null, 2)}\n`);
  } else {
    // Text: one page a line from the server, written as it comes, so a 5,000-page job is never whole in memory here.
    const res = await send(conn, `${path}?format=ndjson`, { headers: { ...conn.headers, accept: "application/x-ndjson" } });
    if (res.status !== 200) throw await apiFailure(res);
    await writePages(io, ndjson<{ page: ResultPage }>(res));
  }
  io.stderr.write(`${costLine(job)}\n`);
}

/**
 * The pages' texts joined by a blank line and ended by a newline: exactly
 * what the synchronous command prints for `result.text` (the API joins a
 * result's pages the same way).
 */
async function writePages(io: Io, lines: AsyncIterable<{ page: ResultPage }>): Promise<void> {
  let first = true;
  let last = "";
  for await (const { page } of lines) {
    warnFailed(io.stderr, page);
    const text = first ? page.text : `\n\n${page.text}`;
    first = false;
    if (text) {
      await put(io.stdout, text);
      last = text;
    }
  }
  if (!last.endsWith("\n")) await put(io.stdout, "\n");
}

function warnFailed(out: Writable, p: ResultPage): void {
  if (p.error) out.write(`page ${p.page_number} could not be read: ${p.error.message} [${p.error.code}]\n`);
}

/** Writes, waiting while the reader (a pipe, a slow terminal) is behind. */
async function put(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, "drain");
}

function costLine(job: Job): string {
  const pages = job.usage.pages_processed;
  const failed = job.pages_failed > 0 ? ` (${job.pages_failed} failed)` : "";
  return `cost: ${formatCents(job.usage.total_cost_cents)} · ${pages} page${pages === 1 ? "" : "s"}${failed} · ${job.model} · ${(job.usage.processing_time_ms / 1000).toFixed(1)} s · ${job.id}`;
}
