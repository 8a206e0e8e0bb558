/**
 * The pool guard (pool.ts) on a real Postgres, through a proxy that can
 * freeze: driver failures reach callers as 503 service_unavailable, a
 * connection whose query went unanswered is dropped (and the transaction's
 * ROLLBACK behind it fails at once instead of waiting again), a connection
 * killed while checked out does not crash the process, and the pool serves
 * again once the server answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { openDatabase, type DatabaseHandle } from "./index.ts";
import { FolioError } from "../errors/index.ts";
import { databaseUrl } from "../../../test/harness.ts";
import { proxyFor, viaPort, type FreezableProxy } from "../../../test/faults.ts";

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

const STATEMENT_MS = 300;
const QUERY_MS = STATEMENT_MS + 500; // QUERY_TIMEOUT_GRACE_MS

describe("the guarded pool", () => {
  let proxy: FreezableProxy;
  let handle: DatabaseHandle;
  beforeAll(async () => {
    proxy = await proxyFor(databaseUrl(), 5432);
    handle = await openDatabase({
      databaseUrl: viaPort(databaseUrl(), proxy.port),
      poolSize: 1,
      timeouts: { connectMs: 1000, statementMs: STATEMENT_MS, idleInTransactionMs: 5000 },
    });
  });
  afterAll(async () => {
    proxy?.thaw();
    await handle?.close();
    await proxy?.close();
  });

  it("a statement over statement_timeout is a 503 and leaves the connection usable", async () => {
    const err = await rejection(sql`select pg_sleep(2)`.execute(handle.db));
    expect(err, String(err)).toBeInstanceOf(FolioError);
    expect(err).toMatchObject({ code: "service_unavailable", retryable: true, headers: { "retry-after": "2" } });
    expect((err as Error).message).toMatch(/did not answer in time/);
    expect((await sql<{ x: number }>`select 1 as x`.execute(handle.db)).rows).toEqual([{ x: 1 }]);
    expect(proxy.openConnections()).toBe(1);
  });

  it("a transaction frozen mid-way: one read timeout, not two; the connection is dropped; the pool recovers", async () => {
    await sql`select 1`.execute(handle.db);
    const started = performance.now();
    const err = await rejection(
      handle.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        proxy.freeze();
        await sql`select 2`.execute(trx);
      }),
    );
    const ms = performance.now() - started;
    try {
      expect(err, String(err)).toBeInstanceOf(FolioError);
      expect((err as FolioError).code).toBe("service_unavailable");
      // The read timeout, then a ROLLBACK that fails at once (not a second timeout).
      expect(ms).toBeGreaterThanOrEqual(QUERY_MS - 50);
      expect(ms).toBeLessThan(2 * QUERY_MS);
      // Dropped, not returned to the pool, even while the server is still frozen.
      await expect.poll(() => proxy.openConnections(), { timeout: 2000 }).toBe(0);
    } finally {
      proxy.thaw();
    }
    expect((await sql<{ x: number }>`select 3 as x`.execute(handle.db)).rows).toEqual([{ x: 3 }]);
  });

  it("a connection killed while checked out (between two queries of a transaction) rejects with 503 and does not crash the process", async () => {
    const admin = await openDatabase({ databaseUrl: databaseUrl(), poolSize: 1 });
    try {
      const err = await rejection(
        handle.db.transaction().execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          await sql`select pg_terminate_backend(${rows[0]!.pid})`.execute(admin.db);
          // The FATAL notice and the close arrive while no query is running on it.
          await new Promise((r) => setTimeout(r, 200));
          await sql`select 1`.execute(trx);
        }),
      );
      expect(err, String(err)).toBeInstanceOf(FolioError);
      expect((err as FolioError).code).toBe("service_unavailable");
    } finally {
      await admin.close();
    }
    expect((await sql<{ x: number }>`select 4 as x`.execute(handle.db)).rows).toEqual([{ x: 4 }]);
  });
});
