/** Part 1 of the jobs benchmark (bench/jobs.ts): one long job on folio dev, its throughput, first page, memory and CPU. */
import { median } from "../support.ts";
import { checkPages, firstPageReadable, followEvents, getJob, submit, type Api } from "./api.ts";
import { mib, now, sleep } from "./common.ts";
import type { Dev } from "./dev.ts";
import { scrape } from "./metrics.ts";
import { busyShare, byProgram, load1, machineCpu, processCpu, SAMPLE_MS, treeCpu, type TreeMemory } from "./proc.ts";

const IDLE_SETTLE_MS = 10_000;
const IDLE_WINDOW_MS = 5_000;
const since = (at: number | undefined, from: number) => (at === undefined ? undefined : at - from);

const NODE_MEMORY = ["folio_process_resident_memory_bytes", "folio_nodejs_heap_size_used_bytes", "folio_nodejs_heap_size_total_bytes", "folio_nodejs_external_memory_bytes"] as const;

export interface JobFigures {
  id: string;
  pages: number;
  uploadMs: number;
  firstPageMs: number | undefined;
  /** The ocr.job.started event (a worker claimed the first range), and the first pdftoppm and tesseract processes seen (every 250 ms). */
  startedEventMs: number | undefined;
  firstPdftoppmMs: number | undefined;
  firstTesseractMs: number | undefined;
  finalMs: number;
  finalType: string;
  pagesPerSecond: number;
  pagesPerSecondAfterAccepted: number;
  memory: {
    idleMiB: number;
    peakMiB: number;
    deltaMiB: number;
    /** The same without fork copies: the goal is judged on this one (a fork copy's pages are its parent's). */
    peakWithoutForkCopiesMiB: number;
    deltaWithoutForkCopiesMiB: number;
    peakWithoutForkCopiesAtMs: number;
    peakWithoutForkCopiesProcesses: { program: string; count: number; rssMiB: number }[];
    peakAtMs: number;
    peakPagesStored: number;
    peakProcesses: { program: string; count: number; rssMiB: number }[];
    idleProcesses: { program: string; count: number; rssMiB: number }[];
    devProcessIdleMiB: number;
    devProcessPeakMiB: number;
    devProcessPeakAtMs: number;
    /** The dev process's own figures (its /metrics), every 5 s: resident, V8 heap used and total, external. */
    nodeMemory: { atMs: number; rssMiB: number; heapUsedMiB: number; heapTotalMiB: number; externalMiB: number }[];
    /** Total, 1 s apart, from submission. */
    seriesMiB: { atMs: number; totalMiB: number; devMiB: number }[];
  };
  cpu: {
    devOwnSeconds: number;
    devChildrenSeconds: number;
    /** The whole tree's (the runsc pool's included). */
    treeSeconds: number;
    machineBusy: number;
    /** CPU seconds the rest of the machine (other work, not this benchmark) used during the job. */
    othersSeconds: number;
    loadAverage: [number, number];
  };
  progress: { atMs: number; pages: number }[];
  check: { status: string; listed: number; inOrderOnce: boolean; failed: number; empty: number };
}

