/**
 * PDF inspection and rendering with the real poppler tools, on the fixtures
 * in test/fixtures/ocr (A4 pages with known text) and on small hand-made
 * PDFs; then tesseract on the rendered pages, with the character error rate
 * per page under a threshold.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { cer } from "../../test/cer.ts";
import { TesseractEngine } from "../extraction/engines/tesseract.ts";
import { openPdf, pdfPageCount, rasterizePdf } from "./pdf.ts";
import { folioFailure as failure } from "../../test/support.ts";

const FIXTURES = fileURLToPath(new URL("../../test/fixtures/ocr", import.meta.url));
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const multipage = fixture("multipage.pdf");
/** Measured 0.000 on each page of multipage.pdf (tesseract 5.3.0); margin for other builds. */
const PAGE_CER = 0.02;

/** Width and height from a PNG's IHDR. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** A one-page PDF with a correct xref; `trailerExtra` and `objects` let a test add encryption. */
function tinyPdf(opts: { mediaBox?: string; trailerExtra?: string; extraObjects?: string[] } = {}): Buffer {
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    `<< /Type /Page /Parent 2 0 R /MediaBox [${opts.mediaBox ?? "0 0 200 200"}] /Contents 4 0 R >>`,
    "<< /Length 17 >>\nstream\n0 0 m 100 100 l S\nendstream",
    ...(opts.extraObjects ?? []),
  ];
  let body = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(body.length);
    body += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = body.length;
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R ${opts.trailerExtra ?? ""} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, "latin1");
}


// Every test runs with a private TMPDIR, so "nothing left behind" can be checked exactly.
let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "folio-pdf-test-"));
  vi.stubEnv("TMPDIR", tmp);
});
afterEach(() => {
  vi.unstubAllEnvs();
  rmSync(tmp, { recursive: true, force: true });
});
const leftovers = () => readdirSync(tmp);

describe("pdfPageCount", () => {
  it("counts the fixtures' pages", async () => {
    expect(await pdfPageCount(multipage)).toBe(3);
    expect(await pdfPageCount(fixture("ten-pages.pdf"))).toBe(10);
    expect(await pdfPageCount(tinyPdf())).toBe(1);
    expect(leftovers()).toEqual([]);
  });
});

