/**
 * convert: issue 14's four figures side by side with the host pipeline, from
 * one run of the two conversion benchmarks it is made of:
 *
 * - the long document: a 60-page DOCX through POST /v1/convert against
 *   LibreOffice + `pdftoppm -r 200 -png` on the host (bench/convert-long.ts);
 * - docs/min, short DOCX 2 at a time, the service against the host pipeline
 *   run 2 at a time (bench/sandbox-runsc.ts, its throughput phase);
 * - CPU per one-page DOCX (bench/sandbox-runsc.ts: the whole machine's busy
 *   CPU across the document, for the service its replacement's start
 *   included, so every process counts once);
 * - one-page DOCX latency p50 (bench/sandbox-runsc.ts, its latency phase).
 *
 * "The service" is the sandbox mode the conversion service uses by default
 * (`restore` when sandbox-runsc measured it, `prestart` otherwise); the
 * host pipeline is sandbox-runsc's `direct` variant (LibreOffice's default
 * environment, as the issue measured it). Each component's own report is
 * printed under the table and kept in the JSON.
 *
 * `make bench` runs this instead of its two components; either still runs
 * alone by name (`npx tsx bench/run.ts sandbox-runsc`).
 */
import type { Benchmark, BenchmarkReport } from "./run.ts";
import { longBenchmarkStores, runLongBenchmark } from "./convert-long.ts";
import { runSandboxBenchmark } from "./sandbox-runsc.ts";
import { runIfMain } from "./support.ts";

/** Issue 14's goals. */
const GOALS = { longRatio: 0.35, docsPerMinuteRatio: 1.3, oneP50Ms: 500 };

/** The parts of sandbox-runsc's JSON this table reads. */
interface SandboxJson {
  latency: { file: string; medians: Record<string, number> }[];
  throughput: Record<string, { docsPerMinute: number }>;
  /** CPU seconds per one-page DOCX by variant: the whole machine's across the document. */
  cpuMedians: Record<string, { machine: number }>;
  machine: { loadAverage1m: { start: number; end: number } };
}
interface LongJson {
  medianMs: { api: number; host: number };
  ratio: number;
  machine: { loadAverage1m: { start: number; end: number } };
}

export interface SideBySideRow {
  measure: string;
  service: number;
  host: number;
  /** service ÷ host, or host ÷ service where more is better (docs/min). */
  ratio: number;
  goal: string;
  met: boolean | undefined;
}

/** The table, from the two components' JSON; `mode` is the service's sandbox mode. */
export function sideBySide(sandbox: SandboxJson, long: LongJson, mode: string): SideBySideRow[] {
  const one = sandbox.latency.find((l) => l.file === "one-page.docx");
  if (!one) throw new Error("sandbox-runsc measured no one-page.docx latency");
  const perMinute = { service: sandbox.throughput[mode]?.docsPerMinute ?? Number.NaN, host: sandbox.throughput.direct?.docsPerMinute ?? Number.NaN };
  // The machine's busy CPU across one document: the service's sandbox, runsc, its file server and this process; the host pipeline's processes.
  const cpu = { service: sandbox.cpuMedians[mode]?.machine ?? Number.NaN, host: sandbox.cpuMedians.direct?.machine ?? Number.NaN };
  const p50 = { service: one.medians[mode] ?? Number.NaN, host: one.medians.direct ?? Number.NaN };
  return [
    { measure: "60-page DOCX, ms", service: long.medianMs.api, host: long.medianMs.host, ratio: long.ratio, goal: `÷ host ≤ ${GOALS.longRatio}`, met: long.ratio <= GOALS.longRatio },
    {
      measure: "short DOCX 2 at a time, docs/min",
      ...perMinute,
      ratio: perMinute.service / perMinute.host,
      goal: `× host ≥ ${GOALS.docsPerMinuteRatio}`,
      met: perMinute.service / perMinute.host >= GOALS.docsPerMinuteRatio,
    },
    { measure: "CPU per one-page DOCX, s", ...cpu, ratio: cpu.service / cpu.host, goal: "(reported)", met: undefined },
    { measure: "one-page DOCX p50, ms", ...p50, ratio: p50.service / p50.host, goal: `≤ ${GOALS.oneP50Ms} ms`, met: p50.service <= GOALS.oneP50Ms },
  ];
}

function table(rows: SideBySideRow[], mode: string): string {
  const n = (x: number) => (Number.isNaN(x) ? "–" : x >= 100 ? x.toFixed(0) : x.toFixed(2));
  return [
    `measure                              service (${mode})      host   ratio   goal`,
    ...rows.map(
      (r) =>
        `  ${r.measure.padEnd(34)} ${n(r.service).padStart(10)} ${n(r.host).padStart(9)} ${n(r.ratio).padStart(7)}   ${r.goal}` +
        (r.met === undefined ? "" : r.met ? ": met" : ": missed"),
    ),
  ].join("\n");
}

export async function runConvertBenchmark(): Promise<BenchmarkReport> {
  // Checked before the sandbox part's quarter of an hour, not after it.
  longBenchmarkStores();
  const sandbox = await runSandboxBenchmark();
  const long = await runLongBenchmark();
  const sandboxJson = sandbox.json as SandboxJson;
  const mode = "restore" in sandboxJson.throughput ? "restore" : "prestart";
  const rows = sideBySide(sandboxJson, long.json as LongJson, mode);
  const text = [
    `issue 14 side by side (one run; medians as each component describes):`,
    table(rows, mode),
    "",
    "--- sandbox-runsc",
    sandbox.text,
    "",
    "--- convert-long",
    long.text,
  ].join("\n");
  return { text, json: { mode, rows, sandboxRunsc: sandbox.json, convertLong: long.json }, ok: sandbox.ok && long.ok };
}

const benchmark: Benchmark = {
  name: "convert",
  description: "issue 14 side by side with the host pipeline: 60-page DOCX, docs/min 2 at a time, CPU per document, p50 one-page latency",
  run: () => runConvertBenchmark(),
};
export default benchmark;

await runIfMain(import.meta.url, runConvertBenchmark);
