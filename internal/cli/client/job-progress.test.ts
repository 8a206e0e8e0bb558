/** The job progress display: one redrawn line on a terminal, a line per change elsewhere, nothing when off. */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { JobProgress, describe as describeJob, type JobProgressView } from "./job-progress.ts";

function sink(): Writable & { text: string } {
  const w = new Writable({
    write(chunk: Buffer, _enc, cb) {
      w.text += chunk.toString();
      cb();
    },
  }) as Writable & { text: string };
  w.text = "";
  return w;
}

const job = (done: number, o: Partial<JobProgressView> = {}): JobProgressView => ({
  id: "job_1",
  status: "running",
  page_count: 10,
  pages_completed: done,
  pages_failed: 0,
  usage: { processing_time_ms: done * 500 },
  ...o,
});

describe("job progress", () => {
  it("says pages done of the job's pages and the rate on the job's own clock", () => {
    expect(describeJob(job(4))).toBe("4/10 pages · 2.0 pages/s");
    expect(describeJob(job(0, { status: "queued", usage: { processing_time_ms: 0 } }))).toBe("0/10 pages · queued");
    expect(describeJob(job(6, { pages_completed: 5, pages_failed: 1 }))).toBe("6/10 pages (1 failed) · 2.0 pages/s");
    expect(describeJob(job(0, { page_count: null, usage: { processing_time_ms: 300 } }))).toBe("0/? pages · converting");
    // Under a second of work the rate means nothing yet.
    expect(describeJob(job(1, { usage: { processing_time_ms: 400 } }))).toBe("1/10 pages");
  });

  it("prints a plain line per change when stderr is not a terminal", () => {
    const out = sink();
    const p = new JobProgress(out, "lines");
    for (const n of [0, 4, 4, 10]) p.update(job(n, n === 0 ? { status: "queued" } : {}));
    p.stop();
    expect(out.text).toBe("job job_1: 0/10 pages · queued\njob job_1: 4/10 pages · 2.0 pages/s\njob job_1: 10/10 pages · 2.0 pages/s\n");
  });

  it("redraws one line on a terminal and ends it with a newline", () => {
    const out = sink();
    const p = new JobProgress(out, "bar");
    p.update(job(5));
    p.update(job(10));
    p.stop();
    expect(out.text).toBe(`\rjob_1 [${"█".repeat(12)}${"░".repeat(12)}] 5/10 pages · 2.0 pages/s\x1b[K\rjob_1 [${"█".repeat(24)}] 10/10 pages · 2.0 pages/s\x1b[K\n`);
  });

  it("writes nothing when off", () => {
    const out = sink();
    const p = new JobProgress(out, "off");
    p.update(job(3));
    p.stop();
    expect(out.text).toBe("");
  });
});