describe("rasterizePdf", () => {
  it("renders each A4 page to a 1654 × 2339 PNG at the default 200 DPI", async () => {
    const r = await rasterizePdf(multipage, { maxPages: 10, timeoutMs: 30_000 });
    expect(r.pageCount).toBe(3);
    expect(r.pages.map(pngSize)).toEqual(Array(3).fill({ width: 1654, height: 2339 }));
    expect(leftovers()).toEqual([]);
  });

  it("honours another resolution", async () => {
    const r = await rasterizePdf(multipage, { dpi: 100, maxPages: 10, timeoutMs: 30_000 });
    expect(pngSize(r.pages[0]!)).toEqual({ width: 827, height: 1170 });
  });

  it("refuses more pages than the cap before rendering any, with the counts in the error", async () => {
    const err = await failure(rasterizePdf(multipage, { maxPages: 2, timeoutMs: 30_000 }));
    expect(err).toMatchObject({ code: "invalid_request", message: "document has 3 pages; the limit is 2", extra: { page_count: 3, max_pages: 2 } });
    expect(err.param).toBeUndefined(); // the caller knows whether it was url or base64
    expect(leftovers()).toEqual([]);
  });

  it("renders a huge page at a lower resolution within the pixel budget", async () => {
    // 200 inches square: 40,000 × 40,000 pixels at 200 DPI if nothing stopped it.
    const r = await rasterizePdf(tinyPdf({ mediaBox: "0 0 14400 14400" }), { maxPages: 1, timeoutMs: 30_000, maxPixelsPerPage: 4_000_000 });
    const { width, height } = pngSize(r.pages[0]!);
    expect(width * height).toBeLessThanOrEqual(4_000_000);
    expect(width).toBeGreaterThan(1900);
    expect(width).toBe(height);
  });

  it.each([
    ["junk bytes", Buffer.from("this is not a PDF at all")],
    ["an empty file", Buffer.alloc(0)],
    ["a truncated PDF", multipage.subarray(0, 3000)],
    ["a PNG", fixture("table.png")],
  ])("turns %s into a 400 that says the PDF is damaged", async (_what, bytes) => {
    const err = await failure(rasterizePdf(bytes, { maxPages: 10, timeoutMs: 30_000 }));
    expect(err).toMatchObject({ code: "invalid_request", message: "the PDF is damaged or not a PDF and could not be read" });
    expect(leftovers()).toEqual([]);
  });

  it("refuses a PDF encrypted with a user password with a 400 that says so", async () => {
    // Standard security handler, RC4 40-bit; the /U entry matches no password we could guess, as for a real protected file.
    const pdf = tinyPdf({
      extraObjects: [`<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <${"ab".repeat(32)}> /U <${"cd".repeat(32)}> >>`],
      trailerExtra: `/Encrypt 5 0 R /ID [<${"01".repeat(16)}> <${"01".repeat(16)}>]`,
    });
    const err = await failure(rasterizePdf(pdf, { maxPages: 10, timeoutMs: 30_000 }));
    expect(err).toMatchObject({ code: "invalid_request", message: "the PDF is protected by a password; send it without one" });
    expect((await failure(pdfPageCount(pdf))).message).toMatch(/password/);
  });

  it("stops with a timeout error when the job takes longer than timeoutMs", async () => {
    const err = await failure(rasterizePdf(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 1 }));
    expect(err.code).toBe("timeout");
    expect(err.message).toMatch(/rendering the PDF took longer than 1 ms/);
    expect(leftovers()).toEqual([]);
  });

  it("kills the renderer and rejects with the signal's reason when the caller aborts", async () => {
    const ac = new AbortController();
    const reason = new Error("client went away");
    const running = rasterizePdf(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 30_000, signal: ac.signal });
    setTimeout(() => ac.abort(reason), 100);
    await expect(running).rejects.toBe(reason);
    expect(leftovers()).toEqual([]);
  });
});

describe("openPdf", () => {
  it("renders pages on demand and removes its folder on close", async () => {
    const pdf = await openPdf(multipage, { maxPages: 10, timeoutMs: 30_000 });
    expect(pdf.pageCount).toBe(3);
    expect(pdf.pageSizes).toEqual(Array(3).fill({ width: 595.276, height: 841.89 }));
    const [second, ...rest] = await pdf.render(2, 2);
    expect(rest).toEqual([]);
    expect(pngSize(second!)).toEqual({ width: 1654, height: 2339 });
    expect(await pdf.render(1, 3)).toHaveLength(3);
    await expect(pdf.render(3, 4)).rejects.toThrow(RangeError);
    expect(leftovers()).toHaveLength(1);
    await pdf.close();
    await pdf.close();
    expect(leftovers()).toEqual([]);
  });
});

describe("tesseract on the rendered pages", () => {
  it("reads every page of the multi-page PDF with a character error rate under 0.02", async () => {
    const engine = new TesseractEngine();
    const { pages } = await rasterizePdf(multipage, { maxPages: 10, timeoutMs: 30_000 });
    const signal = new AbortController().signal;
    const results = await Promise.all(
      pages.map((image, i) => engine.extractPage({ pageNumber: i + 1, image, mimeType: "image/png" }, { extractTables: false, outputFormat: "text" }, signal)),
    );
    results.forEach((r, i) => {
      const rate = cer(r.text, readFileSync(join(FIXTURES, `multipage.page-${i + 1}.txt`), "utf8"));
      expect(rate, `page ${i + 1}: CER ${rate.toFixed(4)} for:\n${r.text}`).toBeLessThan(PAGE_CER);
    });
  });
});
