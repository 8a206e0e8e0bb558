/**
 * The conversion service assembled from configuration: the sandbox backend
 * FOLIO_SANDBOX names, the service, its gRPC server (and, for the
 * `kubernetes` backend, the sandbox broker on a port of its own).
 */
import type { ConversionConfig } from "../platform/config/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { startGrpcServer, type RunningGrpcServer } from "../platform/grpc/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { ConversionMetrics } from "../platform/metrics/index.ts";
import { RunscBackend, UnsandboxedBackend, type SandboxBackend } from "../sandbox/index.ts";
import { registerConversion } from "./grpc.ts";
import type { BackendName } from "../contracts/index.ts";
import { ConversionService, type ConversionLimits } from "./service.ts";

export { ConversionClient } from "./client.ts";
export { ConversionService } from "./service.ts";
export type { Conversion, ConvertedPage, Estimate, PricingInfo } from "../contracts/index.ts";
export { formatForMimeType, unsupportedFormat } from "./formats.ts";

export interface RunningConversion {
  service: ConversionService;
  grpc: RunningGrpcServer;
  metrics: ConversionMetrics;
  metricsUrl: string | null;
  backend: BackendName;
  close(): Promise<void>;
}

export interface StartConversionOptions {
  config: ConversionConfig;
  log: Logger;
  /** Another service of this process serves the metrics (folio dev). */
  sharedProcess?: boolean;
}

export function conversionLimits(config: ConversionConfig): ConversionLimits {
  return {
    timeoutMs: Math.round(config.FOLIO_CONVERSION_TIMEOUT_SECONDS * 1000),
    maxDocumentBytes: config.FOLIO_CONVERSION_MAX_DOCUMENT_BYTES,
    maxPages: config.FOLIO_CONVERSION_MAX_PAGES,
    maxOutputBytes: config.FOLIO_CONVERSION_MAX_OUTPUT_BYTES,
    concurrency: config.FOLIO_CONVERSION_CONCURRENCY,
    queueLimit: config.FOLIO_CONVERSION_QUEUE_LIMIT,
  };
}

interface Backend {
  backend: SandboxBackend;
  /** Work that must succeed before the service says it is ready (runsc: assets prepared). */
  prepare?: () => Promise<unknown>;
  close?: () => Promise<void>;
}

/** `queued`: conversions waiting for a slot of the service (what a warm pool is sized from, with the rate). */
async function makeBackend(config: ConversionConfig, log: Logger, metrics: ConversionMetrics, queued: () => number): Promise<Backend> {
  const maxOutputBytes = config.FOLIO_CONVERSION_MAX_OUTPUT_BYTES;
  switch (config.FOLIO_SANDBOX) {
    case "runsc": {
      if (process.getuid?.() !== 0) {
        throw new FolioError("internal_error", "the runsc sandbox backend needs root (runsc creates namespaces and cgroups); run as root, or set FOLIO_SANDBOX=unsandboxed for development only");
      }
      const backend = new RunscBackend({
        runsc: config.FOLIO_RUNSC_PATH,
        platform: config.FOLIO_RUNSC_PLATFORM,
        ...(config.FOLIO_SANDBOX_WORK_DIR ? { workDir: config.FOLIO_SANDBOX_WORK_DIR } : {}),
        limits: { memoryBytes: config.FOLIO_SANDBOX_MEMORY_MB * 1024 * 1024, cpus: config.FOLIO_SANDBOX_CPUS, pids: config.FOLIO_SANDBOX_PIDS },
        maxOutputBytes,
        logger: log,
        // Pre-started sandboxes take LibreOffice's start off the request's path (docs/sandbox.md).
        prestart: config.FOLIO_RUNSC_PRESTART,
        // Restored sandboxes wait at no CPU cost; twice the concurrency keeps one
        // ready while its predecessor's replacement is still being restored
        // (docs/benchmarks.md: 68 → 87 docs/min).
        prestartPool: config.FOLIO_CONVERSION_CONCURRENCY * (config.FOLIO_RUNSC_RESTORE ? 2 : 1),
        // Restored from a checkpoint: LibreOffice's start is not paid per document at all (docs/sandbox.md).
        restore: config.FOLIO_RUNSC_RESTORE,
        metrics,
      });
      return { backend, prepare: () => backend.prepare(), close: () => backend.close() };
    }
    case "unsandboxed": {
      log.warn("FOLIO_SANDBOX=unsandboxed: office documents will be opened WITHOUT a sandbox; development only");
      const backend = new UnsandboxedBackend({ logger: log, maxOutputBytes, ...(config.FOLIO_SANDBOX_WORK_DIR ? { workDir: config.FOLIO_SANDBOX_WORK_DIR } : {}) });
      return { backend, prepare: () => backend.prepare() };
    }
    case "kubernetes":
      return kubernetesBackend(config, log, metrics, queued);
  }
}

