/**
 * Test helper for what keeps its state in the database and must work the
 * same on both databases Folio runs on (the jobs queue, the webhook outbox):
 * a suite declared once, run on each.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import { privateDatabase } from "../../test/harness.ts";
import { migrateToLatest, openDatabase, type DatabaseHandle, type DB } from "../platform/db/index.ts";

export type DatabaseName = "Postgres" | "PGlite";

/** The database a suite of {@link onBothDatabases} runs on, migrated: set before the suite's own `beforeAll` hooks run. */
export interface OpenedDatabase {
  handle: DatabaseHandle;
  db: DB;
}

/**
 * Declares `suite` as `title` (its `%s` the database's name) twice: on a
 * private Postgres database of the test server named `postgresName` (so no
 * other test's rows are in its queue) and on embedded PGlite in a folder of
 * its own, as `folio dev` runs it. Each is migrated before the suite's tests
 * and closed after them.
 */
export function onBothDatabases(title: string, postgresName: string, suite: (name: DatabaseName, opened: OpenedDatabase) => void): void {
  describe.each(["Postgres", "PGlite"] as const)(title, (name) => {
    const opened = {} as OpenedDatabase;
    let dataDir: string | undefined;
    // The run's hookTimeout (vitest.config.ts): on a loaded machine PGlite's start alone takes tens of seconds.
    beforeAll(async () => {
      if (name === "PGlite") dataDir = mkdtempSync(join(tmpdir(), `folio-${postgresName.replaceAll("_", "-")}-`));
      opened.handle = dataDir === undefined ? await privateDatabase(postgresName) : await openDatabase({ dataDir });
      opened.db = opened.handle.db;
      await migrateToLatest(opened.db);
    });
    afterAll(async () => {
      await opened.handle?.close();
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    });
    suite(name, opened);
  });
}
