/**
 * Idempotency keys of paid requests (docs/idempotency.md), in Postgres: the
 * first request with a key claims it and runs; its final answer is kept for
 * 24 hours and replayed to retries; a retry with another request under the
 * same key is refused; a retry while the first runs is told to wait. When the
 * request was billed, the answer is written by {@link Billing.settle} in the
 * transaction of the usage row and the debit, so no charge exists without
 * its answer.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Database, DB } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { giveBack } from "./give-back.ts";

/** A key this request holds: only it may complete or release the key. */
export interface IdempotencyClaim {
  accountId: string;
  key: string;
  owner: string;
  /** Set once the answer is stored (or the key released): nothing more to do. */
  finished: boolean;
  /** The answer stored for the key, once it is: the error handler sends these same bytes. */
  answer?: StoredAnswer;
}

export interface StoredAnswer {
  status: number;
  /** JSON text, as sent. */
  body: string;
  requestId: string | null;
}

export type ClaimOutcome =
  | { kind: "run"; claim: IdempotencyClaim }
  | { kind: "replay"; answer: StoredAnswer }
  | { kind: "in_progress"; retryAfterSeconds: number }
  | { kind: "mismatch" };

export interface IdempotencyOptions {
  /** How long an answer is kept; default 24 h. */
  ttlMs?: number;
  /**
   * How long a running request holds its key before a retry may take it over
   * (its process is taken for dead). At least the hold's lifetime: a request
   * that died left a hold that expires unbilled by then.
   */
  leaseMs: number;
}

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export class IdempotencyStore {
  readonly #ttlMs: number;
  readonly #leaseMs: number;

  constructor(
    private readonly db: DB,
    opts: IdempotencyOptions,
  ) {
    this.#ttlMs = opts.ttlMs ?? IDEMPOTENCY_TTL_MS;
    this.#leaseMs = opts.leaseMs;
  }

  /** Claims `key` for a request with `fingerprint`, or says what to answer instead. */
  async claim(accountId: string, key: string, fingerprint: string): Promise<ClaimOutcome> {
    const owner = randomBytes(12).toString("hex");
    try {
      return await this.#claim(accountId, key, fingerprint, owner);
    } catch (err) {
      // The claim may have been applied with its answer lost (a frozen database runs the INSERT it
      // was sent once it resumes; a connection cut after the commit): the key would stay running with
      // no request behind it, and every retry would get 409 until the lease ran out. Given back as
      // soon as the database answers; a claim that never happened is not there to delete.
      if (err instanceof FolioError && err.code === "service_unavailable") giveBack(() => this.release({ accountId, key, owner, finished: false }));
      throw err;
    }
  }

  async #claim(accountId: string, key: string, fingerprint: string, owner: string): Promise<ClaimOutcome> {
    const now = Date.now();
    const fresh = { fingerprint, status: "running" as const, owner, locked_until: new Date(now + this.#leaseMs), expires_at: new Date(now + this.#ttlMs) };
    const claim = (): ClaimOutcome => ({ kind: "run", claim: { accountId, key, owner, finished: false } });
    const inserted = await this.db
      .insertInto("idempotency_keys")
      .values({ account_id: accountId, key, ...fresh })
      .onConflict((oc) => oc.columns(["account_id", "key"]).doNothing())
      .returning("key")
      .executeTakeFirst();
    if (inserted) return claim();
    // An expired answer is forgotten; a running claim whose lease ran out belongs to a dead request.
    const taken = await this.db
      .updateTable("idempotency_keys")
      .set({ ...fresh, request_id: null, response_status: null, response_body: null, created_at: sql`now()` })
      .where("account_id", "=", accountId)
      .where("key", "=", key)
      .where((eb) =>
        eb.or([eb("expires_at", "<=", sql<Date>`now()`), eb.and([eb("status", "=", "running"), eb("locked_until", "<=", sql<Date>`now()`), eb("fingerprint", "=", fingerprint)])]),
      )
      .returning("key")
      .executeTakeFirst();
    if (taken) return claim();
    const row = await this.db
      .selectFrom("idempotency_keys")
      .select(["fingerprint", "status", "locked_until", "request_id", "response_status", "response_body"])
      .where("account_id", "=", accountId)
      .where("key", "=", key)
      .executeTakeFirst();
    // Deleted in between (the first request released it): claim again.
    if (!row) return this.claim(accountId, key, fingerprint);
    if (row.fingerprint !== fingerprint) return { kind: "mismatch" };
    if (row.status === "done" && row.response_status !== null && row.response_body !== null) {
      return { kind: "replay", answer: { status: row.response_status, body: row.response_body, requestId: row.request_id } };
    }
    const waitMs = new Date(row.locked_until).getTime() - now;
    return { kind: "in_progress", retryAfterSeconds: Math.max(1, Math.min(5, Math.ceil(waitMs / 1000))) };
  }

  /**
   * Stores the final answer, in `trx` when given (the settlement's
   * transaction: the caller marks the claim finished once it committed).
   */
  async complete(claim: IdempotencyClaim, answer: StoredAnswer, trx?: Kysely<Database>): Promise<void> {
    await (trx ?? this.db)
      .updateTable("idempotency_keys")
      .set({ status: "done", request_id: answer.requestId, response_status: answer.status, response_body: answer.body })
      .where("account_id", "=", claim.accountId)
      .where("key", "=", claim.key)
      .where("owner", "=", claim.owner)
      .execute();
    if (!trx) claim.finished = true;
  }

  /** Gives the key back (the answer is one a retry should not get: try again later, top up). */
  async release(claim: IdempotencyClaim): Promise<void> {
    await this.db
      .deleteFrom("idempotency_keys")
      .where("account_id", "=", claim.accountId)
      .where("key", "=", claim.key)
      .where("owner", "=", claim.owner)
      .where("status", "=", "running")
      .execute();
    claim.finished = true;
  }

  /** Forgets answers older than the TTL. Returns how many. */
  async sweep(): Promise<number> {
    const r = await this.db.deleteFrom("idempotency_keys").where("expires_at", "<=", sql<Date>`now()`).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}

/**
 * Whether a failed request's answer is kept for retries: a billed failure
 * always (a retry must not do and charge the work again); an unbilled one
 * when retrying cannot change it (a 4xx other than 402, 409 and 429). An
 * unbilled 5xx, 402 or 429 gives the key back so a retry runs.
 */
export function keepsFailure(status: number, chargedCents: number): boolean {
  if (chargedCents > 0) return true;
  return status >= 400 && status < 500 && status !== 402 && status !== 409 && status !== 429;
}
