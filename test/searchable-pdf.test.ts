/**
 * `options.searchable_pdf` end to end: edge → gRPC → extraction service →
 * real tesseract, and the answer's PDF read back with poppler (`pdftotext`,
 * `pdfinfo`), as a viewer would. The PDFs sent are scans (page images, no
 * text of their own), so whatever text poppler finds is the text layer.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PDFDocument, degrees } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rasterizePdf } from "../internal/documents/index.ts";
import { call, createTestAccount, upstreamStack } from "./harness.ts";
import { cer } from "./cer.ts";

const run = promisify(execFile);
const fixture = (name: string) => readFileSync(new URL(`./fixtures/ocr/${name}`, import.meta.url));
const text = (name: string) => fixture(name).toString("utf8");

const ctx = upstreamStack();
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "folio-searchable-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What poppler sees in a PDF (text in its physical layout, so a table reads by rows as the ground truth does): its pages' sizes (points, the CropBox before /Rotate), their /Rotate, and each page's text. */
async function poppler(pdf: Buffer): Promise<{ sizes: [number, number][]; turns: number[]; pages: string[] }> {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(path, pdf);
  const info = (await run("pdfinfo", ["-f", "1", "-l", "1000", path])).stdout;
  const sizes = [...info.matchAll(/^Page\s+\d+ size:\s+([\d.]+) x ([\d.]+) pts/gm)].map((m) => [Number(m[1]), Number(m[2])] as [number, number]);
  const turns = [...info.matchAll(/^Page\s+\d+ rot:\s+(\d+)/gm)].map((m) => Number(m[1]));
  const pages: string[] = [];
  for (let n = 1; n <= sizes.length; n++) pages.push((await run("pdftotext", ["-layout", "-f", String(n), "-l", String(n), path, "-"])).stdout);
  return { sizes, turns, pages };
}

/** Where poppler finds `word` on page 1 of a PDF: [xMin, yMin, xMax, yMax] in points of the page as shown. */
async function wordBox(pdf: Buffer, word: string): Promise<number[] | undefined> {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(path, pdf);
  const html = (await run("pdftotext", ["-bbox", "-f", "1", "-l", "1", path, "-"])).stdout;
  const m = new RegExp(`<word xMin="([\\d.]+)" yMin="([\\d.]+)" xMax="([\\d.]+)" yMax="([\\d.]+)">${word}</word>`).exec(html);
  return m ? m.slice(1).map(Number) : undefined;
}

/**
 * multipage.pdf as a scan: each page a 200-DPI image on a page of the
 * original's size, no text. `shape` turns a page (/Rotate) or moves its
 * image inside a larger MediaBox behind a CropBox that shows just the image.
 */
async function scannedMultipage(shape: (page: ReturnType<PDFDocument["getPage"]>, n: number) => void = () => {}): Promise<Buffer> {
  const original = fixture("multipage.pdf");
  const rendered = await rasterizePdf(original, { dpi: 200, maxPages: 10, timeoutMs: 60_000 });
  const source = await PDFDocument.load(original);
  const out = await PDFDocument.create();
  for (const [i, png] of rendered.pages.entries()) {
    const { width, height } = source.getPage(i).getSize();
    const page = out.addPage([width, height]);
    page.drawImage(await out.embedPng(png), { x: 0, y: 0, width, height });
    shape(page, i + 1);
  }
  return Buffer.from(await out.save());
}

const ocr = (key: string, body: Record<string, unknown>) => call(ctx.stack.edge, "POST", "/v1/ocr", key, { model: "local/tesseract", ...body });

