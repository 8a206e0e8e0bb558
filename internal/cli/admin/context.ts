import { cliSchema, parseConfig, type Env } from "../../platform/config/index.ts";
import { openDatabase } from "../../platform/db/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { RedisRateLimiter } from "../../ratelimit/index.ts";
import type { AdminContext } from "./admin.ts";

/** Opens the database (and Redis, when configured) for one CLI command, then closes them. */
export async function withData(env: Env, fn: (ctx: AdminContext) => Promise<void>): Promise<void> {
  const config = parseConfig(cliSchema, env);
  const log = createLogger(config.LOG_LEVEL === "info" ? "warn" : config.LOG_LEVEL, process.stderr);
  const handle = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.FOLIO_DATA_DIR, log, poolSize: 2 });
  const limiter = config.REDIS_URL ? new RedisRateLimiter(config.REDIS_URL, { onError: "local", log }) : undefined;
  try {
    await fn({ db: handle.db, limiter });
  } finally {
    await limiter?.close();
    await handle.close();
  }
}
