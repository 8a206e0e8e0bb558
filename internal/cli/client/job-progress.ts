/**
 * A durable job's progress on stderr while `folio ocr --async` or `--job`
 * follows it: on a terminal one line redrawn in place (`\r`), elsewhere (a
 * log, CI) a plain line for each event that changes it. Hand-written,
 * not cli-progress (the synchronous command's bar): cli-progress writes
 * non-terminal output on a timer rather than once per event, and computes its
 * rate from its own start, where this one takes the job's own clock
 * (`usage.processing_time_ms`), which stays right after a reconnect and on
 * `--job` of a job that started long before.
 */
import type { Writable } from "node:stream";

/** The fields of a job (docs/jobs.md) the progress shows. */
export interface JobProgressView {
  id: string;
  status: string;
  page_count: number | null;
  pages_completed: number;
  pages_failed: number;
  usage: { processing_time_ms: number };
}

export type ProgressMode = "bar" | "lines" | "off";

/** Characters of the bar between its brackets. */
const BAR_WIDTH = 24;

export class JobProgress {
  /** The last text drawn or printed, so an event that changes nothing writes nothing. */
  private last = "";
  private drawn = false;

  constructor(
    private readonly out: Writable,
    private readonly mode: ProgressMode,
  ) {}

  /** Shows the job as an event left it. */
  update(job: JobProgressView): void {
    if (this.mode === "off") return;
    const text = describe(job);
    if (text === this.last) return;
    this.last = text;
    if (this.mode === "lines") {
      this.out.write(`job ${job.id}: ${text}\n`);
      return;
    }
    // Back to the line's start, redrawn, the rest of an older, longer line erased.
    this.out.write(`\r${job.id} ${bar(job)} ${text}\x1b[K`);
    this.drawn = true;
  }

  /** Leaves the terminal's line to what follows (the cost, an error). */
  stop(): void {
    if (this.drawn) this.out.write("\n");
    this.drawn = false;
  }
}

/** "7/10 pages · 2.1 pages/s", with the failed pages when there are any; "?" before an office document's pages are known. */
export function describe(job: JobProgressView): string {
  const done = job.pages_completed + job.pages_failed;
  const parts = [`${done}/${job.page_count ?? "?"} pages`];
  if (job.pages_failed > 0) parts[0] += ` (${job.pages_failed} failed)`;
  if (job.status === "queued") parts.push("queued");
  else if (job.page_count === null) parts.push("converting");
  const seconds = job.usage.processing_time_ms / 1000;
  // The job's own clock (from its start, on the server): right after a reconnect too. Below a second it says nothing yet.
  if (done > 0 && seconds >= 1) parts.push(`${(done / seconds).toFixed(1)} pages/s`);
  return parts.join(" · ");
}

function bar(job: JobProgressView): string {
  const done = job.pages_completed + job.pages_failed;
  const filled = job.page_count ? Math.min(BAR_WIDTH, Math.round((done / job.page_count) * BAR_WIDTH)) : 0;
  return `[${"█".repeat(filled)}${"░".repeat(BAR_WIDTH - filled)}]`;
}
