/**
 * ocr-tesseract: what Folio's tesseract engine costs on top of the tesseract
 * CLI, and how many PDF pages per second rasterize + OCR achieve.
 *
 * 1. One fixture page (test/fixtures/ocr/english.png, A4 at 200 DPI), timed
 *    BENCH_OCR_RUNS times (default 7) in interleaved rounds of:
 *      cli      - `tesseract english.png stdout -l eng --psm 4` with
 *                 OMP_THREAD_LIMIT=1: the CLI run with the engine's settings;
 *      cli-dflt - `tesseract english.png stdout -l eng`: the CLI as a user
 *                 would type it (automatic layout, OpenMP threads);
 *      engine   - TesseractEngine.extractPage on the same bytes (spawn, stdin,
 *                 TSV parsing, text rebuilding).
 *    One untimed warm-up of each first (page cache, traineddata). Reported:
 *    medians and engine/cli (the target for /v1/ocr: <= 1.15; the
 *    HTTP + gRPC part of /v1/ocr is not measured here).
 * 2. test/fixtures/ocr/ten-pages.pdf (10 A4 pages) rasterized at 200 DPI and
 *    OCRed with page concurrency 1 and 2, BENCH_OCR_ROUNDS times (default 3)
 *    each, two ways:
 *      batch  - rasterizePdf (one pdftoppm for all pages), then OCR in a pool:
 *               what internal/edge/document-input.ts does today;
 *      stream - openPdf, then each worker renders its page and OCRs it, so
 *               OCR starts after one page instead of ten.
 *    Reported: median pages per second. The character error rate of every
 *    page against its ground truth is the correctness check (ok = false when
 *    a page's CER is 0.02 or more).
 *
 * All of it runs on this machine's CPUs; tesseract runs single-threaded per
 * page, so concurrency above the CPU count cannot help.
 */