describe("options.searchable_pdf on POST /v1/ocr", () => {
  it("an image becomes one page of its size at its resolution, whose text layer pdftotext reads; no layout unless asked", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await ocr(acc.adminKey, { base64: fixture("english.png").toString("base64"), options: { searchable_pdf: true } });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.result.pages[0].layout).toBeUndefined();
    expect(r.body.usage.total_cost_cents).toBe(1);
    const pdf = Buffer.from(r.body.result.searchable_pdf as string, "base64");
    const seen = await poppler(pdf);
    // english.png is 1654 × 2339 pixels at 200 DPI (its pHYs): A4.
    expect(seen.sizes.map(([w, h]) => [Math.round(w * 100) / 100, Math.round(h * 100) / 100])).toEqual([[595.44, 842.04]]);
    expect(cer(seen.pages[0]!, text("english.txt")), seen.pages[0]).toBeLessThan(0.05);
  });

  it("without the option, the answer has no searchable_pdf", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await ocr(acc.adminKey, { base64: fixture("english.png").toString("base64"), options: { searchable_pdf: false } });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(Object.keys(r.body.result).sort()).toEqual(["confidence", "pages", "tables", "text"]);
  });

  it("a scanned PDF keeps its own pages, only the selected ones in order, each with its text; layout only as asked", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const scan = await scannedMultipage();
    expect((await poppler(scan)).pages.join("").trim(), "the scan has no text of its own").toBe("");
    const r = await ocr(acc.adminKey, { base64: scan.toString("base64"), pages: "3,1", options: { searchable_pdf: true, include_layout: "blocks" } });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.result.pages.map((p: { page_number: number }) => p.page_number)).toEqual([1, 3]);
    const blocks = r.body.result.pages.flatMap((p: { layout: { blocks: { words?: unknown }[] } }) => p.layout.blocks);
    expect(blocks.length).toBeGreaterThan(0);
    expect(blocks.every((b: { words?: unknown }) => b.words === undefined)).toBe(true);
    const seen = await poppler(Buffer.from(r.body.result.searchable_pdf as string, "base64"));
    expect(seen.sizes).toEqual([
      [595.276, 841.89],
      [595.276, 841.89],
    ]);
    expect(cer(seen.pages[0]!, text("multipage.page-1.txt")), seen.pages[0]).toBeLessThan(0.05);
    expect(cer(seen.pages[1]!, text("multipage.page-3.txt")), seen.pages[1]).toBeLessThan(0.05);
  });

  it("meets issue 26's bounds on a scan: each page's pdftotext within CER 0.02 of its text, the pages' count and sizes kept, at most 1.1 × the PDF plus 20 KB a page", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const scan = await scannedMultipage();
    const sent = await poppler(scan);
    const r = await ocr(acc.adminKey, { base64: scan.toString("base64"), options: { searchable_pdf: true } });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    const pdf = Buffer.from(r.body.result.searchable_pdf as string, "base64");
    const seen = await poppler(pdf);
    expect(seen.sizes).toEqual(sent.sizes);
    expect(seen.turns).toEqual(sent.turns);
    const pages = r.body.result.pages as { page_number: number; text: string }[];
    expect(pages.map((p) => p.page_number)).toEqual(sent.sizes.map((_, i) => i + 1));
    const path = join(dir, "bounds.pdf");
    await writeFile(path, pdf);
    for (const p of pages) {
      // The text layer in the order it was written (line after line, as the page's text reads).
      const layer = (await run("pdftotext", ["-raw", "-f", String(p.page_number), "-l", String(p.page_number), path, "-"])).stdout;
      expect(p.text.trim().length, `page ${p.page_number} has text`).toBeGreaterThan(100);
      expect(cer(layer, p.text), `page ${p.page_number}: ${layer.slice(0, 300)}`).toBeLessThanOrEqual(0.02);
    }
    expect(pdf.length, `${pdf.length} bytes from ${scan.length}`).toBeLessThanOrEqual(1.1 * scan.length + 20_000 * pages.length);
  });

  it("turned pages (/Rotate 90, 180, 270) and a CropBox away from the origin: the text where the words are, reading as it should", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const turns = [90, 180, 270];
    const shape = (page: ReturnType<PDFDocument["getPage"]>, n: number) => {
      if (n === 3) {
        // The image moved inside a larger MediaBox; the CropBox shows just it.
        const { width, height } = page.getSize();
        page.setMediaBox(0, 0, width + 100, height + 50);
        page.translateContent(100, 50);
        page.setCropBox(100, 50, width, height);
      }
      page.setRotation(degrees(turns[n - 1]!));
    };
    const scan = await scannedMultipage(shape);
    const r = await ocr(acc.adminKey, { base64: scan.toString("base64"), options: { searchable_pdf: true } });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.result.pages.map((p: { rotation: number }) => p.rotation)).toEqual(turns);
    const pdf = Buffer.from(r.body.result.searchable_pdf as string, "base64");
    const seen = await poppler(pdf);
    expect(seen.turns).toEqual(turns);
    expect(seen.sizes).toEqual([
      [595.276, 841.89],
      [595.276, 841.89],
      [595.276, 841.89],
    ]);
    for (const [i, page] of seen.pages.entries()) expect(cer(page, text(`multipage.page-${i + 1}.txt`)), `page ${i + 1}: ${page}`).toBeLessThan(0.05);
    // The first page's title word lies where the original PDF, turned the same way, has it.
    const original = await PDFDocument.load(fixture("multipage.pdf"));
    original.getPage(0).setRotation(degrees(90));
    const expected = await wordBox(Buffer.from(await original.save()), "Shipping");
    const got = await wordBox(pdf, "Shipping");
    expect(got, `expected near ${String(expected)}`).toBeDefined();
    got!.forEach((v, i) => expect(Math.abs(v - expected![i]!), `box ${String(got)} vs ${String(expected)}`).toBeLessThan(8));
  });

  it("with an upstream model: 400 naming options.searchable_pdf, nothing charged", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await ocr(acc.adminKey, { base64: fixture("english.png").toString("base64"), model: "openai/gpt-4.1-mini", options: { searchable_pdf: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "options.searchable_pdf" });
    expect((await call(ctx.stack.edge, "GET", "/v1/account/balance", acc.adminKey)).body.balance_cents).toBe(100);
  });

  it("the OpenAPI document states the option and the answer's field", async () => {
    const doc = await call(ctx.stack.edge, "GET", "/v1/openapi.json");
    const ocrPost = doc.body.paths["/v1/ocr"].post;
    const options = ocrPost.requestBody.content["application/json"].schema.properties.options;
    expect(options.properties.searchable_pdf, JSON.stringify(options)).toMatchObject({ type: "boolean", default: false });
    const result = ocrPost.responses["200"].content["application/json"].schema.properties.result;
    expect(result.properties.searchable_pdf, JSON.stringify(result)).toMatchObject({ type: "string", format: "byte" });
  });

  it("on a durable job: 400 naming options.searchable_pdf, not available for jobs yet", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr/jobs", acc.adminKey, { base64: fixture("english.png").toString("base64"), model: "local/tesseract", options: { searchable_pdf: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "options.searchable_pdf" });
    expect(r.body.error.message).toContain("not available for durable jobs yet");
  });

  it("on a durable job sent as multipart: the same 400", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const form = new FormData();
    form.set("file", new Blob([fixture("english.png")], { type: "image/png" }), "english.png");
    form.set("model", "local/tesseract");
    form.set("searchable_pdf", "true");
    const res = await fetch(`${ctx.stack.edge.url}/v1/ocr/jobs`, { method: "POST", headers: { authorization: `Bearer ${acc.adminKey}` }, body: form });
    const body = (await res.json()) as { error: { code: string; param: string } };
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(body.error).toMatchObject({ code: "invalid_request", param: "options.searchable_pdf" });
  });
});
