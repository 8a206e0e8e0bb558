/**
 * The embedded path: the same migrations and queries on PGlite served over
 * its socket to the `pg` driver, as `folio dev` runs them without DATABASE_URL.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startEdge, type RunningEdge } from "../internal/edge/index.ts";
import { edgeSchema, parseConfig } from "../internal/platform/config/index.ts";
import { migrateToLatest, openDatabase, type DatabaseHandle } from "../internal/platform/db/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { ensureDevAccount, DEV_CREDIT_CENTS } from "../internal/cli/run/index.ts";
import { Billing, chargeComponent } from "../internal/billing/index.ts";
import { UsagePartitions, exportUsage, listUsage, summarize } from "../internal/usage/index.ts";
import { call } from "./harness.ts";
import { readFileSync, statSync } from "node:fs";

let dir: string;
let database: DatabaseHandle;
let edge: RunningEdge;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "folio-pglite-"));
  database = await openDatabase({ dataDir: dir });
  await migrateToLatest(database.db);
  const config = parseConfig(edgeSchema, { FOLIO_DATA_DIR: dir, FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_HTTP_PORT: "0", FOLIO_METRICS_ENABLED: "false", LOG_LEVEL: "silent" });
  edge = await startEdge({ config, log: createLogger("silent"), database });
}, 60_000);

afterAll(async () => {
  await edge?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("embedded PGlite", () => {
  it("creates the dev account once, with 1000 cents and a 0600 admin key file that works", async () => {
    const first = await ensureDevAccount(database.db, dir);
    const again = await ensureDevAccount(database.db, dir);
    expect(again.accountId).toBe(first.accountId);
    expect(again.created).toBe(false);
    expect(statSync(first.keyFile).mode & 0o777).toBe(0o600);
    const key = readFileSync(first.keyFile, "utf8").trim();
    const bal = await call(edge, "GET", "/v1/account/balance", key);
    expect(bal.status, JSON.stringify(bal.body)).toBe(200);
    expect(bal.body.balance_cents).toBe(DEV_CREDIT_CENTS);
    const keys = await call(edge, "POST", "/v1/api-keys", key, { name: "from pglite" });
    expect(keys.status).toBe(200);
  });

  it("runs holds, settlement and the usage summary on the same queries", async () => {
    const dev = await ensureDevAccount(database.db, dir);
    const billing = new Billing(database.db);
    const hold = await billing.hold(dev.accountId, null, 5);
    const settled = await billing.settle(hold, {
      requestId: "req_pglitetest0000000001",
      endpoint: "/v1/ocr",
      model: "local/tesseract",
      status: "success",
      promptTokens: 10,
      completionTokens: 5,
      pagesProcessed: 1,
      processingTimeMs: 12,
      charge: chargeComponent("1.5"),
    });
    expect(settled.chargedCents).toBe(2);
    const s = await summarize(database.db, dev.accountId, 0, Math.floor(Date.now() / 1000) + 1, "day");
    expect(s.total_requests).toBe(1);
    expect(s.total_tokens_used).toBe(15);
    expect(s.cost.total_cents).toBe(2);
    expect(s.groups).toHaveLength(1);
  });

  it("keeps the usage partitions and rollups, pages by cursor and exports, as on Postgres", async () => {
    const dev = await ensureDevAccount(database.db, dir);
    const report = await new UsagePartitions(database.db, 0).upkeep(new Date(Date.now() + 400 * 86_400_000));
    expect(report.created).toHaveLength(3);
    const first = await listUsage(database.db, dev.accountId, { start: 0, end: Math.floor(Date.now() / 1000) + 1, limit: 1, offset: 0 });
    expect(first.total_count).toBe(1);
    const next = await listUsage(database.db, dev.accountId, { start: 0, end: Math.floor(Date.now() / 1000) + 1, limit: 1, offset: 0, startingAfter: first.data[0]!.id });
    expect(next.data).toEqual([]);
    let csv = "";
    for await (const chunk of exportUsage(database.db, dev.accountId, { start: 0, end: Math.floor(Date.now() / 1000) + 1 }, "csv")) csv += chunk;
    expect(csv.split("\r\n")[1]).toMatch(/^req_pglitetest0000000001,\d+,\/v1\/ocr,local\/tesseract,success,/);
  });
});

describe("notifications on embedded PGlite", () => {
  it("hears a NOTIFY at its commit, not before, and not after the listener stopped", async () => {
    const heard: string[] = [];
    const stop = database.listen!("folio_test_channel", () => heard.push("a"));
    const other = database.listen!("folio_test_other", () => heard.push("other"));
    await database.db.transaction().execute(async (trx) => {
      await sql`select pg_notify('folio_test_channel', '')`.execute(trx);
      await sql`select 1`.execute(trx);
      expect(heard, "nothing before the commit").toEqual([]);
    });
    await vi.waitFor(() => expect(heard).toEqual(["a"]), { timeout: 2_000, interval: 10 });
    // A rolled-back NOTIFY is never sent.
    await database.db
      .transaction()
      .execute(async (trx) => {
        await sql`select pg_notify('folio_test_channel', '')`.execute(trx);
        throw new Error("roll back");
      })
      .catch(() => undefined);
    await stop();
    await sql`select pg_notify('folio_test_channel', '')`.execute(database.db);
    await sql`select pg_notify('folio_test_other', '')`.execute(database.db);
    await vi.waitFor(() => expect(heard).toEqual(["a", "other"]), { timeout: 2_000, interval: 10 });
    await other();
  });
});
