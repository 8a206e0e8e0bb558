import { Redis } from "ioredis";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { newGeneration, type Admission, type Fence, type Limit, type LimitState, type RateLimiter } from "./interface.ts";
import { MemoryRateLimiter } from "./memory.ts";
import { GCRA_LUA } from "./gcra-lua.ts";


type AdmitCommand = { folioAdmit(numKeys: number, ...args: (string | number)[]): Promise<number[]> };

export interface RedisLimiterOptions {
  /** What to do when Redis fails mid-flight (docs/rate-limits.md). */
  onError: "local" | "deny";
  log: Logger;
  /** Called once per Redis failure that a request noticed (a metric). */
  onBackendError?: (op: string) => void;
  /** Time limit of opening a connection (default 2 s). */
  connectTimeoutMs?: number;
  /** Time limit of one command (default 1 s); past it the command fails like a dead Redis. */
  commandTimeoutMs?: number;
}

/** What a client is told to wait before retrying when Redis is needed and down. */
const REDIS_RETRY_AFTER_SECONDS = 1;

function redisUnavailable(message: string, cause: unknown): FolioError {
  return new FolioError("service_unavailable", message, {
    retryable: true,
    headers: { "retry-after": String(REDIS_RETRY_AFTER_SECONDS) },
    cause,
  });
}

/**
 * Redis-backed limiter: one Lua script per request (fence + every window).
 * On a Redis error it either falls back to this process's in-memory limiter
 * (`local`, the default: a paid API keeps serving, billing still guards money)
 * or refuses with 503 (`deny`).
 */
export class RedisRateLimiter implements RateLimiter {
  readonly redis: Redis;
  private readonly fallback = new MemoryRateLimiter();

  constructor(url: string, private readonly opts: RedisLimiterOptions) {
    this.redis = new Redis(url, {
      // Fail fast instead of queueing: a request must not wait on a dead Redis.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: opts.connectTimeoutMs ?? 2000,
      commandTimeout: opts.commandTimeoutMs ?? 1000,
      lazyConnect: false,
    });
    this.redis.on("error", (err) => opts.log.warn({ err: err.message }, "redis connection error"));
    this.redis.defineCommand("folioAdmit", { lua: GCRA_LUA });
  }

  async admit(subject: string, limits: readonly Limit[], fence?: Fence): Promise<Admission> {
    const keys = [fence?.key ?? "", ...limits.map((l) => `folio:rl:{${subject}}:${l.name}`)];
    const args = [fence ? String(fence.generation) : "", ...limits.flatMap((l) => [l.count, l.periodMs])];
    let reply: number[];
    try {
      reply = await (this.redis as unknown as AdmitCommand).folioAdmit(keys.length, ...keys, ...args);
    } catch (err) {
      this.failed("admit", err);
      return { ...this.fallback.admitLocal(subject, limits), fenceChecked: false };
    }
    if (reply[0] === -1) return { kind: "stale", generation: Number(reply[1]) };
    const states: LimitState[] = limits.map((l, i) => ({
      name: l.name,
      count: l.count,
      periodMs: l.periodMs,
      remaining: Number(reply[2 + 2 * i]),
      resetMs: Number(reply[3 + 2 * i]),
    }));
    return { kind: "decision", allowed: reply[0] === 1, retryAfterMs: Number(reply[1]), limits: states, fenceChecked: true };
  }

  /**
   * Waits (bounded) for the first connection, so the first requests after a
   * start are not sent to the fallback only because the socket was opening.
   */
  async connected(timeoutMs = this.opts.connectTimeoutMs ?? 2000): Promise<boolean> {
    if (this.redis.status === "ready") return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.redis.off("ready", onReady);
        resolve(false);
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.redis.once("ready", onReady);
    });
  }

  async generation(key: string): Promise<number> {
    try {
      const v = await this.redis.get(key);
      return v === null ? 0 : Number(v);
    } catch (err) {
      this.failed("generation", err);
      return -1;
    }
  }

  /**
   * Moves the fence to a new random generation, never used before. A counter
   * would not do: when Redis loses its data (a restart without persistence, a
   * failover to an empty replica) it starts again from 0, and a bump can land
   * on the very generation another replica has cached, which would then never
   * see the change. A random 48-bit value differs from every cached one.
   *
   * A revocation must reach Redis, so unlike admissions it waits (up to 5 s)
   * for a connection still being made: `folio admin` bumps right after
   * creating its limiter, when the offline queue (off, see above) would
   * otherwise refuse the command.
   */
  async bumpGeneration(key: string): Promise<void> {
    await this.connected(5000);
    try {
      await this.redis.set(key, String(newGeneration()));
    } catch (err) {
      throw redisUnavailable("the key fence store (Redis) is unavailable, try again shortly", err);
    }
  }

  async ping(): Promise<void> {
    try {
      await this.redis.ping();
    } catch (err) {
      throw redisUnavailable("Redis is unavailable, try again shortly", err);
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }

  private failed(op: string, err: unknown): void {
    this.opts.onBackendError?.(op);
    this.opts.log.warn({ op, err: err instanceof Error ? err.message : String(err) }, "redis rate-limit store failed");
    if (this.opts.onError === "deny") throw redisUnavailable("rate-limit store unavailable, try again shortly", err);
  }
}
