/**
 * Admission control: per-subject rate limits (GCRA, several windows checked
 * and consumed atomically) plus an optional "fence" - a generation token
 * that must still hold the expected value for the request to be admitted.
 * The edge uses the fence to learn, in the same round trip, that a cached
 * API key was revoked or changed on another replica.
 */
import { randomInt } from "node:crypto";

export interface Limit {
  /** Short name for headers and metrics ("minute", "day"). */
  name: string;
  /** Requests allowed per period. */
  count: number;
  periodMs: number;
}

export interface Fence {
  key: string;
  generation: number;
}

export interface LimitState {
  name: string;
  count: number;
  periodMs: number;
  remaining: number;
  /** Milliseconds until the window is fully replenished. */
  resetMs: number;
}

export type Admission =
  | { kind: "stale"; generation: number }
  | {
      kind: "decision";
      allowed: boolean;
      /** When denied: milliseconds until a retry can succeed. */
      retryAfterMs: number;
      limits: LimitState[];
      /** False when the fence could not be checked (shared store unreachable). */
      fenceChecked: boolean;
    };

export interface RateLimiter {
  /** Checks and, when allowed, consumes one request from every limit of `subject`. */
  admit(subject: string, limits: readonly Limit[], fence?: Fence): Promise<Admission>;
  /** Current generation of a fence key; -1 when it cannot be read. */
  generation(key: string): Promise<number>;
  /** Moves a fence key forward so every holder of the old generation goes stale. */
  bumpGeneration(key: string): Promise<void>;
  /** Throws when the backing store is unreachable (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Fence key for one API key; the hash tag keeps it in the account's cluster slot. */
/**
 * A new fence generation: random, from 1 to 2^48 (0 is a fence never moved),
 * so it differs from every generation a replica may have cached, even after
 * the store lost its data and forgot the old ones (redis.ts bumpGeneration).
 */
export function newGeneration(): number {
  return randomInt(1, 2 ** 48);
}

export function keyFence(accountId: string, keyId: string): string {
  return `folio:gen:{${accountId}}:${keyId}`;
}
