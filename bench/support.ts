import { edgeSchema, parseConfig, type EdgeConfig, type Env } from "../internal/platform/config/index.ts";
import { openDatabase } from "../internal/platform/db/index.ts";
import { adminAddCredits } from "../internal/cli/admin/index.ts";

/** Adds credits to a benchmark account. */
export async function addCredits(databaseUrl: string, accountId: string, cents: number): Promise<void> {
  const handle = await openDatabase({ databaseUrl, poolSize: 1 });
  try {
    await adminAddCredits({ db: handle.db }, { accountId, cents });
  } finally {
    await handle.close();
  }
}

/** The median of some figures (NaN for none). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** A positive whole number from the environment, or `fallback` when unset. */
export function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

/**
 * An edge for a benchmark: loopback, any free port, the run's Postgres and
 * Redis, no metrics listener, silent; `extra` on top.
 */
export function benchEdgeConfig(databaseUrl: string, redisUrl: string, extra: Env = {}): EdgeConfig {
  return parseConfig(edgeSchema, {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    FOLIO_HTTP_HOST: "127.0.0.1",
    FOLIO_HTTP_PORT: "0",
    FOLIO_METRICS_ENABLED: "false",
    LOG_LEVEL: "silent",
    ...extra,
  });
}
