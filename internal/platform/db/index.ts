/**
 * Database access: Kysely over the `pg` driver, for a real Postgres
 * (DATABASE_URL) or for embedded PGlite served on a loopback socket, so the
 * same driver, migrations and queries run in both cases.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Kysely, Migrator, PostgresDialect, type MigrationResultSet } from "kysely";
import pg from "pg";
import type { Database } from "./schema.ts";
import { migrations } from "./migrations/index.ts";
import type { Logger } from "../log/index.ts";
import { guardedPool } from "./pool.ts";

export { DATABASE_RETRY_AFTER_SECONDS, databaseUnavailable, unavailableReason, type UnavailableReason } from "./unavailable.ts";
export type { Database } from "./schema.ts";
export type * from "./schema.ts";
export type DB = Kysely<Database>;

// int8 columns hold whole cents and counts, far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number.parseInt(v, 10));

export interface DatabaseHandle {
  db: DB;
  /** Where the data lives, for log lines (never contains a password). */
  description: string;
  /**
   * Calls `onNotify` with its payload at each NOTIFY on `channel` (any
   * process's, at its commit) over a connection of its own, until the
   * returned stop is called. A lost connection is made again; notifications
   * sent meanwhile are lost, so `onNotify` is called without a payload once
   * it is back, and a listener also looks on its own from time to time. On embedded
   * PGlite (one session, which sends every NOTIFY itself) the notification
   * comes back on the pool's one connection with the commit that sent it.
   */
  listen?(channel: string, onNotify: (payload?: string) => void): () => Promise<void>;
  close(): Promise<void>;
}

/**
 * How long a process waits on Postgres before answering 503 (DESIGN.md: a
 * dependency down or timed out). Absent, nothing is bounded: `folio migrate`
 * and `folio admin` may run statements as long as they need.
 */
export interface DatabaseTimeouts {
  /** Longest wait for a connection: opening one, or for a free one when the pool is full. */
  connectMs: number;
  /**
   * The server's `statement_timeout` for every session. The client waits
   * {@link QUERY_TIMEOUT_GRACE_MS} longer for any answer (pg's
   * `query_timeout`): past that the server is frozen or unreachable, and the
   * connection is dropped.
   */
  statementMs: number;
  /** The server's `idle_in_transaction_session_timeout`: a session stuck mid-transaction frees its locks. */
  idleInTransactionMs: number;
}

/** How much longer than `statement_timeout` the client waits, so the server's own cancel arrives first. */
export const QUERY_TIMEOUT_GRACE_MS = 500;

export interface OpenOptions {
  databaseUrl?: string | undefined;
  /** Folder for embedded PGlite data when no databaseUrl is given. */
  dataDir?: string;
  poolSize?: number;
  /** Bounds of every wait on a real Postgres (ignored by embedded PGlite, see openEmbedded). */
  timeouts?: DatabaseTimeouts;
  log?: Logger;
}

export async function openDatabase(opts: OpenOptions): Promise<DatabaseHandle> {
  if (opts.databaseUrl) {
    const t = opts.timeouts;
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: opts.poolSize ?? 10,
      // Notice a peer that vanished without closing (a host gone, a partition) on idle connections.
      keepAlive: true,
      ...(t && {
        connectionTimeoutMillis: t.connectMs,
        statement_timeout: t.statementMs,
        query_timeout: t.statementMs + QUERY_TIMEOUT_GRACE_MS,
        idle_in_transaction_session_timeout: t.idleInTransactionMs,
      }),
    });
    pool.on("error", (err) => opts.log?.error({ err }, "idle postgres connection failed"));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: guardedPool(pool) }) });
    const url = opts.databaseUrl;
    return {
      db,
      description: `postgres ${redactUrl(url)}`,
      listen: (channel, onNotify) => listenOn(url, channel, onNotify, opts.log, t?.connectMs),
      close: () => db.destroy(),
    };
  }
  if (!opts.dataDir) throw new Error("openDatabase: neither databaseUrl nor dataDir given");
  return openEmbedded(join(opts.dataDir, "pgdata"));
}

/** How long a listener waits before connecting again after losing its connection. */
const LISTEN_RECONNECT_MS = 2_000;

