/**
 * Builds a running edge from its configuration: database, rate limiter,
 * authenticator, billing, routes and the metrics listener.
 */
import { Authenticator, KeyStore } from "../auth/index.ts";
import { Billing, IdempotencyStore } from "../billing/index.ts";
import type { EdgeConfig } from "../platform/config/index.ts";
import { openDatabase, type DatabaseHandle, type DatabaseTimeouts } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { startParserJail } from "../platform/jail/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { EdgeMetrics } from "../platform/metrics/index.ts";
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from "../ratelimit/index.ts";
import { UsagePartitions } from "../usage/index.ts";
import { sql } from "kysely";
import type { Registry } from "prom-client";
import { buildEdgeApp } from "./app.ts";
import { ExtractionClient } from "../extraction/client.ts";
import { ConversionClient } from "../conversion/client.ts";
import { observingClientInterceptor } from "../platform/grpc/index.ts";
import { EVENTS_CHANNEL, JobEventWaits, jobDocumentStore } from "../jobs/index.ts";
import { loadSecretBox } from "../webhooks/index.ts";
import type { App, EdgeDeps } from "./types.ts";

export { buildEdgeApp } from "./app.ts";
export type { App, EdgeDeps } from "./types.ts";

export interface RunningEdge {
  app: App;
  deps: EdgeDeps;
  /** Base URL of the public API, e.g. http://127.0.0.1:8080 */
  url: string;
  metricsUrl: string | null;
  close(): Promise<void>;
}

export interface StartEdgeOptions {
  config: EdgeConfig;
  log: Logger;
  /** Registries of other services in this process, served on the edge's metrics port (folio dev). */
  alsoMetrics?: Registry[];
  /** Reuse an open database (folio dev shares one with other parts). */
  database?: DatabaseHandle;
}

/** The edge's bounds on every wait for Postgres (docs/configuration.md). */
export function edgeDatabaseTimeouts(config: EdgeConfig): DatabaseTimeouts {
  return {
    connectMs: config.FOLIO_DB_CONNECT_TIMEOUT_SECONDS * 1000,
    statementMs: config.FOLIO_DB_STATEMENT_TIMEOUT_SECONDS * 1000,
    idleInTransactionMs: config.FOLIO_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS * 1000,
  };
}