export async function longJob(api: Api, dev: Dev, tree: TreeMemory, pdf: string, pages: number): Promise<JobFigures> {
  // Idle: after start-up has settled (the conversion pool restores its sandboxes), a few seconds' median.
  await sleep(IDLE_SETTLE_MS);
  const idleFrom = now();
  await sleep(IDLE_WINDOW_MS);
  const idleSamples = tree.between(idleFrom, now());
  const idleKiB = median(idleSamples);
  const idleProcesses = byProgram(tree.latest, dev.child.pid!);
  const devIdleKiB = median(tree.samples.filter((s) => s.at >= idleFrom).map((s) => s.rootKiB));

  const nodeMemory: JobFigures["memory"]["nodeMemory"] = [];
  let ended = false;
  let startedEventAt: number | undefined;
  const progress: { atMs: number; pages: number }[] = [];
  tree.resetPeak();
  const cpu0 = processCpu(dev.child.pid!);
  const tree0 = treeCpu(dev.child.pid!);
  const self0 = processCpu("self").own;
  const l0 = load1();
  const m0 = machineCpu();
  const started = now();
  const scraper = setInterval(() => {
    void scrape(dev.metricsUrl, NODE_MEMORY).then(
      (m) =>
        nodeMemory.push({
          atMs: Math.round(now() - started),
          rssMiB: Math.round((m.folio_process_resident_memory_bytes ?? 0) / 2 ** 20),
          heapUsedMiB: Math.round((m.folio_nodejs_heap_size_used_bytes ?? 0) / 2 ** 20),
          heapTotalMiB: Math.round((m.folio_nodejs_heap_size_total_bytes ?? 0) / 2 ** 20),
          externalMiB: Math.round((m.folio_nodejs_external_memory_bytes ?? 0) / 2 ** 20),
        }),
      () => undefined,
    );
  }, 5_000);
  try {
    const { job, startedAt, acceptedAt } = await submit(api, pdf, "application/pdf");
    const [firstAt, final] = await Promise.all([
      firstPageReadable(api, job.id, () => ended),
      followEvents(api, job.id, (e) => {
        if (e.type === "ocr.job.started") startedEventAt ??= e.at;
        progress.push({ atMs: Math.round(e.at - startedAt), pages: e.job.pages_completed + e.job.pages_failed });
      }).finally(() => (ended = true)),
    ]);
    const cpu1 = processCpu(dev.child.pid!);
    const tree1 = treeCpu(dev.child.pid!);
    const self1 = processCpu("self").own;
    const m1 = machineCpu();
    const peak = tree.peak!;
    const peak2 = tree.peakWithoutForkCopies!;
    const jobSamples = tree.samples.filter((s) => s.at >= startedAt && s.at <= final.at);
    const devPeak = jobSamples.reduce((a, s) => (s.rootKiB > a.rootKiB ? s : a), jobSamples[0]!);
    const storedAtPeak = progress.filter((p) => p.atMs <= peak.at - startedAt).at(-1)?.pages ?? 0;
    const series = jobSamples.filter((_, i) => i % Math.round(1000 / SAMPLE_MS) === 0).map((s) => ({ atMs: Math.round(s.at - startedAt), totalMiB: Math.round(mib(s.totalKiB)), devMiB: Math.round(mib(s.rootKiB)) }));
    const view = await getJob(api, job.id);
    const listed = await checkPages(api, job.id, pages);
    const finalMs = final.at - startedAt;
    return {
      id: job.id,
      pages,
      uploadMs: acceptedAt - startedAt,
      firstPageMs: firstAt === undefined ? undefined : firstAt - startedAt,
      startedEventMs: startedEventAt === undefined ? undefined : startedEventAt - startedAt,
      firstPdftoppmMs: since(tree.firstSeen.get("pdftoppm"), startedAt),
      // The CLI, or the resident program that reads in its place (docs/adr/0009-resident-tesseract.md): the first seen.
      firstTesseractMs: since(["tesseract", "folio-tesseract"].map((n) => tree.firstSeen.get(n)).reduce((a, b) => (b === undefined || (a !== undefined && a <= b) ? a : b)), startedAt),
      finalMs,
      finalType: final.type,
      pagesPerSecond: pages / (finalMs / 1000),
      pagesPerSecondAfterAccepted: pages / ((final.at - acceptedAt) / 1000),
      memory: {
        idleMiB: mib(idleKiB),
        peakMiB: mib(peak.totalKiB),
        deltaMiB: mib(peak.totalKiB - idleKiB),
        peakWithoutForkCopiesMiB: mib(peak2.totalKiB),
        deltaWithoutForkCopiesMiB: mib(peak2.totalKiB - idleKiB),
        peakWithoutForkCopiesAtMs: peak2.at - startedAt,
        peakWithoutForkCopiesProcesses: byProgram(peak2.processes.filter((p) => !p.forkCopy), dev.child.pid!),
        peakAtMs: peak.at - startedAt,
        peakPagesStored: storedAtPeak,
        peakProcesses: byProgram(peak.processes, dev.child.pid!),
        idleProcesses,
        devProcessIdleMiB: mib(devIdleKiB),
        devProcessPeakMiB: mib(devPeak.rootKiB),
        devProcessPeakAtMs: devPeak.at - startedAt,
        nodeMemory,
        seriesMiB: series,
      },
      cpu: {
        devOwnSeconds: cpu1.own - cpu0.own,
        devChildrenSeconds: cpu1.children - cpu0.children,
        treeSeconds: tree1 - tree0,
        machineBusy: busyShare(m0, m1),
        othersSeconds: m1.busy - m0.busy - (tree1 - tree0) - (self1 - self0),
        loadAverage: [l0, load1()],
      },
      progress,
      check: { status: view.status, ...listed },
    };
  } finally {
    clearInterval(scraper);
  }
}
