import { startExtraction } from "../extraction/index.ts";
import { extractionSchema, parseConfig, type Env } from "../platform/config/index.ts";
import { createLogger } from "../platform/log/index.ts";
import { stopOnSignal } from "./edge.ts";

/** Runs the extraction gRPC service until SIGINT/SIGTERM. */
export async function runExtraction(env: Env): Promise<void> {
  const config = parseConfig(extractionSchema, env);
  const log = createLogger(config.LOG_LEVEL);
  const running = await startExtraction({ config, log });
  stopOnSignal(log, () => running.close());
}
