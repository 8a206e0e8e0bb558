/** The Kysely row types (via COLUMNS) and the migrated database agree, table by table. */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { COLUMNS } from "../internal/platform/db/schema.ts";
import { testDb } from "./harness.ts";

describe("database schema", () => {
  it("has exactly the columns the row types declare", async () => {
    const { db } = await testDb();
    const rows = await sql<{ table_name: string; column_name: string }>`
      select c.table_name, c.column_name from information_schema.columns c
      join pg_class t on t.relname = c.table_name and t.relnamespace = 'public'::regnamespace
      -- A partition of usage_logs (migration 0003) is usage_logs.
      where c.table_schema = 'public' and c.table_name not like 'kysely_%' and not t.relispartition`.execute(db);
    const live: Record<string, string[]> = {};
    for (const r of rows.rows) (live[r.table_name] ??= []).push(r.column_name);
    const declared = Object.fromEntries(Object.entries(COLUMNS).map(([t, cols]) => [t, Object.keys(cols).sort()]));
    for (const t of Object.keys(live)) live[t]!.sort();
    expect(live).toEqual(declared);
  });
});