export async function startEdge({ config, log, database, alsoMetrics = [] }: StartEdgeOptions): Promise<RunningEdge> {
  // Before anything listens: a jail asked for that cannot run here stops the start (platform/jail).
  await startParserJail(config.FOLIO_PARSER_JAIL, (message) => log.warn(message));
  const ownsDb = !database;
  const handle =
    database ??
    (await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.FOLIO_DATA_DIR, poolSize: config.FOLIO_DB_POOL_SIZE, timeouts: edgeDatabaseTimeouts(config), log }));
  const metrics = new EdgeMetrics();
  let limiter: RateLimiter = new MemoryRateLimiter();
  if (config.REDIS_URL) {
    const redis = new RedisRateLimiter(config.REDIS_URL, {
      onError: config.FOLIO_RATELIMIT_ON_REDIS_ERROR,
      log,
      onBackendError: (op) => metrics.rateLimitBackendErrors.inc({ op }),
      connectTimeoutMs: config.FOLIO_REDIS_CONNECT_TIMEOUT_SECONDS * 1000,
      commandTimeoutMs: config.FOLIO_REDIS_COMMAND_TIMEOUT_SECONDS * 1000,
    });
    if (!(await redis.connected())) log.warn("redis not reachable at start; serving with the fallback until it is");
    limiter = redis;
  }
  const authenticator = new Authenticator(handle.db, limiter, {
    cacheTtlMs: config.FOLIO_KEY_CACHE_TTL_SECONDS * 1000,
    cacheSize: config.FOLIO_KEY_CACHE_SIZE,
    lastUsedFlushMs: config.FOLIO_LAST_USED_FLUSH_SECONDS * 1000,
    log,
    onCache: (result) => metrics.keyCache.inc({ result }),
    authFailuresPerMinute: config.FOLIO_AUTH_FAILURES_PER_MINUTE,
  });
  const billing = new Billing(handle.db, {
    holdTtlMs: config.FOLIO_HOLD_TTL_SECONDS * 1000,
    events: {
      hold: (outcome) => {
        metrics.holds.inc({ outcome });
        if (outcome === "insufficient") metrics.insufficientCredits.inc();
      },
      settled: (status, endpoint, cents) => {
        metrics.settlements.inc({ status });
        metrics.chargedCents.inc({ endpoint }, cents);
      },
    },
  });
  const grpcInterceptors = [observingClientInterceptor(metrics.grpc)];
  const secrets = loadSecretBox(config);
  const deps: EdgeDeps = {
    db: handle.db,
    limiter,
    authenticator,
    keys: new KeyStore(handle.db, authenticator),
    billing,
    // A running request holds its key a minute past its hold's lifetime: by then a dead request's hold was released unbilled.
    idempotency: new IdempotencyStore(handle.db, { leaseMs: config.FOLIO_HOLD_TTL_SECONDS * 1000 + 60_000 }),
    metrics,
    log,
    extraction: config.FOLIO_EXTRACTION_ADDRESS
      ? new ExtractionClient(config.FOLIO_EXTRACTION_ADDRESS, { catalogDeadlineMs: 10_000, workDeadlineMs: config.FOLIO_EXTRACTION_DEADLINE_SECONDS * 1000, interceptors: grpcInterceptors })
      : undefined,
    conversion: config.FOLIO_CONVERSION_ADDRESS
      ? new ConversionClient(config.FOLIO_CONVERSION_ADDRESS, { infoDeadlineMs: 10_000, convertDeadlineMs: config.FOLIO_CONVERSION_DEADLINE_SECONDS * 1000, interceptors: grpcInterceptors })
      : undefined,
    conversionDeadlineMs: config.FOLIO_CONVERSION_DEADLINE_SECONDS * 1000,
    sseKeepAliveMs: config.FOLIO_SSE_KEEPALIVE_SECONDS * 1000,
    jobEvents: new JobEventWaits(handle.listen ? (onNotify) => handle.listen!(EVENTS_CHANNEL, onNotify) : undefined),
    documents: {
      fetch: {
        maxBytes: config.FOLIO_MAX_DOCUMENT_BYTES,
        timeoutMs: config.FOLIO_FETCH_TIMEOUT_SECONDS * 1000,
        maxRedirects: 5,
        allow: config.FOLIO_FETCH_ALLOW.split(",").map((s) => s.trim()).filter(Boolean),
      },
      maxBytes: config.FOLIO_MAX_DOCUMENT_BYTES,
      maxPages: config.FOLIO_MAX_PAGES,
      pageConcurrency: config.FOLIO_PAGE_CONCURRENCY,
      pdfTimeoutMs: config.FOLIO_PDF_TIMEOUT_SECONDS * 1000,
    },
    jobs: {
      maxPages: config.FOLIO_JOB_MAX_PAGES,
      maxBytes: config.FOLIO_JOB_MAX_BYTES,
      rangePages: config.FOLIO_JOB_RANGE_PAGES,
      retentionMs: config.FOLIO_JOB_RETENTION_DAYS * 86_400_000,
      holdTtlMs: config.FOLIO_JOB_RETENTION_DAYS * 86_400_000,
      documents: jobDocumentStore(config),
    },
    webhooks: {
      ...(secrets ? { secrets } : {}),
      rotationOverlapSeconds: config.FOLIO_WEBHOOK_ROTATION_OVERLAP_SECONDS,
    },
    publicRequestsPerMinute: config.FOLIO_PUBLIC_REQUESTS_PER_MINUTE,
    bodyLimitBytes: config.FOLIO_BODY_LIMIT_BYTES,
    trustProxy: config.FOLIO_TRUST_PROXY,
    checkReady: async () => {
      const limitMs = config.FOLIO_READY_TIMEOUT_SECONDS * 1000;
      const state = (check: Promise<void>) => check.then(() => "ok" as const, (err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      const [database, ratelimit] = await Promise.all([
        state(withinReady("database", limitMs, () => sql`select 1`.execute(handle.db))),
        state(withinReady("ratelimit", limitMs, () => limiter.ping())),
      ]);
      return { database, ratelimit };
    },
  };
  const app = await buildEdgeApp(deps);
  const url = await app.listen({ host: config.FOLIO_HTTP_HOST, port: config.FOLIO_HTTP_PORT });
  const metricsServer = config.FOLIO_METRICS_ENABLED ? await metrics.serve(config.FOLIO_METRICS_HOST, config.FOLIO_METRICS_PORT, alsoMetrics) : null;
  const sweeper = setInterval(() => {
    billing.releaseExpired().then(
      (n) => n > 0 && log.warn({ released: n }, "released expired credit holds"),
      (err: unknown) => log.error({ err }, "hold sweeper failed"),
    );
    deps.idempotency.sweep().then(
      (n) => n > 0 && log.debug({ forgotten: n }, "forgot idempotency keys past their 24 hours"),
      (err: unknown) => log.error({ err }, "idempotency sweeper failed"),
    );
  }, 60_000);
  sweeper.unref();
  const partitions = new UsagePartitions(handle.db, config.FOLIO_USAGE_RETENTION_MONTHS);
  const upkeep = () =>
    partitions.upkeep().then(
      (r) => (r.created.length || r.dropped.length || r.deletedRows) && log.info(r, "usage partitions kept up"),
      (err: unknown) => log.error({ err }, "usage partition upkeep failed"),
    );
  void upkeep();
  const upkeeper = setInterval(upkeep, 3_600_000);
  upkeeper.unref();

  return {
    app,
    deps,
    url: url.replace("0.0.0.0", "127.0.0.1"),
    metricsUrl: metricsServer ? `http://127.0.0.1:${metricsServer.port}/metrics` : null,
    close: async () => {
      clearInterval(sweeper);
      clearInterval(upkeeper);
      await app.close();
      await deps.jobEvents.close();
      deps.extraction?.close();
      deps.conversion?.close();
      await authenticator.close();
      await limiter.close();
      if (metricsServer) await new Promise((r) => metricsServer.server.close(r));
      if (ownsDb) await handle.close();
    },
  };
}

/**
 * One readiness check, bounded: /readyz answers within its limit even when a
 * dependency accepts connections and never answers. The check itself goes on
 * until its own timeout (FOLIO_DB_*, FOLIO_REDIS_*) ends it.
 */
async function withinReady(name: string, limitMs: number, check: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FolioError("service_unavailable", `${name}: no answer within ${limitMs} ms`)), limitMs);
  });
  try {
    await Promise.race([
      check().catch((err: unknown) => {
        throw new FolioError("service_unavailable", `${name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
