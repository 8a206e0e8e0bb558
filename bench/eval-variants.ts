/**
 * `make eval-variants`: reading quality of turned and skewed pages (issue 26,
 * docs/benchmarks/turned-pages.md "Turned and skewed pages"). For every page of the
 * corpus of `make eval` (kind "page" in its README, or `--only`), sharp
 * makes variants of the image: turned clockwise by 90°, 180° and 270°,
 * skewed by +4° and −4° (clockwise; the canvas grows, the corners white), and
 * downscaled to half its width and height (a low-resolution scan or photo).
 * Each local model asked for reads the upright page and every variant as
 * `/v1/ocr` would (engines/straighten.ts in front of the engine), and the
 * upright page once more with the engine alone (no orientation check),
 * right after it, so that the cost of the check is measured side by side.
 *
 * Scores as `make eval` (CER and bag-of-words F1 after the same
 * normalisation; totals are summed edits over summed truth characters).
 * Goals checked: turned pages' total CER at most 1.05 × the upright pages',
 * skewed pages' at most 1.1 ×, no page lost (F1 under 0.5 where upright gets
 * 0.8), the upright pages' median time per page at most 1.15 × the
 * engine's alone, and half-size pages' total CER at most 1.2 × the upright
 * pages'.
 *
 * Usage: npx tsx bench/eval-variants.ts [--models local/auto] [--only name-substring,…] [--all-kinds]
 * Writes test-artifacts/eval-variants.json. Exit code 1 when a reading failed.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { localEngines, shutdownLocalEngines } from "../internal/extraction/index.ts";
import { StraightenedEngine } from "../internal/extraction/engines/straighten.ts";
import type { Engine } from "../internal/extraction/types.ts";
import { kinds, normalizeForScoring, score } from "./eval-ocr.ts";
import { exitWithMain, median } from "./support.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CORPUS = resolve(ROOT, process.env.FOLIO_EVAL_CORPUS ?? "../shared/corpus/ocr");
const IMAGE = /\.(png|jpe?g|tiff?)$/i;

/** The variants and sharp's clockwise angle for each; "bare" is the upright page read by the engine alone. */
const VARIANTS = [
  ["upright", 0],
  ["bare", 0],
  ["turned 90", 90],
  ["turned 180", 180],
  ["turned 270", 270],
  ["skewed +4", 4],
  ["skewed -4", -4],
  ["half size", "half"],
] as const;
type Variant = (typeof VARIANTS)[number][0];