/** Channels are written into LISTEN as they are: only plain names. */
function plainChannel(channel: string): void {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a plain channel name: '${channel}'`);
}

function listenOn(url: string, channel: string, onNotify: (payload?: string) => void, log: Logger | undefined, connectMs: number | undefined): () => Promise<void> {
  plainChannel(channel);
  let stopped = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let warned = false;
  const connect = async () => {
    timer = undefined;
    if (stopped) return;
    const c = new pg.Client({ connectionString: url, keepAlive: true, ...(connectMs ? { connectionTimeoutMillis: connectMs } : {}) });
    client = c;
    const lost = (err?: unknown) => {
      if (client !== c) return;
      client = undefined;
      c.removeAllListeners("notification");
      void c.end().catch(() => undefined);
      if (stopped) return;
      if (!warned) log?.warn({ err, channel }, "lost the connection that listens for notifications; connecting again (polling meanwhile)");
      warned = true;
      timer = setTimeout(() => void connect(), LISTEN_RECONNECT_MS);
      timer.unref();
    };
    c.on("error", lost);
    c.on("end", () => lost());
    c.on("notification", (n) => n.channel === channel && onNotify(n.payload));
    try {
      await c.connect();
      await c.query(`listen ${channel}`);
      if (warned) log?.info({ channel }, "listening for notifications again");
      warned = false;
      // Whatever was notified while not listening: look now (no payload: anything may have changed).
      onNotify();
    } catch (err) {
      lost(err);
    }
  };
  void connect();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    const c = client;
    client = undefined;
    await c?.end().catch(() => undefined);
  };
}

async function openEmbedded(dir: string): Promise<DatabaseHandle> {
  mkdirSync(dir, { recursive: true });
  // The service image leaves PGlite out (deploy/docker/Dockerfile): there, only DATABASE_URL works.
  const embedded = await Promise.all([import("@electric-sql/pglite"), import("@electric-sql/pglite-socket")]).catch((err: unknown) => {
    throw new Error("configuration: DATABASE_URL: required here (the embedded database, PGlite, is not installed: the service image leaves it out)", { cause: err });
  });
  const [{ PGlite }, { PGLiteSocketServer }] = embedded;
  const lite = await PGlite.create(dir);
  const server = new PGLiteSocketServer({ db: lite, host: "127.0.0.1", port: 0 });
  await server.start();
  const address = server.getServerConn();
  // PGlite is one connection: a pool of one keeps transactions from interleaving.
  // No timeouts: it runs in this process, so it cannot freeze apart from it,
  // and waiting for its one connection is queueing, not an outage. Its errors
  // (the socket gone after close) are still classified by the guard.
  const pool = new pg.Pool({ connectionString: `postgres://postgres@${address}/postgres`, max: 1 });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: guardedPool(pool) }) });
  // LISTEN on the pool's connection (again on each new one): PGlite's one session is every writer, and
  // a session's own NOTIFY reaches it with its commit, so the listeners hear every notification at once.
  const listeners = new Map<string, Set<(payload?: string) => void>>();
  pool.on("connect", (client) => {
    client.on("notification", (n) => listeners.get(n.channel)?.forEach((f) => f(n.payload)));
    for (const channel of listeners.keys()) client.query(`listen ${channel}`).catch(() => undefined);
  });
  return {
    db,
    description: `embedded PGlite in ${dir}`,
    listen: (channel, onNotify) => {
      plainChannel(channel);
      let set = listeners.get(channel);
      if (!set) {
        listeners.set(channel, (set = new Set()));
        // A connection already open has not heard of the channel yet; a later one is told on connect.
        void pool.query(`listen ${channel}`).catch(() => undefined);
      }
      set.add(onNotify);
      return async () => void set.delete(onNotify);
    },
    close: async () => {
      await db.destroy();
      await server.stop();
      await lite.close();
    },
  };
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable url)";
  }
}

export async function migrateToLatest(db: DB): Promise<MigrationResultSet> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const result = await migrator.migrateToLatest();
  if (result.error) throw result.error;
  return result;
}

/** Runs `fn` in a transaction. */
export function transaction<T>(db: DB, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.transaction().execute(fn);
}