import { execFile, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { openPdf, rasterizePdf } from "../internal/documents/pdf.ts";
import { TesseractEngine } from "../internal/extraction/engines/tesseract.ts";
import type { ExtractOptions } from "../internal/extraction/types.ts";
import { cer } from "../test/cer.ts";
import type { Benchmark, BenchmarkReport } from "./run.ts";
import { median, positiveInt } from "./support.ts";

const FIXTURES = fileURLToPath(new URL("../test/fixtures/ocr/", import.meta.url));
const PAGE_IMAGE = `${FIXTURES}english.png`;
const PDF = `${FIXTURES}ten-pages.pdf`;
/** The target: engine time per page at most 1.15 × the direct CLI. */
const TARGET_RATIO = 1.15;
/** Correctness: every page of the PDF read with a CER under this. */
const MAX_PAGE_CER = 0.02;
const OPTIONS: ExtractOptions = { extractTables: false, outputFormat: "text", language: "en" };

type Variant = "cli" | "cli-dflt" | "engine";
type Mode = "batch" | "stream";

interface PdfRun {
  mode: Mode;
  concurrency: number;
  round: number;
  seconds: number;
  pagesPerSecond: number;
  maxPageCer: number;
}



function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("tesseract", args, { env, maxBuffer: 64 * 1024 * 1024, encoding: "utf8" }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

/** Runs `fn` over 1..n with at most `limit` at a time. */
async function pool<T>(n: number, limit: number, fn: (pageNumber: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 1;
  const worker = async () => {
    while (next <= n) {
      const p = next++;
      out[p - 1] = await fn(p);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
  return out;
}

async function ocrPdf(engine: TesseractEngine, bytes: Buffer, mode: Mode, concurrency: number, signal: AbortSignal): Promise<string[]> {
  const limits = { maxPages: 100, timeoutMs: 120_000 };
  if (mode === "batch") {
    const { pages } = await rasterizePdf(bytes, limits);
    return pool(pages.length, concurrency, async (n) => (await engine.extractPage({ pageNumber: n, image: pages[n - 1]!, mimeType: "image/png" }, OPTIONS, signal)).text);
  }
  const pdf = await openPdf(bytes, limits);
  try {
    return await pool(pdf.pageCount, concurrency, async (n) => {
      const [image] = await pdf.render(n, n, { signal });
      return (await engine.extractPage({ pageNumber: n, image: image!, mimeType: "image/png" }, OPTIONS, signal)).text;
    });
  } finally {
    await pdf.close();
  }
}

async function measure(): Promise<BenchmarkReport> {
  const runs = positiveInt("BENCH_OCR_RUNS", 7);
  const rounds = positiveInt("BENCH_OCR_ROUNDS", 3);
  const loadAtStart = os.loadavg()[0] ?? 0;
  const engine = new TesseractEngine();
  const signal = new AbortController().signal;
  const image = readFileSync(PAGE_IMAGE);
  const truth = readFileSync(`${FIXTURES}english.txt`, "utf8");

  // ---- 1. one page: CLI against engine
  const engineEnv = { ...process.env, OMP_THREAD_LIMIT: "1" };
  const variants: Record<Variant, () => Promise<string>> = {
    cli: () => runCli([PAGE_IMAGE, "stdout", "-l", "eng", "--psm", "4"], engineEnv),
    "cli-dflt": () => runCli([PAGE_IMAGE, "stdout", "-l", "eng"], process.env),
    engine: async () => (await engine.extractPage({ pageNumber: 1, image, mimeType: "image/png" }, OPTIONS, signal)).text,
  };
  const order = Object.keys(variants) as Variant[];
  const pageCer: Record<Variant, number> = { cli: 0, "cli-dflt": 0, engine: 0 };
  for (const v of order) pageCer[v] = cer(await variants[v](), truth); // warm-up, and the CER of each
  const times: Record<Variant, number[]> = { cli: [], "cli-dflt": [], engine: [] };
  for (let i = 0; i < runs; i++) {
    // Rotate the order each round so no variant always runs right after another.
    for (let k = 0; k < order.length; k++) {
      const v = order[(i + k) % order.length]!;
      times[v].push((await timed(variants[v])).ms);
    }
  }
  const medians = Object.fromEntries(order.map((v) => [v, median(times[v])])) as Record<Variant, number>;
  const ratio = medians.engine / medians.cli;
  const ratioDefault = medians.engine / medians["cli-dflt"];

  // ---- 2. ten-page PDF: pages per second at concurrency 1 and 2
  const pdfBytes = readFileSync(PDF);
  const truths = Array.from({ length: 10 }, (_, i) => readFileSync(`${FIXTURES}ten-pages.page-${i + 1}.txt`, "utf8"));
  const pdfRuns: PdfRun[] = [];
  const configs: Array<[Mode, number]> = [
    ["batch", 1],
    ["batch", 2],
    ["stream", 1],
    ["stream", 2],
  ];
  for (let round = 1; round <= rounds; round++) {
    for (const [mode, concurrency] of configs) {
      const { ms, value: texts } = await timed(() => ocrPdf(engine, pdfBytes, mode, concurrency, signal));
      const maxPageCer = Math.max(...texts.map((t, i) => cer(t, truths[i]!)));
      pdfRuns.push({ mode, concurrency, round, seconds: ms / 1000, pagesPerSecond: texts.length / (ms / 1000), maxPageCer });
      console.log(`  round ${round} ${mode} c=${concurrency}: ${(ms / 1000).toFixed(2)} s, ${(texts.length / (ms / 1000)).toFixed(2)} pages/s, max page CER ${maxPageCer.toFixed(4)}`);
    }
  }
  const pps = (mode: Mode, c: number) => median(pdfRuns.filter((r) => r.mode === mode && r.concurrency === c).map((r) => r.pagesPerSecond));
  const throughput = {
    batch: { c1: pps("batch", 1), c2: pps("batch", 2) },
    stream: { c1: pps("stream", 1), c2: pps("stream", 2) },
  };

  const worstCer = Math.max(...pdfRuns.map((r) => r.maxPageCer), ...Object.values(pageCer));
  const ok = worstCer < MAX_PAGE_CER;
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    node: process.version,
    tesseract: execFileSync("tesseract", ["--version"], { encoding: "utf8" }).split("\n")[0] ?? "unknown",
    loadAverage1m: { start: loadAtStart, end: os.loadavg()[0] ?? 0 },
  };

  const ms = (n: number) => `${n.toFixed(0).padStart(5)} ms`;
  const lines = [
    `machine: ${machine.cpus} CPU(s) (${machine.cpuModel}), node ${machine.node}, ${machine.tesseract}; load ${machine.loadAverage1m.start.toFixed(2)} at start`,
    `one page (${PAGE_IMAGE.slice(FIXTURES.length)}, 1654x2339), ${runs} interleaved runs each, median:`,
    `  cli      (--psm 4, OMP_THREAD_LIMIT=1, the engine's settings) ${ms(medians.cli)}   CER ${pageCer.cli.toFixed(4)}`,
    `  cli-dflt (tesseract defaults)                                 ${ms(medians["cli-dflt"])}   CER ${pageCer["cli-dflt"].toFixed(4)}`,
    `  engine   (TesseractEngine.extractPage)                        ${ms(medians.engine)}   CER ${pageCer.engine.toFixed(4)}`,
    `  engine/cli = ${ratio.toFixed(3)} (target <= ${TARGET_RATIO}: ${ratio <= TARGET_RATIO ? "met" : "MISSED"}); engine/cli-dflt = ${ratioDefault.toFixed(3)}`,
    `ten-pages.pdf (10 A4 pages, 200 DPI), rasterize + OCR, median of ${rounds} rounds:`,
    `  batch  (rasterizePdf, then OCR pool):  c=1 ${throughput.batch.c1.toFixed(2)} pages/s, c=2 ${throughput.batch.c2.toFixed(2)} pages/s (x${(throughput.batch.c2 / throughput.batch.c1).toFixed(2)})`,
    `  stream (openPdf, render+OCR per page): c=1 ${throughput.stream.c1.toFixed(2)} pages/s, c=2 ${throughput.stream.c2.toFixed(2)} pages/s (x${(throughput.stream.c2 / throughput.stream.c1).toFixed(2)})`,
    ok ? `check: every page read with CER < ${MAX_PAGE_CER} (worst ${worstCer.toFixed(4)})` : `check FAILED: a page's CER was ${worstCer.toFixed(4)} (>= ${MAX_PAGE_CER})`,
  ];
  return {
    text: lines.join("\n"),
    ok,
    json: {
      machine,
      settings: { runs, rounds, image: PAGE_IMAGE.slice(FIXTURES.length), pdf: PDF.slice(FIXTURES.length) },
      page: { timesMs: times, medianMs: medians, cer: pageCer, ratio, ratioDefault, target: TARGET_RATIO, targetMet: ratio <= TARGET_RATIO },
      pdf: { runs: pdfRuns, medianPagesPerSecond: throughput },
      ok,
    },
  };
}

/** Runs the benchmark and prints its report (for `tsx -e`); bench/run.ts uses the default export. */
export async function run(): Promise<BenchmarkReport> {
  const report = await measure();
  console.log(report.text);
  return report;
}

const benchmark: Benchmark = {
  name: "ocr-tesseract",
  description: "tesseract engine vs the CLI on one page; pages/s of a 10-page PDF at concurrency 1 and 2",
  run: measure,
};

export default benchmark;
