/**
 * `folio dev`: every service in one process with embedded defaults. The
 * edge binds 127.0.0.1 unless FOLIO_HTTP_HOST says otherwise.
 */
import { relative } from "node:path";
import { edgeDatabaseTimeouts, startEdge } from "../../edge/index.ts";
import { startWorker } from "../../jobs/index.ts";
import { conversionSchema, edgeSchema, extractionSchema, parseConfig, workerSchema, type Env } from "../../platform/config/index.ts";
import { startExtraction } from "../../extraction/index.ts";
import { startConversion, type RunningConversion } from "../../conversion/index.ts";
import type { Logger } from "../../platform/log/index.ts";
import { migrateToLatest, openDatabase } from "../../platform/db/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { ensureDevAccount } from "./dev-account.ts";
import { stopOnSignal } from "./services.ts";

export async function runDev(env: Env): Promise<void> {
  // Services run in this process but still talk gRPC over loopback, like a deployment.
  const extractionConfig = parseConfig(extractionSchema, { ...env, FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: "0" });
  const devEnv = { FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_METRICS_HOST: "127.0.0.1", ...env };
  const log = createLogger(parseConfig(edgeSchema, devEnv).LOG_LEVEL);
  const extraction = await startExtraction({ config: extractionConfig, log: log.child({ component: "extraction" }), sharedProcess: true });
  const conversion = await startDevConversion(env, log);
  const config = parseConfig(edgeSchema, {
    ...devEnv,
    FOLIO_EXTRACTION_ADDRESS: extraction.grpc.address,
    ...(conversion ? { FOLIO_CONVERSION_ADDRESS: conversion.grpc.address } : {}),
  });
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.FOLIO_DATA_DIR, poolSize: config.FOLIO_DB_POOL_SIZE, timeouts: edgeDatabaseTimeouts(config), log });
  await migrateToLatest(database.db);
  const dev = await ensureDevAccount(database.db, config.FOLIO_DATA_DIR);
  // The jobs worker in process: durable jobs run on `make run` as in a cluster, against the same database.
  const worker = await startWorker({
    config: parseConfig(workerSchema, {
      ...devEnv,
      FOLIO_EXTRACTION_ADDRESS: extraction.grpc.address,
      ...(conversion ? { FOLIO_CONVERSION_ADDRESS: conversion.grpc.address } : {}),
    }),
    log: log.child({ component: "worker" }),
    database,
    sharedProcess: true,
  });
  const edge = await startEdge({ config, log, database, alsoMetrics: [extraction.metrics.registry, worker.metrics.registry, ...(conversion ? [conversion.metrics.registry] : [])] });
  const keyPath = relative(process.cwd(), dev.keyFile) || dev.keyFile;
  log.info({ url: edge.url, metrics: edge.metricsUrl, database: database.description, ratelimit: config.REDIS_URL ? "redis" : "in-process" }, "folio dev is running");
  console.error(
    [
      "",
      `  Folio dev API:   ${edge.url}`,
      `  Admin key file:  ${keyPath}${dev.created ? " (new)" : ""}`,
      `  Try:             curl -H "Authorization: Bearer $(cat ${keyPath})" ${edge.url}/v1/account/balance`,
      `  API docs:        ${edge.url}/docs`,
      `  Models:          ${extraction.catalog.snapshot().models.length} in the catalog${extractionConfig.FOLIO_UPSTREAM_API_KEY ? "" : " (local engines only: set FOLIO_UPSTREAM_API_KEY for upstream models)"}`,
      `  Conversion:      ${conversion ? `${conversion.backend} sandboxes` : "off (see the log above); office documents get conversion_not_available"}`,
      `  Durable jobs:    POST ${edge.url}/v1/ocr/jobs, read by a worker in this process (docs/jobs.md)`,
      "",
    ].join("\n"),
  );
  stopOnSignal(log, async () => {
    await edge.close();
    await worker.close();
    await extraction.close();
    await conversion?.close();
    await database.close();
  });
}

/**
 * The conversion service in process, with runsc sandboxes unless
 * FOLIO_SANDBOX says otherwise. When sandboxes cannot run here (runsc needs
 * root) folio dev still starts, without conversion, and says why.
 */
async function startDevConversion(env: Env, log: Logger): Promise<RunningConversion | undefined> {
  const config = parseConfig(conversionSchema, { ...env, FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: "0" });
  try {
    return await startConversion({ config, log: log.child({ component: "conversion" }), sharedProcess: true });
  } catch (err) {
    log.warn({ err: (err as Error).message, backend: config.FOLIO_SANDBOX }, "conversion service not started: office documents will get conversion_not_available");
    return undefined;
  }
}
