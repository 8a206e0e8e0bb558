/**
 * The `pages` option end to end: edge → gRPC → conversion service → real
 * runsc sandboxes (LibreOffice, poppler), and PDFs rendered by the edge for
 * real tesseract, with billing and usage logs in real Postgres. The edge's
 * page limit is 4 here, so a five-page DOCX and a ten-page PDF are over it.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TesseractEngine } from "../internal/extraction/engines/tesseract.ts";
import { pagedDocx } from "../internal/sandbox/testdocs.ts";
import { balanceOf, call, createTestAccount, startStack, testDb, usageRows, type TestStack } from "./harness.ts";
import { cer } from "./cer.ts";

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const MAX_PAGES = 4;
const docx = pagedDocx(5);
const ocrFixture = (name: string) => readFileSync(new URL(`./fixtures/ocr/${name}`, import.meta.url));
const tenPages = ocrFixture("ten-pages.pdf");

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack({ edgeEnv: { FOLIO_MAX_PAGES: String(MAX_PAGES) }, conversion: { FOLIO_SANDBOX: "runsc", FOLIO_CONVERSION_CONCURRENCY: "1" } });
}, 180_000);
afterAll(async () => {
  await stack?.close();
});

/**
 * The "Page N" heading tesseract reads on a page image of {@link pagedDocx},
 * as "Page N" whatever case and spacing the font and the model give it
 * (the number is what tells pages apart); the whole text when there is none.
 */
async function heading(png: Buffer): Promise<string> {
  const r = await new TesseractEngine().extractPage({ pageNumber: 1, image: png, mimeType: "image/png" }, { extractTables: false, outputFormat: "text" }, new AbortController().signal);
  const n = /page\s*(\d+)/i.exec(r.text)?.[1];
  return n ? `Page ${n}` : r.text;
}

const convert = (key: string, body: Record<string, unknown>) =>
  call(stack.edge, "POST", "/v1/convert", key, { file: docx.toString("base64"), filename: "five-pages.docx", mimeType: DOCX, ...body });
const ocr = (key: string, body: Record<string, unknown>) => call(stack.edge, "POST", "/v1/ocr", key, { model: "local/tesseract", ...body });

describe("POST /v1/convert with pages", () => {
  it("converts only the selected pages of a five-page DOCX, each with its page number, billed and logged for them", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await convert(acc.adminKey, { pages: "5, 2-3" });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    const images = r.body.result.images as { page_number: number; base64: string }[];
    expect({ page_count: r.body.result.page_count, document_page_count: r.body.result.document_page_count, numbers: images.map((i) => i.page_number) }).toEqual({
      page_count: 3,
      document_page_count: 5,
      numbers: [2, 3, 5],
    });
    expect(await Promise.all(images.map((i) => heading(Buffer.from(i.base64, "base64"))))).toEqual(["Page 2", "Page 3", "Page 5"]);
    expect(r.body.usage.total_cost_cents).toBe(1);
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 49, held_cents: 0 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((u) => ({ id: u.id, status: u.status, pages: u.pages_processed, cost: u.cost_cents }))).toEqual([{ id: r.body.id, status: "success", pages: 3, cost: "1" }]);
  });

  it("a document over the page limit without pages: 400 invalid_request naming the limit and the option (as a PDF's), not charged", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await convert(acc.adminKey, {});
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({
      code: "invalid_request",
      max_pages: MAX_PAGES,
      message: `the document has 5 pages; at most ${MAX_PAGES} are processed per request: choose which with the "pages" option of /v1/ocr and /v1/convert (for example "pages": "1-${MAX_PAGES}")`,
    });
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 50, held_cents: 0 });
    expect((await usageRows(acc.accountId)).map((u) => [u.status, u.cost_cents])).toEqual([["error", "0"]]);
  });

  it("an open range over the limit, and a page beyond the end: 400 naming pages and the document's page count, not charged", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const open = await convert(acc.adminKey, { pages: "1-" });
    expect(open.status, JSON.stringify(open.body)).toBe(400);
    expect(open.body.error).toMatchObject({ code: "invalid_request", param: "pages", message: `"pages": "1-" selects 5 pages of the document's 5; at most ${MAX_PAGES} are processed per request` });
    const beyond = await convert(acc.adminKey, { pages: "2,7" });
    expect(beyond.status, JSON.stringify(beyond.body)).toBe(400);
    expect(beyond.body.error).toMatchObject({ code: "invalid_request", param: "pages", message: 'the document has 5 pages; "pages": "2,7" asks for page 7' });
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 50, held_cents: 0 });
  });

  it.each([
    ["1-5", `"pages": "1-5" selects 5 pages; at most ${MAX_PAGES} are processed per request`],
    ["0", `'pages' is not a page selection: "0": pages are numbered from 1`],
    ["3-1", `'pages' is not a page selection: "3-1" runs backwards; write 1-3`],
    ["1-3,2", `'pages' is not a page selection: page 2 is asked for twice ("1-3" and "2")`],
    ["", "'pages' is not a page selection: it is empty"],
    ["two", `'pages' is not a page selection: "two" is not a page or a range`],
  ])("refuses pages %j with a 400 naming the field, before any sandbox or hold", async (pages, message) => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await convert(acc.adminKey, { pages });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error.code).toBe("invalid_request");
    expect(r.body.error.param).toBe("pages");
    expect(r.body.error.message).toContain(message);
    expect(await usageRows(acc.accountId)).toEqual([]);
  });
});

