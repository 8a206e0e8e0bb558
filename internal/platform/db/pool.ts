/**
 * The pool Kysely talks to: pg's pool behind Kysely's small pool interface,
 * so that every driver error meaning "the database cannot serve now" becomes
 * the retryable 503 where it is raised (`unavailable.ts`), and a connection
 * whose query got no answer at all is dropped instead of going back to the
 * pool.
 */
import type pg from "pg";
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from "kysely";
import { databaseUnavailable } from "./unavailable.ts";

export function guardedPool(pool: pg.Pool): PostgresPool {
  // One guard per pg client, so Kysely sees the same client object on every checkout.
  const guards = new WeakMap<pg.PoolClient, GuardedClient>();
  return {
    async connect() {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw databaseUnavailable(err) ?? err;
      }
      let guard = guards.get(client);
      if (!guard) {
        guard = new GuardedClient(client);
        guards.set(client, guard);
      }
      return guard;
    },
    end: () => pool.end(),
  };
}

class GuardedClient implements PostgresPoolClient {
  /**
   * Set when a query hit pg's `query_timeout`: pg still waits for that
   * query's answer on this connection (a frozen server, a partition), so
   * anything sent after it would wait too. It fails at once instead (the
   * ROLLBACK of the transaction it was in, say), and the connection is
   * destroyed on release.
   */
  #stuck: Error | undefined;

  constructor(private readonly client: pg.PoolClient) {
    // A connection that dies while checked out (the server restarted, PGlite's
    // socket closed) emits "error" on its client, where pg-pool listens only
    // while it is idle: unheard, that would crash the process. Its queries
    // are failed by pg and the pool drops it on release, so nothing else to do.
    client.on("error", () => {});
  }

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters: ReadonlyArray<unknown> = []): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Streaming (a cursor) is not configured on the dialect; pass it through unguarded should it ever be.
    if (typeof sqlOrCursor !== "string") return this.client.query(sqlOrCursor as never) as unknown as PostgresCursor<R>;
    if (this.#stuck) return Promise.reject(databaseUnavailable(this.#stuck) ?? this.#stuck);
    return this.client.query(sqlOrCursor, [...parameters]).then(
      (result) => result as unknown as PostgresQueryResult<R>,
      (err: unknown) => {
        if (err instanceof Error && err.message === "Query read timeout") this.#stuck = err;
        throw databaseUnavailable(err) ?? err;
      },
    );
  }

  release(): void {
    const stuck = this.#stuck;
    this.#stuck = undefined;
    // An error makes pg's pool end the connection rather than reuse it.
    this.client.release(stuck);
  }
}
