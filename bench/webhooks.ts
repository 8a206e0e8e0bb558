/**
 * webhooks: the latency goal of the webhooks issue (docs/webhooks.md):
 * from a job's end to its final event at a healthy receiver, p50 under
 * 200 ms.
 *
 * One `folio edge`, one `folio extraction` and one `folio worker` as
 * children, with their default webhook settings (4 delivery slots, an idle
 * slot looking again every 0.2 s), against an empty database of their own
 * on DATABASE_URL's server; a receiver in this process answering 204 at
 * once. BENCH_WEBHOOK_JOBS (default 40) one-page jobs (a PNG page, model
 * local/tesseract) are submitted one after another; each one's latency is
 * the receiver's arrival time of its `ocr.job.succeeded` minus the job's
 * `finished_at` as stored (the transaction's start: a few milliseconds
 * early, so the figure errs long). Each job's event stream
 * (`GET /v1/ocr/jobs/{id}/events`, opened as soon as the job is accepted) is
 * timed the same way: the arrival of its final event at this process, over
 * the edge's NOTIFY wake-up (the edge and the worker are separate
 * processes, as in a cluster).
 *
 * Correctness decides `ok`: every job succeeded, every delivery's signature
 * verifies with the `standardwebhooks` package, and each job's events
 * arrived in `sequence` order.
 *
 * Environment: DATABASE_URL (`make bench` gives it), BENCH_WEBHOOK_JOBS.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { openDatabase } from "../internal/platform/db/index.ts";
import { newSecretKey } from "../internal/webhooks/index.ts";
import { startFolio, type FolioProcess } from "../test/folio-processes.ts";
import type { BenchmarkReport } from "./run.ts";
import { benchmarkEntry, dropBenchDatabase, emptyBenchDatabaseUrl, freePort, median, positiveInt, quantile } from "./support.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FOLIO = ["--import", "tsx", join(ROOT, "cmd", "folio", "main.ts")];
const PAGE = readFileSync(join(ROOT, "test", "fixtures", "ocr", "english.png")).toString("base64");
const BENCH_DATABASE = "folio_bench_webhooks";
const GOAL_P50_MS = 200;

interface Arrival {
  at: number;
  id: string;
  type: string;
  sequence: number;
  jobId: string | undefined;
  verified: boolean;
}

async function runBenchmark(): Promise<BenchmarkReport> {
  const base = process.env.DATABASE_URL;
  if (!base) throw new Error("webhooks needs DATABASE_URL (run `make bench`)");
  const jobs = positiveInt("BENCH_WEBHOOK_JOBS", 40);
  const machine = { cpus: os.cpus().length, loadAverageAtStart: os.loadavg().map((x) => Number(x.toFixed(2))) };
  const databaseUrl = await emptyBenchDatabaseUrl(base, BENCH_DATABASE);
  const running: FolioProcess[] = [];
  const arrivals: Arrival[] = [];
  let verify: Webhook | undefined;
  const receiver = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const at = Date.now();
      res.writeHead(204).end();
      const event = JSON.parse(body) as { id: string; type: string; sequence: number; data: { id?: string } };
      let verified: boolean;
      try {
        verify?.verify(body, req.headers as Record<string, string>);
        verified = verify !== undefined;
      } catch {
        verified = false;
      }
      arrivals.push({ at, id: event.id, type: event.type, sequence: event.sequence, jobId: event.data?.id, verified });
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const receiverPort = (receiver.address() as { port: number }).port;
  try {
    const migrated = spawnSync(process.execPath, [...FOLIO, "migrate"], { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl }, encoding: "utf8", timeout: 120_000 });
    if (migrated.status !== 0) throw new Error(`folio migrate: ${migrated.stderr}`);
    const handle = await openDatabase({ databaseUrl, poolSize: 2 });
    try {
      const made = await adminCreateAccount({ db: handle.db }, { email: `bench-webhooks.${process.pid}@example.test`, name: "webhooks benchmark", creditsCents: 1_000_000, requestsPerMinute: 100_000, requestsPerDay: 10_000_000 });
      const key = made.api_key.key;
      const ports = { edge: await freePort(), extraction: await freePort(), extractionMetrics: await freePort(), worker: await freePort() };
      const shared = { DATABASE_URL: databaseUrl, FOLIO_WEBHOOK_SECRET_KEY: newSecretKey(), FOLIO_FETCH_ALLOW: `127.0.0.1:${receiverPort}` };
      running.push(
        await startFolio(
          "extraction",
          { FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: String(ports.extraction), FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(ports.extractionMetrics) },
          `http://127.0.0.1:${ports.extractionMetrics}/metrics`,
        ),
      );
      const address = `127.0.0.1:${ports.extraction}`;
      running.push(
        ...(await Promise.all([
          startFolio("edge", { ...shared, FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_HTTP_PORT: String(ports.edge), FOLIO_METRICS_ENABLED: "false", FOLIO_EXTRACTION_ADDRESS: address }, `http://127.0.0.1:${ports.edge}/healthz`),
          startFolio("worker", { ...shared, FOLIO_EXTRACTION_ADDRESS: address, FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(ports.worker) }, `http://127.0.0.1:${ports.worker}/metrics`),
        ])),
      );
      const api = `http://127.0.0.1:${ports.edge}`;
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const endpoint = await fetch(`${api}/v1/webhook-endpoints`, { method: "POST", headers, body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hooks` }) });
      const made2 = (await endpoint.json()) as { secret?: string; error?: unknown };
      if (endpoint.status !== 201 || !made2.secret) throw new Error(`POST /v1/webhook-endpoints: ${endpoint.status} ${JSON.stringify(made2)}`);
      verify = new Webhook(made2.secret);

      const latencies: number[] = [];
      const streamLatencies: number[] = [];
      const statuses: string[] = [];
      for (let i = 0; i < jobs; i++) {
        const res = await fetch(`${api}/v1/ocr/jobs`, { method: "POST", headers, body: JSON.stringify({ base64: PAGE, model: "local/tesseract" }) });
        const job = (await res.json()) as { id: string };
        if (res.status !== 202) throw new Error(`POST /v1/ocr/jobs: ${res.status} ${JSON.stringify(job)}`);
        const streamed = finalEventAt(`${api}/v1/ocr/jobs/${job.id}/events`, key);
        const deadline = Date.now() + 120_000;
        let final: Arrival | undefined;
        while (!(final = arrivals.find((a) => a.jobId === job.id && a.type.startsWith("ocr.job.") && ["ocr.job.succeeded", "ocr.job.failed"].includes(a.type)))) {
          if (Date.now() > deadline) throw new Error(`job ${job.id}: no final event within 120 s`);
          await new Promise((r) => setTimeout(r, 5));
        }
        statuses.push(final.type);
        const row = await handle.db.selectFrom("ocr_jobs").select("finished_at").where("id", "=", job.id).executeTakeFirstOrThrow();
        latencies.push(final.at - row.finished_at!.getTime());
        const streamedAt = await streamed;
        if (streamedAt !== undefined) streamLatencies.push(streamedAt - row.finished_at!.getTime());
      }
      // Every event delivered by now was signed and came in order within its job.
      await new Promise((r) => setTimeout(r, 1_000));
      const byJob = new Map<string, number[]>();
      for (const a of arrivals) if (a.jobId) byJob.set(a.jobId, [...(byJob.get(a.jobId) ?? []), a.sequence]);
      const inOrder = [...byJob.values()].every((s) => s.every((x, i) => i === 0 || x > s[i - 1]!));
      const allVerified = arrivals.every((a) => a.verified);
      const allSucceeded = statuses.every((s) => s === "ocr.job.succeeded");
      const everyStreamEnded = streamLatencies.length === jobs;
      const sp50 = median(streamLatencies);
      const p50 = median(latencies);
      const p95 = quantile(latencies, 0.95);
      const max = Math.max(...latencies);
      const text = [
        `${jobs} one-page jobs, one after another; ${arrivals.length} deliveries received`,
        `job's end (finished_at) to its final event at the receiver: p50 ${p50.toFixed(0)} ms, p95 ${p95.toFixed(0)} ms, max ${max.toFixed(0)} ms (goal p50 < ${GOAL_P50_MS} ms: ${p50 < GOAL_P50_MS ? "met" : "MISSED"})`,
        `job's end to its final event on GET /v1/ocr/jobs/{id}/events: p50 ${sp50.toFixed(0)} ms, p95 ${quantile(streamLatencies, 0.95).toFixed(0)} ms, max ${Math.max(...streamLatencies).toFixed(0)} ms`,
        `checks: every job succeeded ${allSucceeded}, every signature verified ${allVerified}, each job's events in sequence order ${inOrder}, every event stream ended with the final event ${everyStreamEnded}`,
        `machine: ${machine.cpus} CPUs, load average at start ${machine.loadAverageAtStart.join(" ")}`,
      ].join("\n");
      return {
        text,
        json: { date: new Date().toISOString(), machine, jobs, deliveries: arrivals.length, latencyMs: { p50, p95, max, all: latencies }, streamLatencyMs: { p50: sp50, all: streamLatencies }, goalP50Ms: GOAL_P50_MS, checks: { allSucceeded, allVerified, inOrder, everyStreamEnded } },
        ok: allSucceeded && allVerified && inOrder && everyStreamEnded,
      };
    } finally {
      await handle.close();
    }
  } finally {
    await Promise.all(running.map((p) => p.stop()));
    await new Promise((r) => receiver.close(r));
    await dropBenchDatabase(base, BENCH_DATABASE);
  }
}

/** Follows a job's event stream to its end: when its final event arrived (ms since the epoch), or undefined when the stream ended without one. */
async function finalEventAt(url: string, key: string): Promise<number | undefined> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(120_000) });
  if (res.status !== 200 || !res.body) throw new Error(`GET ${url}: ${res.status}`);
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of res.body) {
    seen += decoder.decode(chunk, { stream: true });
    if (/^event: ocr\.job\.(succeeded|failed|cancelled)$/m.test(seen)) return Date.now();
  }
  return undefined;
}

export default await benchmarkEntry(import.meta.url, {
  name: "webhooks",
  description: "a job's end to its final event at a healthy receiver (goal p50 < 200 ms)",
  run: runBenchmark,
});
