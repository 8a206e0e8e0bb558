/**
 * convert-corpus: every office file of the development corpus (default
 * `../shared/corpus/office`, or FOLIO_BENCH_OFFICE_CORPUS; its README says
 * where each came from) through the conversion service as `folio dev` runs
 * it (runsc, sandboxes restored from the checkpoint image, a pool of 2),
 * one at a time with the pool ready before each: the caller's time, the
 * pages, the PNG bytes, or the error code for the files meant to fail
 * (`awkward/`). BENCH_CORPUS_ROUNDS rounds (default 3), medians.
 *
 * Page fidelity: each file's page count against the count its author's
 * application stored in it (`stored-pages.ts`: Word's `<Pages>`, ODF's
 * `meta:page-count`, a DOC's summary information, RTF's `\nofpages`), and
 * over the files that store one: how many convert to exactly that count,
 * and the total against theirs (docs/benchmarks/conversion.md, "Fonts").
 *
 * Real documents rather than the fixtures: page counts, formats and fonts
 * the fixtures do not have. To compare two trees, run this file from each
 * (the same file copied into the other tree), alternating, and compare the
 * medians of the rounds (docs/benchmarks/conversion.md, "The corpus").
 *
 * Standalone: `npx tsx bench/convert-corpus.ts` (root, runsc). Also a
 * `Benchmark` for bench/run.ts.
 */
import { mkdtemp, readFile, readdir, rm, stat } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { extname, join, resolve } from "node:path";
import type { BenchmarkReport } from "./run.ts";
import { ConversionService } from "../internal/conversion/service.ts";
import { CONVERSION_MIME_TYPES, type ConversionFormat } from "../internal/formats/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { PROJECT_ROOT } from "../internal/sandbox/assets.ts";
import { RunscBackend } from "../internal/sandbox/runsc.ts";
import { storedPageCount } from "./stored-pages.ts";
import { benchmarkEntry, median, positiveInt, waitForPool } from "./support.ts";

const CORPUS = resolve(PROJECT_ROOT, process.env.FOLIO_BENCH_OFFICE_CORPUS ?? "../shared/corpus/office");
const POOL = 2;
/** The format a file is declared as, by its extension (a macro-enabled PPTM is sent as PPTX, as a client would). */
const BY_EXTENSION: Readonly<Record<string, ConversionFormat>> = { ".doc": "DOC", ".docx": "DOCX", ".pptx": "PPTX", ".pptm": "PPTX", ".odt": "ODT", ".rtf": "RTF", ".txt": "TXT" };

interface FileRun {
  ms: number;
  /** The page count stored in the file, when it stores one. */
  stored?: number;
  pages?: number;
  pngBytes?: number;
  error?: string;
}

/** The corpus's office files (top level and `awkward/`), relative paths, sorted. */
async function corpusFiles(): Promise<string[]> {
  const entries = await readdir(CORPUS, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && extname(e.name).toLowerCase() in BY_EXTENSION)
    .map((e) => join(e.parentPath, e.name).slice(CORPUS.length + 1))
    .sort();
}

