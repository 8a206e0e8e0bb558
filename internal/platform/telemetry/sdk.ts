/**
 * Tracing: the OpenTelemetry SDK with the instrumentations Folio relies on
 * (incoming HTTP and fastify routes, gRPC client and server, pg, ioredis,
 * outbound fetch to the upstream). `register.ts` starts it before anything
 * else is imported; domain code only ever uses `@opentelemetry/api`
 * (through `index.ts`), which is a no-op when the SDK is not running.
 *
 * Export is chosen by the standard OTEL_* variables (OTLP by default, e.g.
 * OTEL_EXPORTER_OTLP_ENDPOINT); with none of them set the SDK is not started
 * at all: no hooks, no spans, no cost. Spans never carry a key, a document
 * or a prompt: HTTP headers and gRPC metadata are not recorded, SQL and
 * Redis statements without their values.
 */
import { NodeSDK } from "@opentelemetry/sdk-node";
import type { SpanProcessor } from "@opentelemetry/sdk-trace";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { GrpcInstrumentation } from "@opentelemetry/instrumentation-grpc";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { FastifyOtelInstrumentation } from "@fastify/otel";

type Env = Readonly<Record<string, string | undefined>>;

/** Whether the standard variables ask for traces to be exported. */
export function tracingRequested(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter !== undefined && exporter !== "") return exporter !== "none";
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** Probes and scrapes are not worth a trace each. */
const UNTRACED_PATHS = /^\/(healthz|readyz|metrics)(\?|$)/;

export function instrumentations() {
  return [
    new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? "") }),
    new FastifyOtelInstrumentation({ registerOnInitialization: true, ignorePaths: (r) => UNTRACED_PATHS.test(r.url) }),
    new UndiciInstrumentation(),
    new GrpcInstrumentation({ ignoreGrpcMethods: ["Check", "Watch"] }),
    new PgInstrumentation({ enhancedDatabaseReporting: false }),
    // The command name only: arguments hold keys and values.
    new IORedisInstrumentation({ dbStatementSerializer: (cmd) => cmd }),
  ];
}

/**
 * The service name of this process: OTEL_SERVICE_NAME, else `folio-<command>`
 * from the command line (`folio edge` → folio-edge, cmd/extraction → folio-extraction).
 */
export function serviceName(env: Env, argv: readonly string[]): string {
  if (env.OTEL_SERVICE_NAME) return env.OTEL_SERVICE_NAME;
  const script = argv[1] ?? "";
  const command = /cmd[/\\]([a-z]+)[/\\]main\.[cm]?[jt]s$/.exec(script)?.[1];
  if (command === "folio") return `folio-${argv.slice(2).find((a) => !a.startsWith("-")) ?? "cli"}`;
  return command ? `folio-${command}` : "folio";
}

/**
 * Starts the SDK. `spanProcessors` replaces the exporter chosen by OTEL_*
 * (tests pass an in-memory one).
 */
export function startTelemetry(o: { env: Env; argv: readonly string[]; spanProcessors?: SpanProcessor[] }): NodeSDK {
  const sdk = new NodeSDK({
    serviceName: serviceName(o.env, o.argv),
    instrumentations: instrumentations(),
    // Metrics are Prometheus (prom-client, one registry per process) and logs are pino: traces only here.
    metricReaders: [],
    logRecordProcessors: [],
    ...(o.spanProcessors ? { spanProcessors: o.spanProcessors } : {}),
  });
  sdk.start();
  const stop = () => void sdk.shutdown().catch(() => undefined);
  process.once("SIGTERM", stop);
  process.once("beforeExit", stop);
  return sdk;
}