interface Reading {
  cer: number;
  f1: number;
  ms: number;
  rotation?: number;
  skewDegrees?: number;
  edits: number;
  truthChars: number;
  tp: number;
  hypWords: number;
  truthWords: number;
  error?: string;
  /** Upright only: the orientation check alone (decoding, profiles, the trial readings when asked: their tesseract children's CPU is not counted), wall and this process's CPU. */
  checkMs?: number;
  checkCpuMs?: number;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** The page turned clockwise by `degrees`, or downscaled to half its width and height. */
async function variantImage(bytes: Buffer, how: number | "half"): Promise<Buffer> {
  if (how === 0) return bytes;
  const sharp = (await import("sharp")).default;
  if (how === "half") {
    const { width = 0 } = await sharp(bytes, { pages: 1 }).metadata();
    return sharp(bytes, { pages: 1 }).resize(Math.max(1, Math.round(width / 2))).png().toBuffer();
  }
  return sharp(bytes, { pages: 1 }).rotate(how, { background: "#ffffff" }).png().toBuffer();
}

async function read(engine: Engine, image: Buffer, truth: string, ci: boolean): Promise<Reading> {
  const started = performance.now();
  let text = "";
  let error: string | undefined;
  let rotation: number | undefined;
  let skewDegrees: number | undefined;
  try {
    const r = await engine.extractPage({ pageNumber: 1, image, mimeType: "image/png" }, { extractTables: false, outputFormat: "text" }, AbortSignal.timeout(300_000));
    text = r.text;
    rotation = r.rotation;
    skewDegrees = r.skewDegrees;
  } catch (err) {
    error = err instanceof Error ? err.message : String(err);
  }
  const ms = Math.round(performance.now() - started);
  const s = score(normalizeForScoring(text, ci), truth);
  const cer = s.truthChars ? s.edits / s.truthChars : 0;
  const f1 = s.hypWords + s.truthWords ? (2 * s.tp) / (s.hypWords + s.truthWords) : 1;
  return { cer, f1, ms, ...s, ...(rotation !== undefined ? { rotation, skewDegrees } : {}), ...(error ? { error } : {}) };
}

function total(rs: readonly Reading[]): { cer: number; f1: number } {
  const edits = rs.reduce((a, r) => a + r.edits, 0);
  const chars = rs.reduce((a, r) => a + r.truthChars, 0);
  const tp = rs.reduce((a, r) => a + r.tp, 0);
  const words = rs.reduce((a, r) => a + r.hypWords + r.truthWords, 0);
  return { cer: chars ? edits / chars : 0, f1: words ? (2 * tp) / words : 1 };
}

async function main(): Promise<number> {
  if (!existsSync(CORPUS)) {
    console.error(`eval-variants: no corpus at ${CORPUS} (set FOLIO_EVAL_CORPUS)`);
    return 2;
  }
  const engines = localEngines();
  const wanted = (arg("--models") ?? "local/auto").split(",").filter(Boolean);
  for (const m of wanted) if (!(engines.get(m) instanceof StraightenedEngine)) throw new Error(`eval-variants: '${m}' is not a local model (${[...engines.keys()].join(", ")})`);
  const only = arg("--only");
  const kindOf = kinds();
  const files = readdirSync(CORPUS)
    .filter((f) => IMAGE.test(f) && existsSync(join(CORPUS, f.replace(IMAGE, ".gt.txt"))))
    .filter((f) => (only ? only.split(",").some((o) => f.includes(o)) : process.argv.includes("--all-kinds") || (kindOf.get(f) ?? "page") === "page"))
    .sort();
  const results: { file: string; model: string; readings: Partial<Record<Variant, Reading>> }[] = [];
  let failures = 0;
  // One page at a time: the upright reading and the engine alone run back to back on the same machine load.
  for (const file of files) {
    const name = file.replace(IMAGE, "");
    const ci = name.startsWith("sroie_");
    const truth = normalizeForScoring(readFileSync(join(CORPUS, `${name}.gt.txt`), "utf8"), ci);
    const bytes = readFileSync(join(CORPUS, file));
    for (const model of wanted) {
      const engine = engines.get(model) as StraightenedEngine;
      const readings: Partial<Record<Variant, Reading>> = {};
      for (const [variant, degrees] of VARIANTS) {
        const image = await variantImage(bytes, degrees);
        const r = await read(variant === "bare" ? engine.inner : engine, image, truth, ci);
        if (r.error) failures++;
        readings[variant] = r;
        process.stderr.write(".");
      }
      // The check alone on the upright page, nothing else running in this process: its wall and CPU time.
      const cpu = process.cpuUsage();
      const wall = performance.now();
      await engine.plan({ pageNumber: 1, image: bytes, mimeType: "image/png" }, AbortSignal.timeout(60_000));
      const used = process.cpuUsage(cpu);
      readings.upright!.checkMs = Math.round(performance.now() - wall);
      readings.upright!.checkCpuMs = Math.round((used.user + used.system) / 1000);
      results.push({ file, model, readings });
    }
  }
  process.stderr.write("\n");
  await shutdownLocalEngines();

  const lines: string[] = [`corpus: ${CORPUS} (${files.length} pages); cells are CER / F1 [rotation found, skew found]`];
  const col = (s: string) => s.padStart(24);
  const shown = VARIANTS.map(([v]) => v).filter((v) => v !== "bare");
  for (const model of wanted) {
    lines.push(`\n${model}`);
    lines.push(["file".padEnd(26), ...shown.map(col)].join(""));
    const rs = results.filter((r) => r.model === model);
    for (const r of rs) {
      lines.push([r.file.padEnd(26), ...shown.map((v) => {
        const x = r.readings[v];
        if (!x) return col("-");
        if (x.error) return col("FAILED");
        return col(`${x.cer.toFixed(3)} / ${x.f1.toFixed(2)} [${x.rotation ?? "-"}, ${x.skewDegrees ?? "-"}]`);
      })].join(""));
    }
    const upright = total(rs.map((r) => r.readings.upright!));
    lines.push(["TOTAL".padEnd(26), ...shown.map((v) => {
      const t = total(rs.map((r) => r.readings[v]!));
      return col(`${t.cer.toFixed(3)} / ${t.f1.toFixed(3)}`);
    })].join(""));
    lines.push(["× upright CER".padEnd(26), ...shown.map((v) => col((total(rs.map((r) => r.readings[v]!)).cer / upright.cer).toFixed(2)))].join(""));
  }

  const goals = wanted.map((model) => {
    const rs = results.filter((r) => r.model === model);
    const upright = total(rs.map((r) => r.readings.upright!)).cer;
    const turned = total(rs.flatMap((r) => [r.readings["turned 90"]!, r.readings["turned 180"]!, r.readings["turned 270"]!])).cer;
    const skewed = total(rs.flatMap((r) => [r.readings["skewed +4"]!, r.readings["skewed -4"]!])).cer;
    const half = total(rs.map((r) => r.readings["half size"]!)).cer;
    const lost = rs.flatMap((r) =>
      (r.readings.upright!.f1 >= 0.8 ? shown.filter((v) => v !== "upright" && r.readings[v]!.f1 < 0.5) : []).map((v) => `${r.file} ${v}`),
    );
    const msWith = median(rs.map((r) => r.readings.upright!.ms));
    const msAlone = median(rs.map((r) => r.readings.bare!.ms));
    const perPage = median(rs.map((r) => r.readings.upright!.ms / Math.max(1, r.readings.bare!.ms)));
    const checkMs = median(rs.map((r) => r.readings.upright!.checkMs ?? 0));
    const checkCpuMs = median(rs.map((r) => r.readings.upright!.checkCpuMs ?? 0));
    const goal = {
      model,
      uprightCer: upright,
      turnedCer: turned,
      turnedRatio: turned / upright,
      skewedCer: skewed,
      skewedRatio: skewed / upright,
      halfCer: half,
      halfRatio: half / upright,
      pagesLost: lost,
      uprightMedianMs: msWith,
      engineAloneMedianMs: msAlone,
      costRatio: msWith / msAlone,
      medianPerPageCostRatio: perPage,
      checkMedianMs: checkMs,
      checkMedianCpuMs: checkCpuMs,
    };
    return { ...goal, met: goal.turnedRatio <= 1.05 && goal.skewedRatio <= 1.1 && lost.length === 0 && goal.costRatio <= 1.15 && goal.halfRatio <= 1.2 };
  });
  for (const g of goals) {
    lines.push(
      `${g.model}: turned ${g.turnedCer.toFixed(3)} = ${g.turnedRatio.toFixed(2)} × upright ${g.uprightCer.toFixed(3)} (goal ≤ 1.05); ` +
        `skewed ±4° ${g.skewedCer.toFixed(3)} = ${g.skewedRatio.toFixed(2)} × (goal ≤ 1.10); half size ${g.halfCer.toFixed(3)} = ${g.halfRatio.toFixed(2)} × (goal ≤ 1.20); pages lost: ${g.pagesLost.length ? g.pagesLost.join(", ") : "none"}; ` +
        `upright median ${g.uprightMedianMs} ms against ${g.engineAloneMedianMs} ms for the engine alone = ${g.costRatio.toFixed(2)} × (per page, median ${g.medianPerPageCostRatio.toFixed(2)} ×; goal ≤ 1.15); the check alone: median ${g.checkMedianMs} ms, ${g.checkMedianCpuMs} ms CPU` +
        (g.met ? "" : "  (goal not met)"),
    );
  }
  console.log(lines.join("\n"));
  mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
  writeFileSync(join(ROOT, "test-artifacts", "eval-variants.json"), JSON.stringify({ corpus: CORPUS, results, goals }, null, 2) + "\n");
  return failures ? 1 : 0;
}

exitWithMain(import.meta.url, main);