export async function runCorpusBenchmark(rounds = positiveInt("BENCH_CORPUS_ROUNDS", 3)): Promise<BenchmarkReport> {
  if (!(await stat(CORPUS).then((s) => s.isDirectory(), () => false))) {
    return { text: `convert-corpus: no corpus at ${CORPUS} (set FOLIO_BENCH_OFFICE_CORPUS); nothing measured`, json: { corpus: CORPUS, files: [] }, ok: true };
  }
  const loadAtStart = os.loadavg()[0] ?? 0;
  const work = await mkdtemp(join(tmpdir(), "folio-bench-corpus-"));
  const backend = new RunscBackend({ workDir: join(work, "runsc"), prestart: true, restore: true, prestartPool: POOL, logger: createLogger("silent") });
  const service = new ConversionService({
    backend,
    backendName: "runsc",
    limits: { timeoutMs: 120_000, maxDocumentBytes: 50 * 1024 * 1024, maxPages: 100, maxOutputBytes: 512 * 1024 * 1024, concurrency: 1, queueLimit: 1 },
    log: createLogger("silent"),
  });
  try {
    await backend.prepare();
    const files = await corpusFiles();
    const runs = new Map<string, FileRun[]>(files.map((f) => [f, []]));
    for (let r = 0; r < rounds; r++) {
      for (const file of files) {
        await waitForPool(backend, POOL, 120_000);
        const document = await readFile(join(CORPUS, file));
        const started = performance.now();
        const run: FileRun = await service.convert({ document, mimeType: CONVERSION_MIME_TYPES[BY_EXTENSION[extname(file).toLowerCase()]!][0]! }).then(
          (c) => ({ ms: 0, pages: c.pageCount, pngBytes: c.pages.reduce((n, p) => n + p.png.length, 0) }),
          (err: { code?: string }) => ({ ms: 0, error: err.code ?? "internal_error" }),
        );
        run.ms = performance.now() - started;
        const stored = await storedPageCount(join(CORPUS, file), document);
        if (stored !== undefined) run.stored = stored;
        runs.get(file)!.push(run);
      }
    }
    const rows = files.map((file) => {
      const r = runs.get(file)!;
      const last = r.at(-1)!;
      return { file, medianMs: median(r.map((x) => x.ms)), rounds: r.map((x) => Math.round(x.ms)), pages: last.pages, stored: last.stored, pngBytes: last.pngBytes, error: last.error, steady: r.every((x) => x.pages === last.pages && x.error === last.error) };
    });
    const fidelity = pageFidelity(rows);
    const machine = { cpus: os.cpus().length, loadAverage1m: { start: loadAtStart, end: os.loadavg()[0] ?? 0 } };
    const lines = [
      `${files.length} office files of ${CORPUS}, ${rounds} rounds, one at a time through a restored sandbox (pool of ${POOL} ready before each); medians (ms)`,
      ...rows.map(
        (r) =>
          `  ${r.file.padEnd(32)} ${r.medianMs.toFixed(0).padStart(7)} ms  ${r.error ? `error ${r.error}` : `${r.pages} pages${r.stored !== undefined ? ` (stored ${r.stored})` : ""}, ${r.pngBytes} PNG bytes`}  (rounds ${r.rounds.join(" / ")})`,
      ),
      `  sum of the medians: ${rows.reduce((n, r) => n + r.medianMs, 0).toFixed(0)} ms`,
      `page counts against the stored ones: ${fidelity.exact} of ${fidelity.files} files exact; ${fidelity.pages} pages where the files store ${fidelity.stored} (${fidelity.excessPercent >= 0 ? "+" : ""}${fidelity.excessPercent.toFixed(1)}%)`,
      `machine: ${machine.cpus} CPUs, load average (1 min) ${machine.loadAverage1m.start.toFixed(2)} before, ${machine.loadAverage1m.end.toFixed(2)} at the end`,
    ];
    return { text: lines.join("\n"), json: { corpus: CORPUS, rounds, rows, fidelity, machine }, ok: rows.every((r) => r.steady) };
  } finally {
    await backend.close();
    await rm(work, { recursive: true, force: true });
  }
}

/** Over the files that converted and store a page count: exact matches, and the pages made against the pages stored. */
export function pageFidelity(rows: readonly { pages?: number | undefined; stored?: number | undefined }[]): { files: number; exact: number; pages: number; stored: number; excessPercent: number } {
  const counted = rows.filter((r): r is { pages: number; stored: number } => r.pages !== undefined && r.stored !== undefined);
  const pages = counted.reduce((n, r) => n + r.pages, 0);
  const stored = counted.reduce((n, r) => n + r.stored, 0);
  return { files: counted.length, exact: counted.filter((r) => r.pages === r.stored).length, pages, stored, excessPercent: stored ? (100 * (pages - stored)) / stored : 0 };
}

export default await benchmarkEntry(import.meta.url, {
  name: "convert-corpus",
  description: "the corpus's office files through restored runsc sandboxes: time, pages against the stored page count, PNG bytes per file (or the error of the awkward ones)",
  run: () => runCorpusBenchmark(),
});
