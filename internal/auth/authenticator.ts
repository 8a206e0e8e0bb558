/**
 * Request authentication and admission.
 *
 * A verified key is cached per process, but every request also checks the
 * key's generation fence in the same Redis round trip as its rate limit, so a
 * revocation or permission change on any replica is seen by every replica on
 * the very next request (docs/api-keys.md). When the shared store cannot be
 * reached the key is re-read from Postgres on every request instead.
 */
import { sql } from "kysely";
import type { DB } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { keyFence, type Admission, type Limit, type RateLimiter } from "../ratelimit/index.ts";
import { bearerToken, hashKey, hashesEqual, looksLikeKey } from "./keys.ts";

/** The account as read with the key (fresh under the same generation fence as the key). */
export interface AccountSnapshot {
  id: string;
  email: string;
  name: string;
  plan: string;
  createdAt: Date;
  requestsPerMinute: number;
  requestsPerDay: number;
}

export interface Principal {
  keyId: string;
  accountId: string;
  permissions: ReadonlySet<string>;
  account: AccountSnapshot;
}

export interface Authenticated {
  principal: Principal;
  admission: Extract<Admission, { kind: "decision" }>;
}

interface CachedKey {
  hash: string;
  keyId: string;
  accountId: string;
  permissions: ReadonlySet<string>;
  expiresAtMs: number | null;
  revoked: boolean;
  limits: Limit[];
  account: AccountSnapshot;
  generation: number;
  cachedAtMs: number;
}

export interface AuthenticatorOptions {
  cacheTtlMs: number;
  cacheSize: number;
  lastUsedFlushMs: number;
  log: Logger;
  /** Observes cache use ("hit" | "miss"), e.g. for a metric. */
  onCache?: (result: "hit" | "miss") => void;
  /**
   * Unknown keys one client address may present per minute (shared across
   * replicas through the limiter); past it, that address gets 429 for keys
   * not in this replica's cache until the window allows again. 0: off.
   */
  authFailuresPerMinute?: number;
  clock?: () => number;
}

const MAX_STALE_RETRIES = 3;

export class Authenticator {
  private readonly cache = new Map<string, CachedKey>();
  /** Client addresses refused for failed authentications, until (clock ms). */
  private readonly blocked = new Map<string, number>();
  private readonly lastUsed = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private readonly clock: () => number;

  constructor(
    private readonly db: DB,
    private readonly limiter: RateLimiter,
    private readonly opts: AuthenticatorOptions,
  ) {
    this.clock = opts.clock ?? Date.now;
    this.timer = setInterval(() => void this.flushLastUsed().catch((err) => opts.log.error({ err }, "last_used_at flush failed")), opts.lastUsedFlushMs);
    this.timer.unref();
  }

  /** Authenticates `Authorization` and admits the request under its account's rate limits. */
  async authenticate(authorization: string | undefined, client?: string): Promise<Authenticated> {
    const secret = bearerToken(authorization);
    if (secret === undefined) throw unauthorized(authorization ? "Authorization header must be 'Bearer <API key>'" : "missing API key: send 'Authorization: Bearer <API key>'");
    if (!looksLikeKey(secret)) throw unauthorized("invalid API key");
    const hash = hashKey(secret);

    let entry = await this.cached(hash, client);
    for (let attempt = 0; ; attempt++) {
      if (!entry) {
        if (attempt === 0 && client !== undefined) await this.failedAuthentication(client);
        throw unauthorized("invalid API key");
      }
      this.refuseUnusable(entry);
      const fence = attempt < MAX_STALE_RETRIES ? { key: keyFence(entry.accountId, entry.keyId), generation: entry.generation } : undefined;
      const admission = await this.limiter.admit(entry.accountId, entry.limits, fence);
      if (admission.kind === "stale") {
        entry = await this.load(hash);
        continue;
      }
      if (!admission.fenceChecked) {
        // The shared store is down: trust only Postgres for this request.
        entry = await this.load(hash, false);
        if (!entry) throw unauthorized("invalid API key");
        this.refuseUnusable(entry);
      }
      this.lastUsed.set(entry.keyId, this.clock());
      return {
        principal: { keyId: entry.keyId, accountId: entry.accountId, permissions: entry.permissions, account: entry.account },
        admission,
      };
    }
  }

  /**
   * Call after a key's row or its account's row changed (revoked, renamed,
   * permissions, account details or limits):
   * every replica holding it in cache re-reads it on its next request.
   */
  async keyChanged(accountId: string, keyId: string, keyHash: string): Promise<void> {
    this.cache.delete(keyHash);
    const fence = keyFence(accountId, keyId);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.limiter.bumpGeneration(fence);
        return;
      } catch (err) {
        if (attempt >= 3) {
          // The change is durable in Postgres; other replicas see it when their cache entry expires.
          this.opts.log.error({ keyId, err: err instanceof Error ? err.message : String(err) }, "could not publish key change; other replicas see it after the cache TTL");
          return;
        }
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }

