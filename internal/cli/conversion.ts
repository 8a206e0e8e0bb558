import { startConversion } from "../conversion/index.ts";
import { conversionSchema, parseConfig, type Env } from "../platform/config/index.ts";
import { createLogger } from "../platform/log/index.ts";
import { stopOnSignal } from "./edge.ts";

/** Runs the conversion gRPC service until SIGINT/SIGTERM. */
export async function runConversion(env: Env): Promise<void> {
  const config = parseConfig(conversionSchema, env);
  const log = createLogger(config.LOG_LEVEL);
  const running = await startConversion({ config, log });
  stopOnSignal(log, () => running.close());
}