describe("POST /v1/ocr with pages", () => {
  it("reads only the selected pages of a ten-page PDF, numbered as in the document, billed for them", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await ocr(acc.adminKey, { base64: tenPages.toString("base64"), pages: "9-,2" });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    const pages = r.body.result.pages as { page_number: number; text: string }[];
    expect(pages.map((p) => p.page_number)).toEqual([2, 9, 10]);
    for (const p of pages) expect(cer(p.text, ocrFixture(`ten-pages.page-${p.page_number}.txt`).toString("utf8")), p.text).toBeLessThan(0.08);
    // 3 pages × 0.1 cent + 5% = 0.315 cent → 1 cent.
    expect(r.body.usage).toMatchObject({ pages_processed: 3, total_cost_cents: 1 });
    expect(r.body.usage.provider_cost_cents).toBeCloseTo(0.3, 10);
    const rows = await usageRows(acc.accountId);
    expect(rows.map((u) => ({ status: u.status, pages: u.pages_processed, cost: u.cost_cents }))).toEqual([{ status: "success", pages: 3, cost: "1" }]);
    const { db } = await testDb();
    const ledger = await db.selectFrom("ledger_entries").selectAll().where("request_id", "=", r.body.id).execute();
    expect(ledger.map((l) => ({ kind: l.kind, amount: l.amount_cents }))).toEqual([{ kind: "debit", amount: -1 }]);
  });

  it("a PDF over the limit without pages: a 400 naming the limit and the option", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await ocr(acc.adminKey, { base64: tenPages.toString("base64") });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({
      code: "invalid_request",
      param: "base64",
      message: `the document has 10 pages; at most ${MAX_PAGES} are processed per request: choose which with the "pages" option of /v1/ocr and /v1/convert (for example "pages": "1-${MAX_PAGES}")`,
      page_count: 10,
      max_pages: MAX_PAGES,
    });
  });

  it("a page beyond a PDF's end: a 400 naming pages and the page count, nothing charged", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await ocr(acc.adminKey, { base64: tenPages.toString("base64"), pages: "10-12" });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "pages", message: 'the document has 10 pages; "pages": "10-12" asks for page 12', page_count: 10 });
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 50, held_cents: 0 });
  });

  it("reads only the selected page of an office document, converted with the selection", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await ocr(acc.adminKey, { base64: docx.toString("base64"), mime_type: DOCX, pages: "4" });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.result.pages.map((p: { page_number: number }) => p.page_number)).toEqual([4]);
    expect(r.body.result.text).toMatch(/page\s*4/i);
    expect(r.body.usage.pages_processed).toBe(1);
    expect((await usageRows(acc.accountId)).map((u) => u.pages_processed)).toEqual([1]);
  });

  it("an image is page 1: pages \"2\" is beyond its end", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await ocr(acc.adminKey, { base64: ocrFixture("english.png").toString("base64"), pages: "2" });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "pages", message: 'the document has 1 page; "pages": "2" asks for page 2' });
  });
});
