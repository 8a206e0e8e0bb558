/**
 * `folio edge`, `folio extraction`, `folio conversion`, `folio worker`: one service each, from
 * its configuration, until SIGINT/SIGTERM.
 */
import { startConversion } from "../../conversion/index.ts";
import { startEdge } from "../../edge/index.ts";
import { startExtraction } from "../../extraction/index.ts";
import { startWorker } from "../../jobs/index.ts";
import { conversionSchema, edgeSchema, extractionSchema, parseConfig, workerSchema, type Env } from "../../platform/config/index.ts";
import { startParserJail } from "../../platform/jail/index.ts";
import { createLogger, type Logger } from "../../platform/log/index.ts";

/** Runs the edge until SIGINT/SIGTERM. */
export async function runEdge(env: Env): Promise<void> {
  const config = parseConfig(edgeSchema, env);
  if (!config.DATABASE_URL) throw new Error("configuration: DATABASE_URL: required for `folio edge` (embedded PGlite is for `folio dev` only)");
  const log = createLogger(config.LOG_LEVEL);
  const edge = await startEdge({ config, log });
  log.info({ url: edge.url, metrics: edge.metricsUrl }, "edge listening");
  stopOnSignal(log, () => edge.close());
}

/** Runs the extraction gRPC service until SIGINT/SIGTERM. */
export async function runExtraction(env: Env): Promise<void> {
  const config = parseConfig(extractionSchema, env);
  const log = createLogger(config.LOG_LEVEL);
  // tesseract and the image decoder read client images: their jail, as the edge's poppler (platform/jail; `folio dev` takes the edge's).
  await startParserJail(config.FOLIO_PARSER_JAIL, (message) => log.warn(message));
  const running = await startExtraction({ config, log });
  stopOnSignal(log, () => running.close());
}

/** Runs the conversion gRPC service until SIGINT/SIGTERM. */
export async function runConversion(env: Env): Promise<void> {
  const config = parseConfig(conversionSchema, env);
  const log = createLogger(config.LOG_LEVEL);
  const running = await startConversion({ config, log });
  stopOnSignal(log, () => running.close());
}

/** Runs a jobs worker until SIGINT/SIGTERM: it reads durable OCR jobs' pages (docs/jobs.md). */
export async function runWorker(env: Env): Promise<void> {
  const config = parseConfig(workerSchema, env);
  if (!config.DATABASE_URL) throw new Error("configuration: DATABASE_URL: required for `folio worker` (embedded PGlite is for `folio dev` only)");
  const log = createLogger(config.LOG_LEVEL);
  // The worker renders job PDFs with poppler: its jail, as the edge's (platform/jail; `folio dev` takes the edge's).
  await startParserJail(config.FOLIO_PARSER_JAIL, (message) => log.warn(message));
  const running = await startWorker({ config, log });
  stopOnSignal(log, () => running.close());
}

/** Closes the process's parts on the first SIGINT or SIGTERM, then exits (1 when closing failed). */
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
