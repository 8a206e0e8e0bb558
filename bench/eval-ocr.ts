/**
 * `make eval`: reading quality of Folio's local models against the tesseract
 * CLI, on a corpus of real pages with ground truth (default
 * `../shared/corpus/ocr`, or FOLIO_EVAL_CORPUS; its README describes it).
 *
 * For every image `X.<png|jpg|jpeg|tif|tiff>` with a `X.gt.txt`:
 * - each local model reads it as `/v1/ocr` would have it read (the engine
 *   the extraction service runs, the image bytes unchanged, no language
 *   hint: the model finds the language itself);
 * - the tesseract CLI reads it with `--psm 3` and with `--psm 4`, told the
 *   language as the corpus README says (`deu` for `*_de_*` and `dta_*`,
 *   `fra` for `*_fr_*` where installed, `eng` otherwise).
 * Scores, per file, per kind (page, receipt, block, line: the README's
 * table) and in total (summed edits over summed truth characters; F1 over
 * pooled word counts):
 * - CER: edit distance over truth characters, after whitespace
 *   normalisation (order-sensitive);
 * - F1: bag-of-words F1 over whitespace-separated tokens (order-insensitive).
 * Both sides are NFC; historical characters are mapped as the README allows
 * (long s → s, combining e above → umlaut, ⸗ → -); SROIE receipts compare
 * case-insensitively (their truth is upper-cased).
 *
 * Goals checked (issue 11): total CER of the best local model at most 0.9 ×
 * the better CLI mode's; no page lost (F1 under 0.5 where the better CLI
 * mode gets 0.8 or more).
 *
 * Reading order (issue 26 part 5): with local/tesseract among the models,
 * each page is also read by local/tesseract with every region where the
 * geometry's table order and tesseract's disagree forced to the geometry's
 * (`order:layout`) and to tesseract's (`order:tesseract`); the report lists
 * the pages where the two differ, which was closer to the truth and which
 * the evidence (local/tesseract as it runs) chose.
 *
 * Usage: npx tsx bench/eval-ocr.ts [--models local/tesseract,local/ppocr] [--only name-substring]
 * Writes test-artifacts/eval-ocr.json. Exit code 1 when a reader failed on a file.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { localEngines, shutdownLocalEngines } from "../internal/extraction/index.ts";
import { StraightenedEngine } from "../internal/extraction/engines/straighten.ts";
import { TesseractEngine } from "../internal/extraction/engines/tesseract.ts";
import { installedTraineddata } from "../internal/extraction/engines/tesseract-languages.ts";
import type { Engine } from "../internal/extraction/types.ts";
import { levenshtein, normalizeWhitespace } from "../test/cer.ts";
import { exitWithMain, median } from "./support.ts";

const TESSERACT_MODEL = "local/tesseract";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CORPUS = resolve(ROOT, process.env.FOLIO_EVAL_CORPUS ?? "../shared/corpus/ocr");
const IMAGE = /\.(png|jpe?g|tiff?)$/i;
const CONCURRENCY = Math.max(1, Math.min(2, os.availableParallelism()));

interface Score {
  edits: number;
  truthChars: number;
  tp: number;
  hypWords: number;
  truthWords: number;
}

interface FileResult {
  file: string;
  kind: string;
  truthChars: number;
  readers: Record<string, { cer: number; f1: number; ms: number; error?: string; score: Score }>;
}

/** Both sides of a comparison: NFC, the README's mappings of historical characters, whitespace collapsed. */
export function normalizeForScoring(text: string, caseInsensitive: boolean): string {
  let t = text
    .normalize("NFD")
    .replace(/([aouAOU])\u0364/g, "$1\u0308")
    .normalize("NFC")
    .replace(/ſ/g, "s")
    .replace(/⸗/g, "-");
  t = normalizeWhitespace(t);
  return caseInsensitive ? t.toUpperCase() : t;
}

function bag(text: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const w of text.split(" ").filter(Boolean)) m.set(w, (m.get(w) ?? 0) + 1);
  return m;
}

export function score(hypothesis: string, truth: string): Score {
  const hb = bag(hypothesis);
  const tb = bag(truth);
  let tp = 0;
  let hypWords = 0;
  let truthWords = 0;
  for (const [w, c] of hb) {
    hypWords += c;
    tp += Math.min(c, tb.get(w) ?? 0);
  }
  for (const c of tb.values()) truthWords += c;
  return { edits: levenshtein(hypothesis, truth), truthChars: [...truth].length, tp, hypWords, truthWords };
}

function cerOf(s: Score): number {
  return s.truthChars ? s.edits / s.truthChars : 0;
}

function f1Of(s: Score): number {
  return s.hypWords + s.truthWords ? (2 * s.tp) / (s.hypWords + s.truthWords) : 1;
}

