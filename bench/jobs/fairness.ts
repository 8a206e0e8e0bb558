/** Part 2 of the jobs benchmark (bench/jobs.ts): a second account's one-page jobs, on the idle service and beside a long job. */
import { join } from "node:path";
import { median } from "../support.ts";
import { call, getJob, JOB_POLL_MS, submit, untilEnded, type Api, type JobView } from "./api.ts";
import { now, ROOT, sleep } from "./common.ts";

const ONE_PAGE = join(ROOT, "test", "fixtures", "ocr", "english.png");
const FAIRNESS_RUNS = 3;

export interface Fairness {
  idleMs: number[];
  loadedMs: number[];
  /** Submission to the first poll that saw the job claimed (no longer queued). */
  idleWaitMs: number[];
  loadedWaitMs: number[];
  ratio: number;
  longJob: { id: string; pages: number; pagesStoredAtStart: number; pagesStoredAtEnd: number; runningThroughout: boolean; finalStatus: string };
  allSucceeded: boolean;
}

/** One one-page job of `api`: submission to succeeded, and to the first poll that saw it claimed (polled every JOB_POLL_MS). */
async function onePage(api: Api): Promise<{ ms: number; waitMs: number; status: string }> {
  const { job, startedAt } = await submit(api, ONE_PAGE, "image/png");
  let claimedAt: number | undefined;
  for (;;) {
    const view = await getJob(api, job.id);
    if (view.status !== "queued") claimedAt ??= now();
    if (view.status !== "queued" && view.status !== "running") return { ms: now() - startedAt, waitMs: claimedAt! - startedAt, status: view.status };
    await sleep(JOB_POLL_MS);
  }
}

export async function fairness(first: Api, second: Api, longPdf: string, longPages: number): Promise<Fairness> {
  const statuses: string[] = [];
  await onePage(second); // warm-up, not counted
  const idleMs: number[] = [];
  const idleWaitMs: number[] = [];
  for (let i = 0; i < FAIRNESS_RUNS; i++) {
    const r = await onePage(second);
    idleMs.push(r.ms);
    idleWaitMs.push(r.waitMs);
    statuses.push(r.status);
  }
  const { job } = await submit(first, longPdf, "application/pdf");
  // Both worker slots busy with the long job: a first range stored.
  let view = await getJob(first, job.id);
  while (view.status === "queued" || (view.status === "running" && view.pages_completed < 4)) {
    await sleep(250);
    view = await getJob(first, job.id);
  }
  const atStart = view.pages_completed;
  const loadedMs: number[] = [];
  const loadedWaitMs: number[] = [];
  for (let i = 0; i < FAIRNESS_RUNS; i++) {
    await sleep(1_000);
    const r = await onePage(second);
    loadedMs.push(r.ms);
    loadedWaitMs.push(r.waitMs);
    statuses.push(r.status);
  }
  view = await getJob(first, job.id);
  const runningThroughout = view.status === "running";
  const atEnd = view.pages_completed;
  const cancelled = await call<JobView>(first, "POST", `/v1/ocr/jobs/${job.id}/cancel`);
  if (cancelled.status !== 200) throw new Error(`cancel answered ${cancelled.status}: ${JSON.stringify(cancelled.body)}`);
  const finalStatus = (await untilEnded(first, job.id)).job.status;
  return {
    idleMs,
    loadedMs,
    idleWaitMs,
    loadedWaitMs,
    ratio: median(loadedMs) / median(idleMs),
    longJob: { id: job.id, pages: longPages, pagesStoredAtStart: atStart, pagesStoredAtEnd: atEnd, runningThroughout, finalStatus },
    allSucceeded: statuses.every((s) => s === "succeeded"),
  };
}