/** The `kubernetes` backend: ConversionSandboxes for the operator, and the broker their pods call. */
async function kubernetesBackend(config: ConversionConfig, log: Logger, metrics: ConversionMetrics, queued: () => number): Promise<Backend> {
  if (!config.FOLIO_BROKER_ADDRESS) {
    throw new FolioError("internal_error", "configuration: FOLIO_BROKER_ADDRESS: required by FOLIO_SANDBOX=kubernetes (the address sandbox pods dial, e.g. folio-conversion.folio.svc:50053)");
  }
  // Loaded only for this backend: the others never load the Kubernetes client.
  const [{ KubeConfig }, { BROKER_SERVICE_NAME, KubernetesBackend, SandboxBroker, registerBroker }] = await Promise.all([
    import("@kubernetes/client-node"),
    import("../sandbox/kubernetes/index.ts"),
  ]);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const broker = new SandboxBroker({ log: log.child({ component: "broker" }) });
  const server = await startGrpcServer(config.FOLIO_BROKER_HOST, config.FOLIO_BROKER_PORT, (s) => {
    registerBroker(s, broker);
    return [BROKER_SERVICE_NAME];
  });
  log.info({ address: server.address }, "sandbox broker listening");
  const backend = new KubernetesBackend({
    kubeConfig,
    namespace: config.FOLIO_KUBE_NAMESPACE,
    brokerAddress: config.FOLIO_BROKER_ADDRESS,
    broker,
    maxOutputBytes: config.FOLIO_CONVERSION_MAX_OUTPUT_BYTES,
    log,
    // The warm pool's counters (hand-ins, cold fallbacks, retries) are scraped with the service's.
    metrics,
    // The pool is sized from the hand-in rate and the requests queued for a slot here.
    pool: config.FOLIO_SANDBOX_POOL_ENABLED ? { name: config.FOLIO_SANDBOX_POOL, queued } : false,
  });
  return {
    backend,
    close: async () => {
      await backend.close();
      await server.close();
    },
  };
}

export async function startConversion({ config, log, sharedProcess = false }: StartConversionOptions): Promise<RunningConversion> {
  // The queue gauge reads the service only when scraped, after it exists.
  const metrics: ConversionMetrics = new ConversionMetrics((): { waiting: number } => svc.load(), !sharedProcess);
  // As the gauge: the backend asks for the queue only on its pool reports, after svc exists.
  const made = await makeBackend(config, log, metrics, () => svc.load().waiting);
  // Prepared before serving: the first document should not pay for bundling the sandbox program.
  await made.prepare?.();
  const svc: ConversionService = new ConversionService({ backend: made.backend, backendName: config.FOLIO_SANDBOX, limits: conversionLimits(config), log, metrics });
  const grpc = await startGrpcServer(config.FOLIO_GRPC_HOST, config.FOLIO_GRPC_PORT, (server) =>
    registerConversion(server, svc, {
      onError: (err, method) => {
        if (!(err instanceof FolioError) || err.code === "internal_error") log.error({ err, method }, "conversion call failed");
      },
    }),
    metrics.grpc,
  );
  const served = !sharedProcess && config.FOLIO_METRICS_ENABLED ? await metrics.serve(config.FOLIO_METRICS_HOST, config.FOLIO_METRICS_PORT) : null;
  log.info({ address: grpc.address, backend: config.FOLIO_SANDBOX, concurrency: config.FOLIO_CONVERSION_CONCURRENCY }, "conversion service listening");
  return {
    service: svc,
    grpc,
    metrics,
    metricsUrl: served ? `http://127.0.0.1:${served.port}/metrics` : null,
    backend: config.FOLIO_SANDBOX,
    close: async () => {
      await grpc.close();
      await made.close?.();
      if (served) await new Promise((r) => served.server.close(r));
    },
  };
}
