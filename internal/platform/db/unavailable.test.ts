/**
 * The classifier of database failures: which errors mean "Postgres cannot
 * serve now" (503 service_unavailable with Retry-After) and which stay what
 * they are (a 500: a bug). The errors are real where Postgres can produce
 * them here; the driver's messages are what pg 8 throws.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { FolioError } from "../errors/index.ts";
import { DATABASE_RETRY_AFTER_SECONDS, databaseUnavailable, unavailableReason } from "./unavailable.ts";
import { databaseUrl } from "../../../test/harness.ts";
import { closedPort, frozenListener, viaPort, type Fault } from "../../../test/faults.ts";

/** What `fn` rejects with (it must reject). */
async function caught(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

const describeErr = (err: unknown) => {
  const e = err as { code?: string; message?: string; cause?: { message?: string } };
  return `${e.code ?? "(no code)"} ${e.message ?? String(err)}${e.cause?.message ? ` (cause: ${e.cause.message})` : ""}`;
};

async function client(config: pg.ClientConfig = {}): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: databaseUrl(), ...config });
  c.on("error", () => {});
  await c.connect();
  return c;
}

describe("real Postgres failures that are 503", () => {
  let frozen: Fault;
  beforeAll(async () => {
    frozen = await frozenListener();
  });
  afterAll(async () => frozen?.close());

  it("a statement over statement_timeout (57014) is a timeout", async () => {
    const c = await client({ statement_timeout: 50 });
    try {
      const err = await caught(() => c.query("select pg_sleep(2)"));
      expect((err as { code?: string }).code, describeErr(err)).toBe("57014");
      expect(unavailableReason(err), describeErr(err)).toBe("timeout");
    } finally {
      await c.end();
    }
  });

  it("a session ended by pg_terminate_backend (57P01, 'terminating connection due to administrator command')", async () => {
    const victim = await client();
    const admin = await client();
    try {
      const pid = (await victim.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid;
      const sleeping = caught(() => victim.query("select pg_sleep(5)"));
      await new Promise((r) => setTimeout(r, 100));
      await admin.query("select pg_terminate_backend($1)", [pid]);
      const err = await sleeping;
      expect((err as { code?: string }).code, describeErr(err)).toBe("57P01");
      expect(unavailableReason(err), describeErr(err)).toBe("unavailable");
      // The dead client's next query fails too, and is just as unavailable.
      const next = await caught(() => victim.query("select 1"));
      expect(unavailableReason(next), describeErr(next)).toBe("unavailable");
    } finally {
      await admin.end();
      await victim.end().catch(() => {});
    }
  });

  it("a session ended by idle_in_transaction_session_timeout (25P03)", async () => {
    const c = await client({ idle_in_transaction_session_timeout: 100 });
    try {
      await c.query("begin");
      await new Promise((r) => setTimeout(r, 400));
      const err = await caught(() => c.query("select 1"));
      expect(unavailableReason(err), describeErr(err)).toBe("unavailable");
    } finally {
      await c.end().catch(() => {});
    }
  });

  it("a refused connection (ECONNREFUSED)", async () => {
    const c = new pg.Client({ connectionString: viaPort(databaseUrl(), await closedPort()) });
    const err = await caught(() => c.connect());
    expect(unavailableReason(err), describeErr(err)).toBe("unavailable");
  });

  it("a connection that is never answered, past connectionTimeoutMillis", async () => {
    const c = new pg.Client({ connectionString: viaPort(databaseUrl(), frozen.port), connectionTimeoutMillis: 100 });
    const err = await caught(() => c.connect());
    expect(unavailableReason(err), describeErr(err)).toBe("timeout");
  });

  it("a pool connection never answered, and a full pool's wait, past connectionTimeoutMillis", async () => {
    const frozenPool = new pg.Pool({ connectionString: viaPort(databaseUrl(), frozen.port), connectionTimeoutMillis: 100 });
    const opened = await caught(() => frozenPool.connect());
    expect(unavailableReason(opened), describeErr(opened)).toBe("timeout");
    await frozenPool.end();

    const full = new pg.Pool({ connectionString: databaseUrl(), max: 1, connectionTimeoutMillis: 100 });
    const held = await full.connect();
    try {
      const waited = await caught(() => full.connect());
      expect(unavailableReason(waited), describeErr(waited)).toBe("timeout");
    } finally {
      held.release();
      await full.end();
    }
  });

  it("a query never answered, past query_timeout", async () => {
    // Warm the connection on the real server, then ask what cannot answer in time.
    const c = await client({ query_timeout: 100 });
    try {
      const err = await caught(() => c.query("select pg_sleep(2)"));
      expect(unavailableReason(err), describeErr(err)).toBe("timeout");
    } finally {
      await c.end().catch(() => {});
    }
  });

  it("the server (or PGlite's socket) closing the connection", async () => {
    for (const message of ["Connection terminated unexpectedly", "Connection terminated", "Client has encountered a connection error and is not queryable", "Client was closed and is not queryable"]) {
      expect(unavailableReason(new Error(message)), message).toBe("unavailable");
    }
  });
});

describe("errors that stay what they are (500 unless mapped elsewhere)", () => {
  it("constraint violations, syntax errors and bad input from a real server", async () => {
    const c = await client();
    try {
      await c.query("create temporary table t (id int primary key)");
      await c.query("insert into t values (1)");
      for (const [sql, code] of [
        ["insert into t values (1)", "23505"],
        ["selec 1", "42601"],
        ["select 'x'::int", "22P02"],
        ["select * from no_such_table", "42P01"],
      ] as const) {
        const err = await caught(() => c.query(sql));
        expect((err as { code?: string }).code, describeErr(err)).toBe(code);
        expect(unavailableReason(err), describeErr(err)).toBeUndefined();
        expect(databaseUnavailable(err), describeErr(err)).toBeUndefined();
      }
    } finally {
      await c.end();
    }
  });

  it("serialization failures, deadlocks, credentials refused, a missing database, plain bugs", () => {
    for (const code of ["40001", "40P01", "28P01", "28000", "3D000", "XX000", "0A000"]) {
      expect(unavailableReason(Object.assign(new Error("x"), { code })), code).toBeUndefined();
    }
    for (const err of [new TypeError("cannot read properties of undefined"), new Error("boom"), null, undefined, "Connection terminated", 42]) {
      expect(unavailableReason(err), String(err)).toBeUndefined();
    }
  });

  it("a FolioError passes through untouched (it was classified where it was raised)", () => {
    expect(databaseUnavailable(new FolioError("service_unavailable", "x"))).toBeUndefined();
    expect(databaseUnavailable(new FolioError("invalid_request", "x"))).toBeUndefined();
  });
});

describe("databaseUnavailable", () => {
  it("wraps an unavailable database as a retryable 503 with Retry-After, keeping the cause", () => {
    const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const err = databaseUnavailable(cause);
    expect(err).toBeInstanceOf(FolioError);
    expect(err).toMatchObject({ code: "service_unavailable", retryable: true, headers: { "retry-after": String(DATABASE_RETRY_AFTER_SECONDS) } });
    expect(err!.message).toBe("the database is unavailable; retry shortly");
    expect(err!.cause).toBe(cause);
    expect(databaseUnavailable(new Error("Query read timeout"))!.message).toBe("the database did not answer in time; retry shortly");
  });

  it("finds the reason in a cause chain and in an AggregateError (a connect to several addresses)", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED ::1:5432"), { code: "ECONNREFUSED" });
    expect(unavailableReason(new AggregateError([refused], "connect failed"))).toBe("unavailable");
    expect(unavailableReason(new Error("wrapped", { cause: new Error("timeout expired") }))).toBe("timeout");
  });
});
