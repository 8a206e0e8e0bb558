/** The jobs benchmark's run (bench/jobs.ts): the PDFs, the CLI baseline, folio dev's parts 1 and 2, part 3, then the goals, the checks and the report. */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import type { BenchmarkReport } from "../run.ts";
import { freePort, median, positiveInt } from "../support.ts";
import { cliBaseline } from "./cli-baseline.ts";
import { now, ROOT } from "./common.ts";
import { cleanEnv, createAccount, startDev, type Dev } from "./dev.ts";
import { fairness, type Fairness } from "./fairness.ts";
import { longJob, type JobFigures } from "./long-job.ts";
import { TreeMemory } from "./proc.ts";
import { JPEG_QUALITY, SCAN_DPI, scannedPdf } from "./scanned-pdf.ts";
import { twoWorkers } from "./two-workers.ts";

/** The issue's goals. */
const GOALS = { throughputRatio: 0.9, firstPageMs: 5_000, memoryDeltaMiB: 512, fairnessRatio: 3 } as const;
const LONG_JOB_MIN_PAGES = 300;

const s1 = (ms: number) => (ms / 1000).toFixed(1);
const s1OrNever = (ms: number | undefined) => (ms === undefined ? "never" : `${s1(ms)} s`);

const verdict = (met: boolean) => (met ? "met" : "MISSED");
const jobOk = (c: { status: string; inOrderOnce: boolean; failed: number }) => c.status === "succeeded" && c.inOrderOnce && c.failed === 0;

