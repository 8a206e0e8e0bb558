/**
 * Which database failures mean "Postgres cannot serve now" (DESIGN.md: a
 * dependency down is `503 service_unavailable` with `Retry-After`, never an
 * `internal_error`). The pool adapter (`pool.ts`) passes every error of the
 * driver through {@link databaseUnavailable}, so callers see a retryable
 * FolioError and the HTTP mapper needs no knowledge of `pg`.
 *
 * Everything not listed stays what it was (constraint violations, syntax
 * errors, serialization failures and deadlocks: Folio's transactions lock in
 * one order at read committed, so those are bugs) and becomes a 500.
 */
import { FolioError } from "../errors/index.ts";

/** What a client is told to wait before retrying when the database is down. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/**
 * SQLSTATE classes and codes of a server that cannot serve now (the
 * PostgreSQL manual, "Error Codes"), each with why it is not our bug.
 */
const UNAVAILABLE_CLASSES: Record<string, string> = {
  "08": "connection exception: the session could not be made or was lost",
  "53": "insufficient resources: too many connections, out of memory or disk",
  "57": "operator intervention: admin shutdown, crash, starting up, statement timeout (57014)",
  "58": "system error outside PostgreSQL (I/O)",
};
const UNAVAILABLE_CODES: Record<string, string> = {
  "25P03": "idle_in_transaction_session_timeout ended the session",
};

/** Node socket errors on the way to the database (a refused, reset or unreachable server). */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENOTCONN",
]);

/**
 * Messages of the `pg` driver and pool that carry no code (pg 8): a lost or
 * never-made connection, and the connect and read timeouts.
 */
const TIMEOUT_MESSAGES = [
  "timeout expired", // Client: connectionTimeoutMillis while opening a connection
  "timeout exceeded when trying to connect", // Pool: no free connection within connectionTimeoutMillis
  "Connection terminated due to connection timeout", // Pool: opening a connection timed out
  "Query read timeout", // Client: query_timeout, no answer at all (a frozen server)
];
const LOST_MESSAGES = [
  "Connection terminated", // also "… unexpectedly": the server (or PGlite's socket) went away
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
  "Cannot use a pool after calling end on the pool", // shutting down
];

export type UnavailableReason = "timeout" | "unavailable";

/** Why `err` means the database cannot serve now, or undefined when it does not. */
export function unavailableReason(err: unknown, depth = 0): UnavailableReason | undefined {
  if (depth > 4 || typeof err !== "object" || err === null) return undefined;
  if (err instanceof FolioError) return undefined; // already classified where it was raised
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === "string") {
    if (code === "57014" || code === "ETIMEDOUT") return "timeout";
    if (/^[0-9A-Z]{5}$/.test(code) && (Object.hasOwn(UNAVAILABLE_CODES, code) || Object.hasOwn(UNAVAILABLE_CLASSES, code.slice(0, 2)))) return "unavailable";
    if (NETWORK_CODES.has(code)) return "unavailable";
  }
  if (typeof message === "string") {
    if (TIMEOUT_MESSAGES.some((m) => message.startsWith(m))) return "timeout";
    if (LOST_MESSAGES.some((m) => message.startsWith(m))) return "unavailable";
  }
  // Node wraps a failed connect to several addresses in an AggregateError.
  if (err instanceof AggregateError) {
    for (const e of err.errors) {
      const reason = unavailableReason(e, depth + 1);
      if (reason) return reason;
    }
  }
  return unavailableReason((err as { cause?: unknown }).cause, depth + 1);
}

/**
 * The retryable 503 for an error that means the database cannot serve now;
 * undefined for any other error (the caller rethrows it unchanged).
 */
export function databaseUnavailable(err: unknown): FolioError | undefined {
  if (err instanceof FolioError) return undefined;
  const reason = unavailableReason(err);
  if (!reason) return undefined;
  const message = reason === "timeout" ? "the database did not answer in time; retry shortly" : "the database is unavailable; retry shortly";
  return new FolioError("service_unavailable", message, {
    retryable: true,
    headers: { "retry-after": String(DATABASE_RETRY_AFTER_SECONDS) },
    cause: err,
  });
}
