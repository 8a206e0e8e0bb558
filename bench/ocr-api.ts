/**
 * POST /v1/ocr with local/tesseract through the whole stack (edge → gRPC →
 * extraction → tesseract, with auth, rate limit and billing) against running
 * the tesseract CLI directly on the same image with the engine's settings,
 * interleaved in one run; and pages per second for the 10-page PDF fixture
 * at page concurrency 1 and 2. Needs DATABASE_URL and REDIS_URL (make bench).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startEdge } from "../internal/edge/index.ts";
import { startExtraction } from "../internal/extraction/index.ts";
import { extractionSchema, parseConfig } from "../internal/platform/config/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { addCredits, benchEdgeConfig, median } from "./support.ts";
import { benchDatabaseUrl, prepareAccount } from "./edge-auth.ts";
import type { Benchmark, BenchmarkReport } from "./run.ts";

const FIXTURES = fileURLToPath(new URL("../test/fixtures/ocr/", import.meta.url));
const TARGET_RATIO = 1.15;
const RUNS = Number(process.env.BENCH_OCR_RUNS ?? 7);


function cli(image: string): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile("tesseract", [image, "stdout", "-l", "eng", "--psm", "3", "tsv"], { env: { ...process.env, OMP_THREAD_LIMIT: "1" }, maxBuffer: 1 << 24 }, (err) => (err ? reject(err) : resolve())),
  );
}

async function post(url: string, key: string, body: unknown): Promise<{ status: number; pages: number }> {
  const res = await fetch(`${url}/v1/ocr`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  const json = (await res.json()) as { usage?: { pages_processed: number } };
  return { status: res.status, pages: json.usage?.pages_processed ?? 0 };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

async function run(): Promise<BenchmarkReport> {
  const base = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!base || !redisUrl) throw new Error("ocr-api needs DATABASE_URL and REDIS_URL (run `make bench`)");
  const databaseUrl = await benchDatabaseUrl(base);
  const account = await prepareAccount(databaseUrl, redisUrl);
  await addCredits(databaseUrl, account.accountId, 10_000_000);
  const log = createLogger("silent");
  const extraction = await startExtraction({
    config: parseConfig(extractionSchema, { FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: "0", FOLIO_METRICS_ENABLED: "false", LOG_LEVEL: "silent" }),
    log,
  });
  const edgeWith = (concurrency: number) =>
    startEdge({
      config: benchEdgeConfig(databaseUrl, redisUrl, { FOLIO_EXTRACTION_ADDRESS: extraction.grpc.address, FOLIO_PAGE_CONCURRENCY: String(concurrency) }),
      log,
    });
  const e1 = await edgeWith(1);
  const e2 = await edgeWith(2);
  try {
    const imagePath = `${FIXTURES}english.png`;
    const image = readFileSync(imagePath).toString("base64");
    const page = { base64: image, model: "local/tesseract", options: { language: "en" } };
    // Warm-up: one of each.
    await cli(imagePath);
    if ((await post(e1.url, account.key, page)).status !== 200) throw new Error("warm-up /v1/ocr failed");
    const direct: number[] = [];
    const api: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      direct.push(await timed(() => cli(imagePath)));
      api.push(await timed(async () => {
        const r = await post(e1.url, account.key, page);
        if (r.status !== 200) throw new Error(`/v1/ocr answered ${r.status}`);
      }));
    }
    const ratio = median(api) / median(direct);

    const pdf = { base64: readFileSync(`${FIXTURES}ten-pages.pdf`).toString("base64"), model: "local/tesseract", options: { language: "en" } };
    const pps: Record<string, number[]> = { "1": [], "2": [] };
    for (let i = 0; i < 3; i++) {
      for (const [c, edge] of [["1", e1], ["2", e2]] as const) {
        let pages = 0;
        const ms = await timed(async () => {
          const r = await post(edge.url, account.key, pdf);
          if (r.status !== 200) throw new Error(`/v1/ocr (pdf) answered ${r.status}`);
          pages = r.pages;
        });
        pps[c]!.push(pages / (ms / 1000));
      }
    }
    const p1 = median(pps["1"]!);
    const p2 = median(pps["2"]!);
    const text = [
      "=== ocr-api: POST /v1/ocr (local/tesseract, whole stack) vs the tesseract CLI",
      `one A4 page at 200 DPI (english.png), ${RUNS} interleaved runs, medians:`,
      `  tesseract CLI (psm 3, 1 thread): ${median(direct).toFixed(0)} ms`,
      `  POST /v1/ocr:                    ${median(api).toFixed(0)} ms`,
      `  ratio /v1/ocr / CLI: ${ratio.toFixed(3)} (target <= ${TARGET_RATIO}: ${ratio <= TARGET_RATIO ? "met" : "MISSED"})`,
      `ten-pages.pdf through /v1/ocr, pages per second (median of 3): concurrency 1: ${p1.toFixed(2)}, concurrency 2: ${p2.toFixed(2)} (x${(p2 / p1).toFixed(2)})`,
      "note: 2 shared cores; the CLI and the stack run one at a time.",
    ].join("\n");
    return {
      text,
      json: { directMs: direct, apiMs: api, ratio, target: TARGET_RATIO, pagesPerSecond: { concurrency1: pps["1"], concurrency2: pps["2"] } },
      ok: true,
    };
  } finally {
    await e1.close();
    await e2.close();
    await extraction.close();
  }
}

const benchmark: Benchmark = {
  name: "ocr-api",
  description: "POST /v1/ocr with local/tesseract vs the tesseract CLI; PDF pages/s at concurrency 1 and 2",
  run,
};
export default benchmark;
