/**
 * Durable jobs on the embedded database of `folio dev` (PGlite): the same
 * queue and money, with the documents kept as files in the data folder
 * instead of in PGlite (internal/jobs/blobs.ts: PGlite's memory never
 * shrinks), moved there from the upload, read by the worker where they lie,
 * and deleted by the sweep once the job has ended. An office document's PDF
 * (converted in a real runsc sandbox) is kept there beside it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ensureDevAccount } from "../internal/cli/run/index.ts";
import { startEdge, type RunningEdge } from "../internal/edge/index.ts";
import type { RunningConversion } from "../internal/conversion/index.ts";
import type { RunningExtraction } from "../internal/extraction/index.ts";
import { jobDocumentStore, sweepDocuments } from "../internal/jobs/index.ts";
import { startWorker, type RunningWorker } from "../internal/jobs/service.ts";
import { edgeSchema, parseConfig, workerSchema } from "../internal/platform/config/index.ts";
import { migrateToLatest, openDatabase, type DatabaseHandle } from "../internal/platform/db/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { cer } from "./cer.ts";
import { call, startTestConversion, startTestExtraction } from "./harness.ts";
import { closeAll } from "./support.ts";

const FIXTURES = join(import.meta.dirname, "fixtures", "ocr");
const PDF = readFileSync(join(FIXTURES, "ten-pages.pdf"));

let dir: string;
/** A job's status is polled this often (see the first test). */
const POLL_MS = 1_500;

let database: DatabaseHandle;
let extraction: RunningExtraction;
let conversion: RunningConversion;
let edge: RunningEdge;
let worker: RunningWorker | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "folio-jobs-pglite-"));
  database = await openDatabase({ dataDir: dir });
  await migrateToLatest(database.db);
  extraction = await startTestExtraction();
  conversion = await startTestConversion({ FOLIO_SANDBOX: "runsc", FOLIO_CONVERSION_CONCURRENCY: "1" });
  const env = {
    FOLIO_DATA_DIR: dir,
    FOLIO_EXTRACTION_ADDRESS: extraction.grpc.address,
    FOLIO_CONVERSION_ADDRESS: conversion.grpc.address,
    FOLIO_METRICS_ENABLED: "false",
    LOG_LEVEL: "silent",
  };
  edge = await startEdge({ config: parseConfig(edgeSchema, { ...env, FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_HTTP_PORT: "0" }), log: createLogger("silent"), database });
  worker = await startWorker({ config: parseConfig(workerSchema, { ...env, FOLIO_WORKER_POLL_SECONDS: "0.1" }), log: createLogger("silent"), database });
}, 180_000);
afterAll(async () => {
  await closeAll(worker, edge, conversion, extraction, database);
  rmSync(dir, { recursive: true, force: true });
});

describe("durable jobs on embedded PGlite", () => {
  it("keeps the document as a file in the data folder, not in the database, reads the job, and sweeps the file once it ended", async () => {
    const key = readFileSync((await ensureDevAccount(database.db, dir)).keyFile, "utf8").trim();
    const form = new FormData();
    form.set("file", new Blob([PDF], { type: "application/pdf" }), "ten-pages.pdf");
    form.set("model", "local/tesseract");
    const res = await fetch(`${edge.url}/v1/ocr/jobs`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    const job = (await res.json()) as { id: string };
    expect(res.status, JSON.stringify(job)).toBe(202);
    const file = join(dir, "jobs", job.id);
    expect(readFileSync(file).equals(PDF), "the upload moved into the data folder, whole").toBe(true);
    const chunks = await database.db.selectFrom("ocr_job_chunks").select(sql<string>`count(*)`.as("n")).where("job_id", "=", job.id).executeTakeFirstOrThrow();
    expect(Number(chunks.n)).toBe(0);

    // Polled at most 40 times a minute: the dev account's plan allows 60 requests a minute, and a slow machine's job outlasts 12 s.
    await vi.waitFor(async () => expect((await call(edge, "GET", `/v1/ocr/jobs/${job.id}`, key)).body.status).toBe("succeeded"), { timeout: 120_000, interval: POLL_MS });
    const result = await call(edge, "GET", `/v1/ocr/jobs/${job.id}/result`, key);
    const pages = result.body.result.pages as { page_number: number; text: string }[];
    expect(pages).toHaveLength(10);
    for (const p of pages) expect(cer(p.text, readFileSync(join(FIXTURES, `ten-pages.page-${p.page_number}.txt`), "utf8"))).toBeLessThan(0.1);

    // The worker's sweep (each minute) deletes an ended job's file; called here rather than waited for.
    expect(await sweepDocuments(database.db, jobDocumentStore({ FOLIO_DATA_DIR: dir }))).toBe(1);
    expect(existsSync(file)).toBe(false);
    expect(readdirSync(join(dir, "jobs"))).toEqual([]);
  }, 150_000);

  it("keeps an office document's PDF beside it as a file, renders the pages from it, and sweeps both once the job ended", async () => {
    const key = readFileSync((await ensureDevAccount(database.db, dir)).keyFile, "utf8").trim();
    const docx = readFileSync(join(import.meta.dirname, "fixtures", "convert", "two-pages.docx"));
    const created = await call(edge, "POST", "/v1/ocr/jobs", key, { base64: docx.toString("base64"), model: "local/tesseract" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;
    const pdf = join(dir, "jobs", `${id}.pdf`);
    // Seen while the job runs: the conversion wrote it before the pages were queued.
    await vi.waitFor(() => expect(existsSync(pdf) && readFileSync(pdf).subarray(0, 5).toString("latin1")).toBe("%PDF-"), { timeout: 120_000, interval: 50 });
    await vi.waitFor(async () => expect((await call(edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe("succeeded"), { timeout: 120_000, interval: POLL_MS });
    const result = await call(edge, "GET", `/v1/ocr/jobs/${id}/result`, key);
    expect(result.body.result.pages.map((p: { page_number: number }) => p.page_number)).toEqual([1, 2]);
    expect(result.body.result.text).toMatch(/quick brown fox/i);
    expect(readdirSync(join(dir, "jobs")).sort()).toEqual([id, `${id}.pdf`]);
    expect(await sweepDocuments(database.db, jobDocumentStore({ FOLIO_DATA_DIR: dir }))).toBe(2);
    expect(readdirSync(join(dir, "jobs"))).toEqual([]);
  }, 180_000);
});
