import { startEdge, type RunningEdge } from "../edge/index.ts";
import { edgeSchema, parseConfig, type Env } from "../platform/config/index.ts";
import { createLogger, type Logger } from "../platform/log/index.ts";

/** Runs the edge until SIGINT/SIGTERM. */
export async function runEdge(env: Env): Promise<void> {
  const config = parseConfig(edgeSchema, env);
  if (!config.DATABASE_URL) throw new Error("configuration: DATABASE_URL: required for `folio edge` (embedded PGlite is for `folio dev` only)");
  const log = createLogger(config.LOG_LEVEL);
  const edge = await startEdge({ config, log });
  log.info({ url: edge.url, metrics: edge.metricsUrl }, "edge listening");
  stopOnSignal(log, () => edge.close());
}

export function stopOnSignal(log: Logger, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
}

export type { RunningEdge };
