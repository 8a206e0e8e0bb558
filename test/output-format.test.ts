/**
 * `options.output_format` end to end with a local model (docs/ocr.md "Output
 * formats"): edge → gRPC → extraction service → real tesseract, and the same
 * through a durable job (a real jobs worker), on a Postgres database of this
 * file's own so no other file's worker takes its jobs. The page is
 * columns.png: a title, two columns of prose, a table, a page number.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { TABLE_ROWS } from "./fixtures/ocr/table-rows.ts";
import { call, jobsStack } from "./harness.ts";

const COLUMNS = readFileSync(join(import.meta.dirname, "fixtures", "ocr", "columns.png")).toString("base64");
const TITLE = "Annual Report of the Harbour Board";

const stack = jobsStack("output_format");

let uniq = 0;
async function key(): Promise<string> {
  const a = await adminCreateAccount({ db: stack.database.db }, { email: `format-${process.pid}-${++uniq}@test.invalid`, name: "format", creditsCents: 1_000, requestsPerMinute: 10_000 });
  return a.api_key.key;
}

type Page = { page_number: number; text: string; blocks?: { type: string; text: string; bbox: number[]; level?: number; cells?: string[][] }[]; layout?: { blocks: { type: string; text: string }[] } };

const ocr = async (k: string, options: Record<string, unknown>) => {
  const r = await call(stack.edge, "POST", "/v1/ocr", k, { base64: COLUMNS, model: "local/tesseract", options: { language: "en", ...options } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { result: { text: string; pages: Page[] } };
};

describe("POST /v1/ocr options.output_format with local/tesseract", () => {
  it("markdown: the page as GitHub markdown (title as #, the table as a GFM table), the page number left out of the text but kept in the layout", async () => {
    const k = await key();
    const { result } = await ocr(k, { output_format: "markdown", include_layout: true });
    const page = result.pages[0]!;
    expect(result.text).toBe(page.text);
    expect(page.text.startsWith(`# ${TITLE}\n\n`), page.text).toBe(true);
    expect(page.text, page.text).toContain(["| Item | Quantity | Unit price | Amount |", "| --- | --- | --- | --- |", "| Printer paper A4 | 12 | 4.50 | 54.00 |"].join("\n"));
    expect(page.text, page.text).not.toContain("Page 3");
    expect(page.blocks, "blocks come with json only").toBeUndefined();
    expect(page.layout?.blocks.find((b) => b.type === "footer")).toMatchObject({ text: "Page 3" });
  }, 60_000);

  it("json: the page's text as output_format text gives it, plus its blocks in reading order with boxes and the table's cells", async () => {
    const k = await key();
    const [plain, json] = await Promise.all([ocr(k, {}), ocr(k, { output_format: "json" })]);
    const page = json.result.pages[0]!;
    expect(page.text).toBe(plain.result.pages[0]!.text);
    expect(plain.result.pages[0]!.blocks, "text has no blocks").toBeUndefined();
    const blocks = page.blocks!;
    expect(blocks.map((b) => b.type), JSON.stringify(blocks)).toEqual(["heading", "paragraph", "paragraph", "paragraph", "paragraph", "table", "footer"]);
    expect(blocks[0]).toMatchObject({ type: "heading", level: 1, text: TITLE });
    expect(blocks[5]!.cells).toEqual(TABLE_ROWS);
    for (const b of blocks) expect(b.bbox, JSON.stringify(b)).toHaveLength(4);
  }, 60_000);

  it("documents the blocks with a JSON Schema in the OpenAPI document", async () => {
    const doc = await call(stack.edge, "GET", "/v1/openapi.json");
    const text = JSON.stringify(doc.body.paths["/v1/ocr"].post.responses["200"]);
    expect(text).toContain('"blocks"');
    for (const type of ["heading", "paragraph", "list_item", "table", "figure", "header", "footer"]) expect(text).toContain(`"${type}"`);
    expect(text).toContain('"cells"');
  });
});

describe("durable OCR jobs with options.output_format", () => {
  it("stores each page's blocks (json) and markdown text, read back by /pages and /result", async () => {
    const k = await key();
    const submit = async (output_format: string) => {
      const created = await call(stack.edge, "POST", "/v1/ocr/jobs", k, { base64: COLUMNS, model: "local/tesseract", options: { output_format, language: "en" } });
      expect(created.status, JSON.stringify(created.body)).toBe(202);
      const id = created.body.id as string;
      await vi.waitFor(async () => expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, k)).body.status).toBe("succeeded"), { timeout: 120_000, interval: 200 });
      return id;
    };
    const [json, markdown] = await Promise.all([submit("json"), submit("markdown")]);

    const pages = await call(stack.edge, "GET", `/v1/ocr/jobs/${json}/pages`, k);
    const blocks = (pages.body.data[0] as Page).blocks!;
    expect(blocks.map((b) => b.type), JSON.stringify(pages.body)).toEqual(["heading", "paragraph", "paragraph", "paragraph", "paragraph", "table", "footer"]);
    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${json}/result`, k);
    expect((result.body.result.pages[0] as Page).blocks).toEqual(blocks);

    const md = await call(stack.edge, "GET", `/v1/ocr/jobs/${markdown}/result`, k);
    expect(md.body.result.text.startsWith(`# ${TITLE}\n\n`), md.body.result.text).toBe(true);
    expect(md.body.result.text).toContain("| Item | Quantity | Unit price | Amount |");
  }, 180_000);
});
