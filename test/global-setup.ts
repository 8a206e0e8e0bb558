/**
 * Creates one fresh Postgres database per test run (migrated to the latest
 * schema) on the server named by DATABASE_URL, and drops it afterwards.
 * `make test` provides DATABASE_URL and REDIS_URL (scripts/test-services.sh).
 */
import type { TestProject } from "vitest/node";
import pg from "pg";
import { Kysely, PostgresDialect } from "kysely";
import { migrateToLatest } from "../internal/platform/db/index.ts";
import type { Database } from "../internal/platform/db/schema.ts";

declare module "vitest" {
  export interface ProvidedContext {
    databaseUrl: string;
    redisUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const base = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!base || !redisUrl) {
    throw new Error("DATABASE_URL and REDIS_URL must point at a Postgres and a Redis server: run the suite with `make test`");
  }
  const name = `folio_test_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();

  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: databaseUrl, max: 1 }) }) });
  await migrateToLatest(db);
  await db.destroy();

  project.provide("databaseUrl", databaseUrl);
  project.provide("redisUrl", redisUrl);

  return async () => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.end();
  };
}
