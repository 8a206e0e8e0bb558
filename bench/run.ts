/**
 * Benchmark runner: `npx tsx bench/run.ts [name-filter]` (or `make bench`,
 * which provides DATABASE_URL and REDIS_URL). Runs every benchmark listed in
 * `benchmarks` in order (those that are part of another only within it) - or
 * the one named exactly, or else those whose name contains the filter -
 * prints each report and writes its JSON to test-artifacts/bench-<name>.json.
 *
 * The exit code is 1 when a benchmark's correctness checks failed (e.g. a
 * non-2xx response); a missed performance target is reported, not fatal.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import edgeAuth from "./edge-auth.ts";
import ocrTesseract from "./ocr-tesseract.ts";
import ocrApi from "./ocr-api.ts";
import ocrEngines from "./ocr-engines.ts";
import sandboxRunsc from "./sandbox-runsc.ts";
import convertLong from "./convert-long.ts";
import usageBench from "./usage.ts";
import k8sPool from "./k8s-pool.ts";
import convert from "./convert.ts";
import convertCorpus from "./convert-corpus.ts";
import jobs from "./jobs.ts";
import webhooks from "./webhooks.ts";
import soak from "./soak.ts";

export interface BenchmarkReport {
  /** Human-readable report, printed as is. */
  text: string;
  /** Written to test-artifacts/bench-<name>.json. */
  json: unknown;
  /** False when a correctness check failed (the numbers cannot be trusted). */
  ok: boolean;
}

export interface Benchmark {
  /** Short name, used by the filter and the artifact file name. */
  name: string;
  description: string;
  run(): Promise<BenchmarkReport>;
  /** Part of another benchmark in the list: run only when asked for by name. */
  partOf?: string;
}

/** Every benchmark, in the order they run. Add new ones here. */
const benchmarks: readonly Benchmark[] = [
  edgeAuth,
  ocrTesseract,
  ocrApi,
  ocrEngines,
  { ...sandboxRunsc, partOf: convert.name },
  { ...convertLong, partOf: convert.name },
  convert,
  convertCorpus,
  usageBench,
  k8sPool,
  jobs,
  webhooks,
  soak,
];

const ARTIFACTS = "test-artifacts";

function usage(): string {
  return [
    "usage: npx tsx bench/run.ts [name-filter]",
    "benchmarks:",
    ...benchmarks.map((b) => `  ${b.name.padEnd(16)} ${b.description}${b.partOf ? ` (part of ${b.partOf})` : ""}`),
    "environment: BENCH_DURATION (seconds per measured run), see each benchmark for more",
  ].join("\n");
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes("--help") || args.includes("-h")) {
    console.log(usage());
    return 0;
  }
  if (args.length > 1) {
    console.error(`bench: at most one name filter, got ${args.length} arguments\n${usage()}`);
    return 2;
  }
  const filter = args[0];
  // A benchmark named exactly is run alone; otherwise every name containing the filter, or all but the parts of others.
  const exact = benchmarks.filter((b) => b.name === filter);
  const selected = exact.length ? exact : filter ? benchmarks.filter((b) => b.name.includes(filter)) : benchmarks.filter((b) => !b.partOf);
  if (selected.length === 0) {
    console.error(`bench: no benchmark name contains '${filter}'\n${usage()}`);
    return 2;
  }

  await mkdir(ARTIFACTS, { recursive: true });
  let failed = 0;
  for (const b of selected) {
    console.log(`=== ${b.name}: ${b.description}`);
    const started = Date.now();
    let report: BenchmarkReport;
    try {
      report = await b.run();
    } catch (err) {
      failed++;
      console.error(`bench ${b.name} failed:`, err);
      continue;
    }
    console.log(report.text);
    const file = join(ARTIFACTS, `bench-${b.name}.json`);
    await writeFile(file, JSON.stringify(report.json, null, 2) + "\n");
    console.log(`(${((Date.now() - started) / 1000).toFixed(0)} s; JSON in ${file})\n`);
    if (!report.ok) failed++;
  }
  if (failed) console.error(`bench: ${failed} benchmark(s) failed their checks`);
  return failed ? 1 : 0;
}

main().then(
  // Exit explicitly: a benchmark's leftover client (pg, ioredis) must not keep the process alive.
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