  /** Writes pending last_used_at values in one statement. */
  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const batch = [...this.lastUsed];
    this.lastUsed.clear();
    const rows = sql.join(batch.map(([id, ms]) => sql`(${id}, ${new Date(ms)}::timestamptz)`));
    await sql`
      update api_keys set last_used_at = v.t
      from (values ${rows}) as v(id, t)
      where api_keys.id = v.id and (api_keys.last_used_at is null or api_keys.last_used_at < v.t)`.execute(this.db);
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushLastUsed();
  }

  private refuseUnusable(entry: CachedKey): void {
    if (entry.revoked) throw unauthorized("API key has been revoked");
    if (entry.expiresAtMs !== null && entry.expiresAtMs <= this.clock()) throw unauthorized("API key has expired");
  }

  private async cached(hash: string, client?: string): Promise<CachedKey | null> {
    const hit = this.cache.get(hash);
    if (hit && this.clock() - hit.cachedAtMs < this.opts.cacheTtlMs) {
      this.opts.onCache?.("hit");
      return hit;
    }
    this.opts.onCache?.("miss");
    // A blocked address does not get to test keys against the database.
    if (client !== undefined) this.refuseBlocked(client);
    return this.load(hash);
  }

  private refuseBlocked(client: string): void {
    const until = this.blocked.get(client);
    if (until === undefined) return;
    const waitMs = until - this.clock();
    if (waitMs <= 0) {
      this.blocked.delete(client);
      return;
    }
    throw tooManyFailures(waitMs);
  }

  /**
   * Counts an unknown key against its client address; the request that
   * goes over the limit, and uncached keys from that address until the
   * limiter allows again, get 429 instead of 401.
   */
  private async failedAuthentication(client: string): Promise<void> {
    const perMinute = this.opts.authFailuresPerMinute ?? 0;
    if (perMinute <= 0) return;
    const admission = await this.limiter.admit(`authfail:${client}`, [{ name: "auth_failures", count: perMinute, periodMs: 60_000 }]);
    if (admission.kind !== "decision" || admission.allowed) return;
    const waitMs = Math.max(1000, admission.retryAfterMs);
    this.blocked.set(client, this.clock() + waitMs);
    // Bounded: an attacker spreading over many addresses must not grow it without end.
    if (this.blocked.size > 100_000) this.blocked.delete(this.blocked.keys().next().value!);
    this.opts.log.warn({ client, retryAfterMs: waitMs }, "too many unknown API keys from one address");
    throw tooManyFailures(waitMs);
  }

  /**
   * Reads the key, then its generation, then the key again: any change whose
   * generation bump we observed committed before the second read, so the
   * cached pair is never older than its generation says.
   */
  private async load(hash: string, cache = true): Promise<CachedKey | null> {
    const first = await this.row(hash);
    if (!first) return null;
    const generation = await this.limiter.generation(keyFence(first.account_id, first.id));
    const row = await this.row(hash);
    if (!row || !hashesEqual(row.key_hash, hash)) return null;
    const entry: CachedKey = {
      hash,
      keyId: row.id,
      accountId: row.account_id,
      permissions: new Set(row.permissions),
      expiresAtMs: row.expires_at ? row.expires_at.getTime() : null,
      revoked: row.revoked_at !== null,
      limits: [
        { name: "minute", count: row.requests_per_minute, periodMs: 60_000 },
        { name: "day", count: row.requests_per_day, periodMs: 86_400_000 },
      ],
      account: {
        id: row.account_id,
        email: row.email,
        name: row.name,
        plan: row.plan,
        createdAt: row.created_at,
        requestsPerMinute: row.requests_per_minute,
        requestsPerDay: row.requests_per_day,
      },
      generation,
      cachedAtMs: this.clock(),
    };
    if (cache && this.opts.cacheTtlMs > 0 && this.opts.cacheSize > 0) {
      this.cache.delete(hash);
      this.cache.set(hash, entry);
      // Map keeps insertion order: the first key is the oldest entry.
      while (this.cache.size > this.opts.cacheSize) this.cache.delete(this.cache.keys().next().value!);
    }
    return entry;
  }

  private row(hash: string) {
    return this.db
      .selectFrom("api_keys")
      .innerJoin("accounts", "accounts.id", "api_keys.account_id")
      .select([
        "api_keys.id",
        "api_keys.account_id",
        "api_keys.key_hash",
        "api_keys.permissions",
        "api_keys.expires_at",
        "api_keys.revoked_at",
        "accounts.requests_per_minute",
        "accounts.requests_per_day",
        "accounts.email",
        "accounts.name",
        "accounts.plan",
        "accounts.created_at",
      ])
      .where("api_keys.key_hash", "=", hash)
      .executeTakeFirst();
  }
}

function unauthorized(message: string): FolioError {
  return new FolioError("invalid_api_key", message);
}

function tooManyFailures(waitMs: number): FolioError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new FolioError("rate_limit_exceeded", `too many invalid API keys from this address; retry after ${seconds} s`, {
    retryable: true,
    headers: { "retry-after": String(seconds) },
    extra: { retry_after_seconds: seconds },
  });
}
