/** Part 3 of the jobs benchmark (bench/jobs.ts): two `folio worker` processes sharing one job on Postgres. */
import { spawnSync } from "node:child_process";
import { fetch } from "undici";
import { adminCreateAccount } from "../../internal/cli/admin/index.ts";
import { openDatabase } from "../../internal/platform/db/index.ts";
import { startFolio, type FolioProcess } from "../../test/folio-processes.ts";
import { dropBenchDatabase, emptyBenchDatabaseUrl, freePort } from "../support.ts";
import { agent, checkPages, followEvents, getJob, submit } from "./api.ts";
import { FOLIO, ROOT } from "./common.ts";
import { cleanEnv } from "./dev.ts";
import { samples } from "./metrics.ts";

export interface TwoWorkers {
  pages: number;
  ms: number;
  pagesPerSecond: number;
  perWorker: { ok: number; failed: number }[];
  bothRead: boolean;
  check: { status: string; listed: number; inOrderOnce: boolean; failed: number; empty: number };
  countsAddUp: boolean;
}

const BENCH_DATABASE = "folio_bench_jobs";

export async function twoWorkers(base: string, pdf: string, pages: number): Promise<TwoWorkers> {
  const databaseUrl = await emptyBenchDatabaseUrl(base, BENCH_DATABASE);
  const running: FolioProcess[] = [];
  try {
    // `folio migrate` as a child, like the workers: the schema of the code they load (a long run's own modules may be older).
    const migrated = spawnSync(process.execPath, [...FOLIO, "migrate"], { cwd: ROOT, env: { ...cleanEnv(), DATABASE_URL: databaseUrl }, encoding: "utf8", timeout: 120_000 });
    if (migrated.status !== 0) throw new Error(`folio migrate: ${migrated.stderr}`);
    const handle = await openDatabase({ databaseUrl, poolSize: 2 });
    let key: string;
    try {
      const made = await adminCreateAccount({ db: handle.db }, { email: `bench-jobs.${process.pid}@example.test`, name: "jobs benchmark", creditsCents: 1_000_000, requestsPerMinute: 100_000, requestsPerDay: 10_000_000 });
      key = made.api_key.key;
    } finally {
      await handle.close();
    }
    const ports = { edge: await freePort(), extraction: await freePort(), extractionMetrics: await freePort(), workers: [await freePort(), await freePort()] };
    const extraction = await startFolio(
      "extraction",
      { FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: String(ports.extraction), FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(ports.extractionMetrics) },
      `http://127.0.0.1:${ports.extractionMetrics}/metrics`,
    );
    running.push(extraction);
    const address = `127.0.0.1:${ports.extraction}`;
    const started = await Promise.all([
      startFolio(
        "edge",
        { DATABASE_URL: databaseUrl, FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_HTTP_PORT: String(ports.edge), FOLIO_METRICS_ENABLED: "false", FOLIO_EXTRACTION_ADDRESS: address },
        `http://127.0.0.1:${ports.edge}/healthz`,
      ),
      ...ports.workers.map((port) =>
        startFolio(
          "worker",
          { DATABASE_URL: databaseUrl, FOLIO_EXTRACTION_ADDRESS: address, FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(port) },
          `http://127.0.0.1:${port}/metrics`,
        ),
      ),
    ]);
    running.push(...started);
    const api = { url: `http://127.0.0.1:${ports.edge}`, key };
    const { job, startedAt } = await submit(api, pdf, "application/pdf");
    const final = await followEvents(api, job.id, () => undefined);
    const ms = final.at - startedAt;
    const perWorker = await Promise.all(
      ports.workers.map(async (port) => {
        const all = samples(await fetch(`http://127.0.0.1:${port}/metrics`, { dispatcher: agent }).then((r) => r.text()));
        const count = (outcome: string) => all.filter((x) => x.name === "folio_job_pages_total" && x.labels.includes(`outcome="${outcome}"`)).reduce((a, x) => a + x.value, 0);
        return { ok: count("ok"), failed: count("failed") };
      }),
    );
    const view = await getJob(api, job.id);
    const listed = await checkPages(api, job.id, pages);
    return {
      pages,
      ms,
      pagesPerSecond: pages / (ms / 1000),
      perWorker,
      bothRead: perWorker.every((w) => w.ok > 0),
      check: { status: view.status, ...listed },
      countsAddUp: perWorker.reduce((a, w) => a + w.ok + w.failed, 0) === pages,
    };
  } finally {
    await Promise.all(running.map((p) => p.stop()));
    await dropBenchDatabase(base, BENCH_DATABASE);
  }
}
