/**
 * `folio dev`: every service in one process with embedded defaults. The
 * edge binds 127.0.0.1 unless FOLIO_HTTP_HOST says otherwise.
 */
import { relative } from "node:path";
import { startEdge } from "../edge/index.ts";
import { edgeSchema, parseConfig, type Env } from "../platform/config/index.ts";
import { migrateToLatest, openDatabase } from "../platform/db/index.ts";
import { createLogger } from "../platform/log/index.ts";
import { ensureDevAccount } from "./dev-account.ts";
import { stopOnSignal } from "./edge.ts";

export async function runDev(env: Env): Promise<void> {
  const config = parseConfig(edgeSchema, { FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_METRICS_HOST: "127.0.0.1", ...env });
  const log = createLogger(config.LOG_LEVEL);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.FOLIO_DATA_DIR, poolSize: config.FOLIO_DB_POOL_SIZE, log });
  await migrateToLatest(database.db);
  const dev = await ensureDevAccount(database.db, config.FOLIO_DATA_DIR);
  const edge = await startEdge({ config, log, database });
  const keyPath = relative(process.cwd(), dev.keyFile) || dev.keyFile;
  log.info({ url: edge.url, metrics: edge.metricsUrl, database: database.description, ratelimit: config.REDIS_URL ? "redis" : "in-process" }, "folio dev is running");
  console.error(
    [
      "",
      `  Folio dev API:   ${edge.url}`,
      `  Admin key file:  ${keyPath}${dev.created ? " (new)" : ""}`,
      `  Try:             curl -H "Authorization: Bearer $(cat ${keyPath})" ${edge.url}/v1/account/balance`,
      `  API docs:        ${edge.url}/docs`,
      "",
    ].join("\n"),
  );
  stopOnSignal(log, async () => {
    await edge.close();
    await database.close();
  });
}