export async function runBenchmark(): Promise<BenchmarkReport> {
  const baseDatabaseUrl = process.env.DATABASE_URL;
  if (!baseDatabaseUrl) throw new Error("jobs needs DATABASE_URL for its two-worker part (run `make bench`)");
  const pages = positiveInt("BENCH_JOB_PAGES", 1000);
  const longPages = Math.max(pages, LONG_JOB_MIN_PAGES);
  const workerPages = positiveInt("BENCH_JOB_WORKER_PAGES", Math.min(100, Math.max(16, pages)));
  const date = new Date().toISOString();
  const git = (...args: string[]) => spawnSync("git", args, { cwd: ROOT, encoding: "utf8" }).stdout.trim();
  const commit = { head: git("rev-parse", "--short", "HEAD"), changedFiles: git("status", "--porcelain").split("\n").filter(Boolean).length, atDevStart: "", atWorkersStart: "" };
  const machine = { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? "?", loadAverageAtStart: os.loadavg().map((x) => Number(x.toFixed(2))) };

  const t0 = now();
  const pdf = await scannedPdf(pages);
  const long = longPages === pages ? pdf : await scannedPdf(longPages);
  const workerPdf = workerPages === pages ? pdf : await scannedPdf(workerPages);
  const pdfMs = now() - t0;
  console.error(`jobs: PDF ${pdf.path} (${(pdf.bytes / 1e6).toFixed(1)} MB, ${pdf.built ? "built" : "cached"} in ${s1(pdfMs)} s); the CLI baseline runs first`);

  // (a)'s baseline, before anything of Folio runs.
  const baseline = await cliBaseline(pdf.path, pages);
  console.error(`jobs: CLI ${baseline.pagesPerSecond.toFixed(3)} pages/s (${s1(baseline.ms)} s); starting folio dev`);

  const dataDir = mkdtempSync(join(os.tmpdir(), "folio-bench-jobs-dev-"));
  let dev: Dev | undefined;
  let tree: TreeMemory | undefined;
  let job: JobFigures;
  let fair: Fairness;
  try {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...cleanEnv(), FOLIO_DATA_DIR: dataDir, FOLIO_HTTP_PORT: String(port), FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(await freePort()), LOG_LEVEL: "warn" };
    // The dev account's plan allows 60 requests a minute, which 100-ms polling passes: two accounts of the bench's own, made with the real CLI.
    const first = createAccount(env, "bench-jobs-first@example.test");
    const second = createAccount(env, "bench-jobs-second@example.test");
    // Others commit while this runs: the code folio dev loads is the tree as it starts.
    commit.atDevStart = git("rev-parse", "--short", "HEAD");
    dev = await startDev(env, Number(env.FOLIO_HTTP_PORT), Number(env.FOLIO_METRICS_PORT));
    tree = new TreeMemory(dev.child.pid!);
    tree.start();
    job = await longJob({ url: dev.url, key: first }, dev, tree, pdf.path, pages);
    console.error(`jobs: the job took ${s1(job.finalMs)} s (${job.pagesPerSecond.toFixed(3)} pages/s); fairness next`);
    fair = await fairness({ url: dev.url, key: first }, { url: dev.url, key: second }, long.path, longPages);
  } catch (err) {
    if (dev) console.error(`jobs: folio dev's output:\n${dev.output().slice(-5_000)}`);
    throw err;
  } finally {
    tree?.stop();
    await dev?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }

  console.error(`jobs: two workers on Postgres, ${workerPages} pages`);
  commit.atWorkersStart = git("rev-parse", "--short", "HEAD");
  const workers = await twoWorkers(baseDatabaseUrl, workerPdf.path, workerPages);

  const ratio = job.pagesPerSecond / baseline.pagesPerSecond;
  const met = {
    throughput: ratio >= GOALS.throughputRatio,
    firstPage: job.firstPageMs !== undefined && job.firstPageMs <= GOALS.firstPageMs,
    memory: job.memory.deltaWithoutForkCopiesMiB <= GOALS.memoryDeltaMiB,
    fairness: fair.ratio <= GOALS.fairnessRatio,
  };
  const checks = {
    cliReadEveryPage: baseline.pages === pages,
    jobSucceededEveryPageOnce: jobOk(job.check),
    fairnessJobsSucceeded: fair.allSucceeded,
    fairnessUnderLoad: fair.longJob.runningThroughout,
    workersJobSucceededEveryPageOnce: jobOk(workers.check),
    bothWorkersRead: workers.bothRead,
    workerCountsAddUp: workers.countsAddUp,
  };
  const ok = Object.values(checks).every(Boolean);
  const m = job.memory;
  const programs = (list: { program: string; count: number; rssMiB: number }[]) => list.map((g) => `${g.program}${g.count > 1 ? ` ×${g.count}` : ""} ${g.rssMiB}`).join(", ");
  const text = [
    `=== jobs: durable OCR jobs on folio dev (local/tesseract, language en), ${date}, commit ${commit.head} (+${commit.changedFiles} changed files; ${commit.atDevStart} as folio dev started, ${commit.atWorkersStart} for the workers), ${machine.cpus} CPUs (${machine.model}), load ${machine.loadAverageAtStart.join(" ")} at start`,
    `scanned PDF: ${pages} pages (${pdf.images.length} corpus page images in turn, JPEG q${JPEG_QUALITY}, ${SCAN_DPI} DPI), ${(pdf.bytes / 1e6).toFixed(1)} MB`,
    `(a) throughput`,
    `  tesseract CLI, 2 at a time: ${pages} pages in ${s1(baseline.ms)} s = ${baseline.pagesPerSecond.toFixed(3)} pages/s (${baseline.tesseractCpuSeconds.toFixed(0)} CPU-s, machine ${(baseline.machineBusy * 100).toFixed(0)}% busy, other work ${baseline.othersCpuSeconds.toFixed(0)} CPU-s, load ${baseline.loadAverage.join(" → ")}; rendering first took ${s1(baseline.renderMs)} s, ${baseline.renderCpuSeconds.toFixed(0)} CPU-s, untimed)`,
    `  the job: upload answered in ${s1(job.uploadMs)} s, final event (${job.finalType}) at ${s1(job.finalMs)} s = ${job.pagesPerSecond.toFixed(3)} pages/s (${job.pagesPerSecondAfterAccepted.toFixed(3)} from the 202)`,
    `  CPU during the job: folio dev ${job.cpu.devOwnSeconds.toFixed(0)} CPU-s itself, ${job.cpu.devChildrenSeconds.toFixed(0)} CPU-s its children (tesseract, pdftoppm), ${job.cpu.treeSeconds.toFixed(0)} CPU-s the whole tree; machine ${(job.cpu.machineBusy * 100).toFixed(0)}% busy, other work ${job.cpu.othersSeconds.toFixed(0)} CPU-s, load ${job.cpu.loadAverage.join(" → ")}`,
    `  ratio job/CLI: ${ratio.toFixed(3)} (goal >= ${GOALS.throughputRatio}: ${verdict(met.throughput)})`,
    `(b) submission to the first page readable: ${s1OrNever(job.firstPageMs)} (goal <= ${GOALS.firstPageMs / 1000} s: ${verdict(met.firstPage)})`,
    `  from the 202 (the job submitted, the upload done): ${job.firstPageMs === undefined ? "never" : `${s1(job.firstPageMs - job.uploadMs)} s`}`,
    `  on the way: upload answered ${s1(job.uploadMs)} s, ocr.job.started seen ${s1OrNever(job.startedEventMs)}, first pdftoppm ${s1OrNever(job.firstPdftoppmMs)}, first tesseract ${s1OrNever(job.firstTesseractMs)}`,
    `(c) memory of the folio dev process tree (sum of VmRSS): idle ${m.idleMiB.toFixed(0)} MiB, peak ${m.peakMiB.toFixed(0)} MiB at ${s1(m.peakAtMs)} s (${m.peakPagesStored} pages stored), peak - idle ${m.deltaMiB.toFixed(0)} MiB`,
    `  at the peak (MiB): ${programs(m.peakProcesses)}`,
    `  without fork copies (a child caught between fork and exec counts its parent's pages again): peak ${m.peakWithoutForkCopiesMiB.toFixed(0)} MiB at ${s1(m.peakWithoutForkCopiesAtMs)} s, peak - idle ${m.deltaWithoutForkCopiesMiB.toFixed(0)} MiB (goal <= ${GOALS.memoryDeltaMiB}: ${verdict(met.memory)})`,
    `  at that peak (MiB): ${programs(m.peakWithoutForkCopiesProcesses)}`,
    `  idle (MiB): ${programs(m.idleProcesses)}`,
    `  the folio dev process alone: idle ${m.devProcessIdleMiB.toFixed(0)} MiB, peak ${m.devProcessPeakMiB.toFixed(0)} MiB at ${s1(m.devProcessPeakAtMs)} s`,
    `(2) fairness: a one-page PNG job of a second account, submission to succeeded: idle ${fair.idleMs.map((x) => x.toFixed(0)).join(", ")} ms; while a ${longPages}-page job ran ${fair.loadedMs.map((x) => x.toFixed(0)).join(", ")} ms; medians ${median(fair.loadedMs).toFixed(0)} / ${median(fair.idleMs).toFixed(0)} = ${fair.ratio.toFixed(2)}× (goal <= ${GOALS.fairnessRatio}×: ${verdict(met.fairness)})`,
    `  of which waiting to be claimed: idle ${fair.idleWaitMs.map((x) => x.toFixed(0)).join(", ")} ms; loaded ${fair.loadedWaitMs.map((x) => x.toFixed(0)).join(", ")} ms`,
    `(3) two folio workers on Postgres: ${workerPages} pages in ${s1(workers.ms)} s = ${workers.pagesPerSecond.toFixed(3)} pages/s; pages per worker ${workers.perWorker.map((w) => w.ok).join(" + ")}${workers.perWorker.some((w) => w.failed) ? ` (failed ${workers.perWorker.map((w) => w.failed).join(" + ")})` : ""}`,
    `checks: ${Object.entries(checks)
      .map(([k, v]) => `${k} ${v ? "ok" : "FAILED"}`)
      .join(", ")}`,
    `pages listed: job ${job.check.listed} (failed ${job.check.failed}, empty ${job.check.empty}), two-worker job ${workers.check.listed} (failed ${workers.check.failed}, empty ${workers.check.empty}); the CLI read nothing on ${baseline.emptyPages} pages`,
  ].join("\n");
  return {
    text,
    json: {
      date,
      commit,
      machine,
      goals: GOALS,
      met,
      checks,
      pdf: { pages, bytes: pdf.bytes, megabytes: pdf.bytes / 1e6, images: pdf.images, jpegQuality: JPEG_QUALITY, dpi: SCAN_DPI, path: pdf.path },
      baseline,
      job,
      throughputRatio: ratio,
      fairness: fair,
      workers,
    },
    ok,
  };
}