function add(a: Score, b: Score): Score {
  return { edits: a.edits + b.edits, truthChars: a.truthChars + b.truthChars, tp: a.tp + b.tp, hypWords: a.hypWords + b.hypWords, truthWords: a.truthWords + b.truthWords };
}

const ZERO: Score = { edits: 0, truthChars: 0, tp: 0, hypWords: 0, truthWords: 0 };

/** Kinds from the corpus README's table (`| \`file\` | kind | …`); "page" when it does not say. */
export function kinds(): Map<string, string> {
  const out = new Map<string, string>();
  const readme = join(CORPUS, "..", "README.md");
  if (!existsSync(readme)) return out;
  for (const line of readFileSync(readme, "utf8").split("\n")) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*(page|receipt|block|line)\s*\|/.exec(line);
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

function cliLanguage(name: string, installed: ReadonlySet<string>): string {
  if (/_de_|^dta_/.test(name)) return "deu";
  if (/_fr_/.test(name) && installed.has("fra")) return "fra";
  return "eng";
}

function runCli(file: string, psm: number, lang: string): Promise<string> {
  return new Promise((res, rej) =>
    execFile("tesseract", [file, "stdout", "-l", lang, "--psm", String(psm)], { env: { ...process.env, OMP_THREAD_LIMIT: "1" }, maxBuffer: 64 << 20, encoding: "utf8" }, (err, out) =>
      err ? rej(err) : res(out),
    ),
  );
}

/**
 * Pages where the geometry's order and tesseract's differ in `local/tesseract`'s
 * reading (layout/page.ts): which is closer to the truth, and which the
 * evidence of the page chose (both, on a page with regions decided each way).
 */
export function orderWins(results: readonly FileResult[]): { summary: string; pages: { file: string; layout: number; tesseract: number; evidence: number; winner: string; chose: string }[] } {
  const pages = results.flatMap((r) => {
    const [l, t, e] = ["order:layout", "order:tesseract", TESSERACT_MODEL].map((m) => r.readers[m]);
    if (!l || !t || !e || l.error || t.error || e.error || l.score.edits === t.score.edits) return [];
    const [layout, tesseract, evidence] = [l.score.edits, t.score.edits, e.score.edits];
    const chose = evidence === layout ? "layout" : evidence === tesseract ? "tesseract" : "both";
    return [{ file: r.file, layout, tesseract, evidence, winner: layout < tesseract ? "layout" : "tesseract", chose }];
  });
  const count = (f: (p: (typeof pages)[number]) => boolean) => pages.filter(f).length;
  const edits = (k: "layout" | "tesseract" | "evidence") => pages.reduce((s, p) => s + p[k], 0);
  const summary = [
    `reading order (local/tesseract, ${pages.length} pages where the geometry's table order and tesseract's give different edits):`,
    `  closer to the truth: the geometry's on ${count((p) => p.winner === "layout")}, tesseract's on ${count((p) => p.winner === "tesseract")};` +
      ` the evidence chose the closer on ${count((p) => p.chose === p.winner)}, the other on ${count((p) => p.chose !== p.winner && p.chose !== "both")}, each on some regions on ${count((p) => p.chose === "both")}`,
    `  edits on those pages: always the geometry's ${edits("layout")}, always tesseract's ${edits("tesseract")}, by evidence ${edits("evidence")}`,
    ...pages.map((p) => `  ${p.file.padEnd(26)} geometry ${p.layout}, tesseract ${p.tesseract}, evidence ${p.evidence} (chose ${p.chose})`),
  ].join("\n");
  return { summary, pages };
}

async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<number> {
  if (!existsSync(CORPUS)) {
    console.error(`eval: no corpus at ${CORPUS} (set FOLIO_EVAL_CORPUS to a folder of X.<image> + X.gt.txt)`);
    return 2;
  }
  const only = arg("--only");
  const engines = localEngines();
  const wanted = (arg("--models") ?? [...engines.keys()].join(",")).split(",").filter(Boolean);
  for (const m of wanted) if (!engines.has(m)) throw new Error(`eval: unknown local model '${m}'; local models: ${[...engines.keys()].join(", ")}`);
  const installed = await installedTraineddata();
  const kindOf = kinds();
  const files = readdirSync(CORPUS)
    .filter((f) => IMAGE.test(f) && existsSync(join(CORPUS, f.replace(IMAGE, ".gt.txt"))))
    .filter((f) => !only || f.includes(only))
    .sort();
  // Part 5 of issue 26: local/tesseract with the order of every region of disagreement forced one way, against the evidence's choice.
  const forced = new Map<string, Engine>(
    wanted.includes(TESSERACT_MODEL)
      ? (["layout", "tesseract"] as const).map((o) => {
          const e = new TesseractEngine({ readingOrder: o });
          return [`order:${o}`, new StraightenedEngine(e, e)];
        })
      : [],
  );
  const readers = ["cli-psm3", "cli-psm4", ...wanted, ...forced.keys()];
  const results: FileResult[] = [];
  let failures = 0;
  const jobs = files.flatMap((file) => readers.map((reader) => ({ file, reader })));
  const byFile = new Map<string, FileResult>();
  for (const file of files) {
    const r: FileResult = { file, kind: kindOf.get(file) ?? "page", truthChars: 0, readers: {} };
    byFile.set(file, r);
    results.push(r);
  }
  await pool(jobs, CONCURRENCY, async ({ file, reader }) => {
    const path = join(CORPUS, file);
    const name = file.replace(IMAGE, "");
    const ci = name.startsWith("sroie_");
    const truth = normalizeForScoring(readFileSync(join(CORPUS, `${name}.gt.txt`), "utf8"), ci);
    const started = performance.now();
    let text = "";
    let error: string | undefined;
    try {
      if (reader.startsWith("cli-psm")) text = await runCli(path, Number(reader.slice(7)), cliLanguage(name, installed));
      else {
        const image = readFileSync(path);
        const r = await (engines.get(reader) ?? forced.get(reader))!.extractPage({ pageNumber: 1, image, mimeType: "image/png" }, { extractTables: false, outputFormat: "text" }, AbortSignal.timeout(300_000));
        text = r.text;
      }
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      failures++;
    }
    const s = score(normalizeForScoring(text, ci), truth);
    const fr = byFile.get(file)!;
    fr.truthChars = s.truthChars;
    fr.readers[reader] = { cer: cerOf(s), f1: f1Of(s), ms: Math.round(performance.now() - started), score: s, ...(error ? { error } : {}) };
    process.stderr.write(".");
  });
  process.stderr.write("\n");
  await shutdownLocalEngines();

  const col = (s: string) => s.padStart(16);
  const lines: string[] = [];
  lines.push(`corpus: ${CORPUS} (${files.length} images); cells are CER / F1`);
  lines.push(["file".padEnd(26), "kind".padEnd(8), ...readers.map(col)].join(""));
  for (const r of results) {
    lines.push([r.file.padEnd(26), r.kind.padEnd(8), ...readers.map((m) => {
      const x = r.readers[m];
      return col(x ? (x.error ? "FAILED" : `${x.cer.toFixed(3)} / ${x.f1.toFixed(2)}`) : "-");
    })].join(""));
  }
  const totals: Record<string, Record<string, { cer: number; f1: number; medianMs: number; files: number }>> = {};
  const groups = ["all", ...new Set(results.map((r) => r.kind))];
  for (const g of groups) {
    totals[g] = {};
    for (const m of readers) {
      const rs = results.filter((r) => g === "all" || r.kind === g).map((r) => r.readers[m]!).filter(Boolean);
      const sum = rs.reduce((a, x) => add(a, x.score), ZERO);
      totals[g]![m] = { cer: cerOf(sum), f1: f1Of(sum), medianMs: median(rs.map((x) => x.ms)), files: rs.length };
    }
    lines.push([`TOTAL ${g}`.padEnd(34), ...readers.map((m) => col(`${totals[g]![m]!.cer.toFixed(3)} / ${totals[g]![m]!.f1.toFixed(3)}`))].join(""));
  }
  lines.push(["median ms per image".padEnd(34), ...readers.map((m) => col(String(Math.round(totals.all![m]!.medianMs))))].join(""));

  // The goals.
  const cli = Math.min(totals.all!["cli-psm3"]!.cer, totals.all!["cli-psm4"]!.cer);
  const goals = wanted.map((m) => {
    const lost = results
      .filter((r) => Math.max(r.readers["cli-psm3"]?.f1 ?? 0, r.readers["cli-psm4"]?.f1 ?? 0) >= 0.8 && (r.readers[m]?.f1 ?? 0) < 0.5)
      .map((r) => r.file);
    const ratio = totals.all![m]!.cer / cli;
    return { model: m, cer: totals.all![m]!.cer, betterCliCer: cli, ratio, ratioGoal: 0.9, pagesLost: lost, met: ratio <= 0.9 && lost.length === 0 };
  });
  for (const g of goals) {
    lines.push(`${g.model}: total CER ${g.cer.toFixed(3)} = ${g.ratio.toFixed(2)} × the better CLI mode (${g.betterCliCer.toFixed(3)}; goal ≤ 0.90); pages lost: ${g.pagesLost.length ? g.pagesLost.join(", ") : "none"}${g.met ? "" : "  (goal not met)"}`);
  }
  const orders = forced.size ? orderWins(results) : undefined;
  if (orders) lines.push(orders.summary);
  console.log(lines.join("\n"));
  mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
  writeFileSync(join(ROOT, "test-artifacts", "eval-ocr.json"), JSON.stringify({ corpus: CORPUS, installedLanguages: [...installed].sort(), files: results, totals, goals, ...(orders ? { orders: orders.pages } : {}) }, null, 2) + "\n");
  return failures ? 1 : 0;
}

exitWithMain(import.meta.url, main);
