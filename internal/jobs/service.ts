/**
 * A running jobs worker (`folio worker`, and inside `folio dev`): the
 * JobWorker's slots, the retention sweeper that deletes jobs past their
 * retention, and the worker's metrics. Any number of these share one
 * database; none holds state of its own.
 */
import { ConversionClient } from "../conversion/client.ts";
import { ExtractionClient } from "../extraction/client.ts";
import type { WorkerConfig } from "../platform/config/index.ts";
import { openDatabase, type DatabaseHandle } from "../platform/db/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { WorkerMetrics } from "../platform/metrics/index.ts";
import { QUEUE_CHANNEL, queueState } from "./queue.ts";
import { jobDocumentStore, sweepDocuments } from "./blobs.ts";
import { deleteExpiredJobs } from "./store.ts";
import { JobWorker } from "./worker.ts";
import { OUTBOX_CHANNEL, WebhookDeliverer, loadSecretBox, webhookQueueState } from "../webhooks/index.ts";

/** Progress events of a job come at most this often (the API: "about one a second"). */
export const PROGRESS_INTERVAL_MS = 1_000;
/** How often a worker deletes the jobs past their retention (every worker does; the deletes do not collide). */
const RETENTION_SWEEP_MS = 60_000;

export interface RunningWorker {
  worker: JobWorker;
  /** Delivers the webhook outbox; absent without a secret key (FOLIO_WEBHOOK_SECRET_KEY). */
  deliverer?: WebhookDeliverer;
  metrics: WorkerMetrics;
  metricsUrl: string | null;
  close(): Promise<void>;
}

export interface StartWorkerOptions {
  config: WorkerConfig;
  log: Logger;
  /** Reuse an open database (folio dev). */
  database?: DatabaseHandle;
  /** Serve the metrics from another service's listener (folio dev): no listener of its own, no process metrics. */
  sharedProcess?: boolean;
}

export async function startWorker({ config, log, database, sharedProcess = false }: StartWorkerOptions): Promise<RunningWorker> {
  const handle =
    database ??
    (await openDatabase({
      databaseUrl: config.DATABASE_URL,
      dataDir: config.FOLIO_DATA_DIR,
      poolSize: config.FOLIO_DB_POOL_SIZE,
      timeouts: {
        connectMs: config.FOLIO_DB_CONNECT_TIMEOUT_SECONDS * 1000,
        statementMs: config.FOLIO_DB_STATEMENT_TIMEOUT_SECONDS * 1000,
        idleInTransactionMs: config.FOLIO_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS * 1000,
      },
      log,
    }));
  const metrics = new WorkerMetrics(() => queueState(handle.db), () => webhookQueueState(handle.db), !sharedProcess);
  const extraction = new ExtractionClient(config.FOLIO_EXTRACTION_ADDRESS, { catalogDeadlineMs: 10_000, workDeadlineMs: config.FOLIO_EXTRACTION_DEADLINE_SECONDS * 1000 });
  const conversion = config.FOLIO_CONVERSION_ADDRESS
    ? new ConversionClient(config.FOLIO_CONVERSION_ADDRESS, { infoDeadlineMs: 10_000, convertDeadlineMs: config.FOLIO_CONVERSION_DEADLINE_SECONDS * 1000 })
    : undefined;
  const documents = jobDocumentStore(config);
  const store = { retentionMs: config.FOLIO_JOB_RETENTION_DAYS * 86_400_000, progressIntervalMs: PROGRESS_INTERVAL_MS };
  const listen = handle.listen;
  const worker = new JobWorker({
    db: handle.db,
    extraction,
    ...(conversion ? { conversion } : {}),
    log,
    concurrency: config.FOLIO_WORKER_CONCURRENCY,
    expressSlots: config.FOLIO_WORKER_EXPRESS_SLOTS,
    leaseMs: config.FOLIO_JOB_LEASE_SECONDS * 1000,
    pollMs: config.FOLIO_WORKER_POLL_SECONDS * 1000,
    pdfTimeoutMs: config.FOLIO_PDF_TIMEOUT_SECONDS * 1000,
    rangePages: config.FOLIO_JOB_RANGE_PAGES,
    maxPages: config.FOLIO_JOB_MAX_PAGES,
    maxAttempts: config.FOLIO_JOB_MAX_ATTEMPTS,
    store,
    documents,
    metrics,
    ...(listen ? { listen: (onNotify: () => void) => listen(QUEUE_CHANNEL, onNotify) } : {}),
  });
  worker.start();
  const secrets = loadSecretBox(config);
  const deliverer = secrets
    ? new WebhookDeliverer({
        db: handle.db,
        secrets,
        log,
        concurrency: config.FOLIO_WEBHOOK_CONCURRENCY,
        timeoutMs: config.FOLIO_WEBHOOK_TIMEOUT_SECONDS * 1000,
        retrySeconds: config.FOLIO_WEBHOOK_RETRY_SECONDS.split(",").map(Number),
        pollMs: config.FOLIO_WEBHOOK_POLL_SECONDS * 1000,
        allow: config.FOLIO_FETCH_ALLOW.split(",").map((s) => s.trim()).filter(Boolean),
        onAttempt: (result, type, seconds) => metrics.webhookAttempt(result, type, seconds),
        onMerged: (n) => metrics.webhookDeliveries.inc({ outcome: "merged" }, n),
        ...(listen ? { listen: (onNotify: () => void) => listen(OUTBOX_CHANNEL, onNotify) } : {}),
      })
    : undefined;
  deliverer?.start();
  if (!deliverer) log.warn("no FOLIO_WEBHOOK_SECRET_KEY: webhooks are not delivered by this worker");
  const sweep = () =>
    Promise.all([deleteExpiredJobs(handle.db), sweepDocuments(handle.db, documents)]).then(
      ([jobs, files]) => (jobs > 0 || files > 0) && log.info({ deleted: jobs, document_files: files }, "jobs past their retention deleted"),
      (err: unknown) => log.warn({ err }, "retention sweep failed; the next one tries again"),
    );
  void sweep();
  const sweeper = setInterval(() => void sweep(), RETENTION_SWEEP_MS);
  sweeper.unref();
  const served = !sharedProcess && config.FOLIO_METRICS_ENABLED ? await metrics.serve(config.FOLIO_METRICS_HOST, config.FOLIO_METRICS_PORT) : null;
  log.info({ worker: worker.id, concurrency: config.FOLIO_WORKER_CONCURRENCY, metrics: served ? served.port : null }, "jobs worker running");
  return {
    worker,
    ...(deliverer ? { deliverer } : {}),
    metrics,
    metricsUrl: served ? `http://${config.FOLIO_METRICS_HOST}:${served.port}/metrics` : null,
    close: async () => {
      clearInterval(sweeper);
      await Promise.all([worker.stop(config.FOLIO_WORKER_DRAIN_SECONDS * 1000), deliverer?.stop()]);
      extraction.close();
      conversion?.close();
      await new Promise<void>((resolve) => (served ? served.server.close(() => resolve()) : resolve()));
      if (!database) await handle.close();
    },
  };
}
