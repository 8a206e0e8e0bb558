/**
 * An office document as a durable job (docs/jobs.md): the conversion service
 * in real runsc sandboxes converts it once to a PDF, in the worker that
 * claims its conversion range; its pages are then rendered from that PDF
 * and read like a PDF's. The conversion service here renders at most one
 * page (FOLIO_CONVERSION_MAX_PAGES=1), which binds /v1/convert and
 * synchronous reads, not a job. Private database, so no other file's worker
 * takes the job.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import { describe, expect, it, vi } from "vitest";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { zip } from "../internal/documents/testdata.ts";
import { call, jobsStack } from "./harness.ts";

const DOCX = readFileSync(join(import.meta.dirname, "fixtures", "convert", "two-pages.docx"));

/** The parts of a one-page DOCX, for a package laid out by hand. */
const TYPES =
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
  `<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
  `<Default Extension="bin" ContentType="application/octet-stream"/>` +
  `<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`;
const RELS =
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  `<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`;
const BODY =
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
  `<w:p><w:r><w:rPr><w:sz w:val="32"/></w:rPr><w:t>The quick brown fox jumps over the lazy dog.</w:t></w:r></w:p></w:body></w:document>`;

const stack = jobsStack("jobs_office", {
  conversion: { FOLIO_SANDBOX: "runsc", FOLIO_CONVERSION_CONCURRENCY: "1", FOLIO_CONVERSION_MAX_PAGES: "1" },
  timeoutMs: 180_000,
});

describe("an office document as a durable job", () => {
  it("is converted once, its pages counted and read; the conversion is its own component, charged once; the hold is set from the pages", async () => {
    const made = await adminCreateAccount({ db: stack.database.db }, { email: `office-${process.pid}@test.invalid`, name: "office", creditsCents: 50, requestsPerMinute: 1000 });
    const key = made.api_key.key;
    const created = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: DOCX.toString("base64"), model: "local/tesseract", metadata: { kind: "docx" } });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    // Pages are known once converted.
    expect(created.body).toMatchObject({ page_count: null, status: "queued" });
    const id = created.body.id as string;
    await vi.waitFor(async () => expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe("succeeded"), { timeout: 150_000, interval: 250 });
    const job = (await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body;
    expect(job).toMatchObject({ page_count: 2, pages_completed: 2, pages_failed: 0, metadata: { kind: "docx" } });
    // Two tesseract pages (0.1 + 0.1 cents → 1 cent) plus the conversion (1 cent minimum): what /v1/ocr charges for it.
    expect(job.usage.total_cost_cents).toBe(2);
    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${id}/result`, key);
    expect(result.body.result.pages.map((p: { page_number: number }) => p.page_number)).toEqual([1, 2]);
    expect(result.body.result.text).toMatch(/quick brown fox/i);
    const ledger = await stack.database.db.selectFrom("ledger_entries").select(["amount_cents", "description"]).where("request_id", "=", id).execute();
    expect(ledger.filter((l) => /conversion/.test(l.description ?? ""))).toHaveLength(1);
    expect(-ledger.reduce((n, l) => n + Number(l.amount_cents), 0)).toBe(2);
    const account = await stack.database.db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", made.account.id).executeTakeFirstOrThrow();
    expect({ balance: Number(account.balance_cents), held: Number(account.held_cents) }).toEqual({ balance: 48, held: 0 });
    // Its PDF became the job's document, and went with the job's end; no page image was kept.
    const row = await stack.database.db.selectFrom("ocr_jobs").select("request").where("id", "=", id).executeTakeFirstOrThrow();
    expect(row.request).toMatchObject({ kind: "pdf", converted: true, mime_type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document" });
    for (const table of ["ocr_job_chunks", "ocr_job_images"] as const) {
      const left = await stack.database.db.selectFrom(table).select(sql<string>`count(*)`.as("n")).where("job_id", "=", id).executeTakeFirstOrThrow();
      expect(Number(left.n), table).toBe(0);
    }
  }, 180_000);

  it("reads a page selection of the converted document; a selection past its end fails the job with the conversion charged", async () => {
    const made = await adminCreateAccount({ db: stack.database.db }, { email: `office-pages-${process.pid}@test.invalid`, name: "office", creditsCents: 50, requestsPerMinute: 1000 });
    const key = made.api_key.key;
    const second = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: DOCX.toString("base64"), model: "local/tesseract", pages: "2" });
    const beyond = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: DOCX.toString("base64"), model: "local/tesseract", pages: "3-4" });
    expect([second.status, beyond.status], JSON.stringify([second.body, beyond.body])).toEqual([202, 202]);
    const ended = (id: string) => vi.waitFor(async () => {
      const job = (await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body;
      expect(job.status).toMatch(/^(succeeded|failed)$/);
      return job;
    }, { timeout: 150_000, interval: 250 });
    const read = await ended(second.body.id as string);
    expect(read).toMatchObject({ status: "succeeded", page_count: 1, pages_completed: 1 });
    const pages = await call(stack.edge, "GET", `/v1/ocr/jobs/${read.id}/pages`, key);
    expect(pages.body.data.map((p: { page_number: number }) => p.page_number)).toEqual([2]);
    const failed = await ended(beyond.body.id as string);
    expect(failed).toMatchObject({ status: "failed", error: { code: "invalid_request" } });
    expect(failed.error.message).toMatch(/2 pages/);
    // Page 2 (0.1 cent) and two conversions (1 cent each), as whole cents per job: 2 + 1.
    expect(read.usage.total_cost_cents + failed.usage.total_cost_cents).toBe(3);
    const account = await stack.database.db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", made.account.id).executeTakeFirstOrThrow();
    expect({ balance: Number(account.balance_cents), held: Number(account.held_cents) }).toEqual({ balance: 47, held: 0 });
  }, 300_000);

  it("takes a multipart DOCX of 5 MB that names itself only at its end (as LibreOffice writes one), and reads it", async () => {
    const made = await adminCreateAccount({ db: stack.database.db }, { email: `office-late-${process.pid}@test.invalid`, name: "office", creditsCents: 50, requestsPerMinute: 1000 });
    // Its first 4 MiB (what the edge sniffs of an upload) hold no [Content_Types].xml: a padding part comes first.
    const docx = zip([
      { name: "_rels/.rels", data: RELS, deflate: true },
      { name: "word/document.xml", data: BODY, deflate: true },
      { name: "word/media/padding.bin", data: randomBytes(5 * 1024 * 1024) },
      { name: "[Content_Types].xml", data: TYPES, deflate: true },
    ]);
    const form = new FormData();
    form.set("file", new Blob([docx]), "late.docx");
    form.set("model", "local/tesseract");
    const res = await fetch(`${stack.edge.url}/v1/ocr/jobs`, { method: "POST", headers: { authorization: `Bearer ${made.api_key.key}` }, body: form });
    const created = (await res.json()) as { id: string };
    expect(res.status, JSON.stringify(created)).toBe(202);
    await vi.waitFor(async () => expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${created.id}`, made.api_key.key)).body.status).toBe("succeeded"), { timeout: 150_000, interval: 250 });
    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${created.id}/result`, made.api_key.key);
    expect(result.body.result.text).toMatch(/quick brown fox/i);
  }, 180_000);

  it("fails a document that cannot be converted with the conversion's code, charging nothing", async () => {
    const made = await adminCreateAccount({ db: stack.database.db }, { email: `office-bad-${process.pid}@test.invalid`, name: "office", creditsCents: 50, requestsPerMinute: 1000 });
    const key = made.api_key.key;
    const encrypted = readFileSync(join(import.meta.dirname, "fixtures", "convert", "password.odt"));
    const created = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: encrypted.toString("base64"), model: "local/tesseract" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;
    await vi.waitFor(async () => expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe("failed"), { timeout: 150_000, interval: 250 });
    const job = (await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body;
    expect(job.error.code).toMatch(/^(conversion_failed|invalid_request|unsupported_format)$/);
    const account = await stack.database.db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", made.account.id).executeTakeFirstOrThrow();
    expect({ balance: Number(account.balance_cents), held: Number(account.held_cents) }).toEqual({ balance: 50, held: 0 });
  }, 180_000);
});
