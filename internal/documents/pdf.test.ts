/**
 * PDF inspection and rendering with the real poppler tools, on the fixtures
 * in test/fixtures/ocr (A4 pages with known text) and on small hand-made
 * PDFs; then tesseract on the rendered pages (PNG and streamed PGM), with
 * the character error rate per page under a threshold.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { cer } from "../../test/cer.ts";
import { TesseractEngine } from "../extraction/engines/tesseract.ts";
import { inspectPdf, openPdf, pdfPageCount, rasterizePdf, streamPdfPages, type PdfSource, type RenderedPage } from "./pdf.ts";
import { folioFailure as failure } from "../../test/support.ts";
import { PGM_MIME_TYPE, parsePgm } from "../formats/index.ts";
import { parsePages, type PageSelection } from "../formats/pages.ts";

const FIXTURES = fileURLToPath(new URL("../../test/fixtures/ocr", import.meta.url));
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const multipage = fixture("multipage.pdf");
/** Measured 0.000 on each page of multipage.pdf (tesseract 5.3.0); margin for other builds. */
const PAGE_CER = 0.02;
/** multipage.pdf (3 pages) over a limit of 2, without a selection: the message names the limit and the option. */
const OVER_LIMIT = 'the document has 3 pages; at most 2 are processed per request: choose which with the "pages" option of /v1/ocr and /v1/convert (for example "pages": "1-2")';

function selection(text: string): PageSelection {
  const parsed = parsePages(text);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.selection;
}

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


/** The machine's temporary folder, taken before any test stubs TMPDIR: a caller's own files go there. */
const OUTSIDE_TMP = tmpdir();

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

/** Every page of a stream, in the order it came. */
async function drain(pages: AsyncIterable<RenderedPage>): Promise<RenderedPage[]> {
  const out: RenderedPage[] = [];
  for await (const p of pages) out.push(p);
  return out;
}

/** Width and height from a PGM's header, after checking it is the binary 8-bit grey PGM pdftoppm writes. */
function pgmSize(page: RenderedPage): { width: number; height: number } {
  expect(page.mimeType).toBe(PGM_MIME_TYPE);
  const pgm = parsePgm(page.image);
  expect(pgm, `page ${page.pageNumber} starts ${JSON.stringify(page.image.subarray(0, 20).toString("latin1"))}`).not.toBeNull();
  // Nothing after the pixels: the file was complete, not cut or overwritten.
  expect(page.image.length - pgm!.pixels.length).toBe(page.image.indexOf("255\n") + 4);
  return { width: pgm!.width, height: pgm!.height };
}

/** The state of a process ("R" running, "S" sleeping, "T" stopped…), from /proc. */
function processState(pid: number): string | undefined {
  try {
    return /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, "latin1"))?.[1];
  } catch {
    return undefined; // gone
  }
}

/** Page files (PNG or PGM) in the stream's private folder. */
function pageFilesOnDisk(): string[] {
  return leftovers().flatMap((d) => readdirSync(join(tmp, d)).filter((n) => /\.(pgm|png)$/.test(n)));
}

/** pdftoppm processes working in this test's TMPDIR (their command line names the PDF in it). */
function renderersRunning(): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "latin1");
    } catch {
      continue; // gone meanwhile
    }
    if (cmdline.startsWith("pdftoppm\0") && cmdline.includes(tmp)) pids.push(Number(pid));
  }
  return pids;
}

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
    expect(err).toMatchObject({ code: "invalid_request", message: OVER_LIMIT, extra: { page_count: 3, max_pages: 2 } });
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

describe("a page selection (the pages option)", () => {
  it("rasterizes only the selected pages, in document order, with their page numbers", async () => {
    const r = await rasterizePdf(fixture("ten-pages.pdf"), { maxPages: 3, timeoutMs: 30_000, pages: selection("9-,2") });
    expect({ pageCount: r.pageCount, pageNumbers: r.pageNumbers, images: r.pages.length }).toEqual({ pageCount: 10, pageNumbers: [2, 9, 10], images: 3 });
    expect(r.pages.map(pngSize)).toEqual(Array(3).fill({ width: 1654, height: 2339 }));
    expect(leftovers()).toEqual([]);
  });

  it("streams only the selected pages, in order, each with its number in the document", async () => {
    const pages = await drain(streamPdfPages(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 30_000, pages: selection("3-4,7,10"), pagesAhead: 1 }));
    expect(pages.map((p) => p.pageNumber)).toEqual([3, 4, 7, 10]);
    expect(pages.map(pgmSize)).toEqual(Array(4).fill({ width: 1654, height: 2339 }));
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it("reads the text of the selected page, not of another", async () => {
    const r = await rasterizePdf(multipage, { maxPages: 1, timeoutMs: 30_000, pages: selection("2") });
    const { text } = await new TesseractEngine().extractPage({ pageNumber: 2, image: r.pages[0]!, mimeType: "image/png" }, { extractTables: false, outputFormat: "text" }, new AbortController().signal);
    expect(cer(text, readFileSync(join(FIXTURES, "multipage.page-2.txt"), "utf8")), text).toBeLessThan(PAGE_CER);
  });

  it("takes the page count and sizes from `inspected` (a job's worker reads them once per file) instead of asking pdfinfo again", async () => {
    const dir = mkdtempSync(join(OUTSIDE_TMP, "folio-pdf-inspected-"));
    try {
      const path = join(dir, "ten.pdf");
      writeFileSync(path, fixture("ten-pages.pdf"));
      const inspected = await inspectPdf(path, { maxPages: 10 });
      expect({ pageCount: inspected.pageCount, sizes: inspected.sizes.length }).toEqual({ pageCount: 10, sizes: 10 });
      const pages = await drain(streamPdfPages({ path }, { maxPages: 2, timeoutMs: 30_000, pages: selection("9-10"), inspected }));
      expect(pages.map((p) => p.pageNumber)).toEqual([9, 10]);
      expect(pages.map(pgmSize)).toEqual(Array(2).fill({ width: 1654, height: 2339 }));
      // What is given is what counts: told the file has 8 pages, page 9 is beyond its end, with no pdfinfo to say otherwise.
      const err = await failure(drain(streamPdfPages({ path }, { maxPages: 2, timeoutMs: 30_000, pages: selection("9-10"), inspected: { ...inspected, pageCount: 8 } })));
      expect(err).toMatchObject({ code: "invalid_request", param: "pages", extra: { page_count: 8 } });
      expect(leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a selection within the limit opens a PDF over it", async () => {
    const pdf = await openPdf(fixture("ten-pages.pdf"), { maxPages: 2, timeoutMs: 30_000, pages: selection("5-6") });
    expect({ pageCount: pdf.pageCount, selected: pdf.selected }).toEqual({ pageCount: 10, selected: [5, 6] });
    await pdf.close();
  });

  it.each([
    ["a page beyond the end", "2,4", 10, 'the document has 3 pages; "pages": "2,4" asks for page 4'],
    ["an open range starting beyond the end", "4-", 10, 'the document has 3 pages; "pages": "4-" asks for page 4'],
    ["an open range over the limit", "1-", 2, `"pages": "1-" selects 3 pages of the document's 3; at most 2 are processed per request`],
  ])("refuses %s before rendering: a 400 naming pages and the document's page count", async (_what, text, maxPages, message) => {
    const err = await failure(drain(streamPdfPages(multipage, { maxPages, timeoutMs: 30_000, pages: selection(text) })));
    expect(err).toMatchObject({ code: "invalid_request", param: "pages", message, extra: { page_count: 3, max_pages: maxPages } });
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });
});

describe("openPdf", () => {
  it("streams a range of pages, and close() stops a stream that is still rendering", async () => {
    const pdf = await openPdf(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 30_000 });
    expect((await drain(pdf.stream(3, 4))).map((p) => [p.pageNumber, pgmSize(p)])).toEqual([
      [3, { width: 1654, height: 2339 }],
      [4, { width: 1654, height: 2339 }],
    ]);
    await expect(pdf.stream(0, 2).next()).rejects.toThrow(RangeError);
    const pages = pdf.stream(1, 10);
    expect((await pages.next()).value).toMatchObject({ pageNumber: 1 });
    await pdf.close();
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

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

describe("streamPdfPages", () => {
  it("yields every page of the ten-page PDF in order as binary 8-bit grey PGM, 1654 × 2339 at 200 DPI, and leaves nothing behind", async () => {
    const pages = await drain(streamPdfPages(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 30_000 }));
    expect(pages.map((p) => p.pageNumber)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(pages.map(pgmSize)).toEqual(Array(10).fill({ width: 1654, height: 2339 }));
    expect(leftovers()).toEqual([]);
  });

  it("yields the first page while pdftoppm is still rendering the others", async () => {
    const events: string[] = [];
    const pages = streamPdfPages(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 30_000, onRendered: () => events.push("rendered") });
    for await (const p of pages) {
      events.push(`page ${p.pageNumber}${p.pageNumber === 1 && renderersRunning().length === 1 ? " (pdftoppm running)" : ""}`);
    }
    expect(events[0], events.join(", ")).toBe("page 1 (pdftoppm running)");
    // Page 10 is known complete only when pdftoppm has exited; pages before it may be too, when it exits between two looks.
    expect(events.at(-1), events.join(", ")).toBe("page 10");
    expect(events.indexOf("rendered"), events.join(", ")).toBeGreaterThan(0);
    expect(events.filter((e) => e.startsWith("page")).map((e) => Number(e.split(" ")[1]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("renders a huge page at a lower resolution within the pixel budget", async () => {
    const [page, ...rest] = await drain(streamPdfPages(tinyPdf({ mediaBox: "0 0 14400 14400" }), { maxPages: 1, timeoutMs: 30_000, maxPixelsPerPage: 4_000_000 }));
    expect(rest).toEqual([]);
    const { width, height } = pgmSize(page!);
    expect(width * height).toBeLessThanOrEqual(4_000_000);
    expect(width).toBeGreaterThan(1900);
    expect(width).toBe(height);
  });

  it("refuses more pages than the cap before rendering any, with the same error as rasterizePdf", async () => {
    const err = await failure(drain(streamPdfPages(multipage, { maxPages: 2, timeoutMs: 30_000 })));
    expect(err).toMatchObject({ code: "invalid_request", message: OVER_LIMIT, extra: { page_count: 3, max_pages: 2 } });
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it.each([
    ["junk bytes", Buffer.from("this is not a PDF at all")],
    ["a truncated PDF", multipage.subarray(0, 3000)],
  ])("turns %s into the same 400 as rasterizePdf", async (_what, bytes) => {
    const err = await failure(drain(streamPdfPages(bytes, { maxPages: 10, timeoutMs: 30_000 })));
    expect(err).toMatchObject({ code: "invalid_request", message: "the PDF is damaged or not a PDF and could not be read" });
    expect(leftovers()).toEqual([]);
  });

  it("stops with a timeout error when rendering takes longer than timeoutMs", async () => {
    const err = await failure(drain(streamPdfPages(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 1 })));
    expect(err.code).toBe("timeout");
    expect(err.message).toMatch(/rendering the PDF took longer than 1 ms/);
    expect(leftovers()).toEqual([]);
  });

  it("bounds the rendering, not the consumer: a slow reader after the last page is written is no timeout", async () => {
    let rendered!: () => void;
    const done = new Promise<void>((resolve) => (rendered = resolve));
    const got: number[] = [];
    for await (const p of streamPdfPages(multipage, { maxPages: 10, timeoutMs: 1500, onRendered: () => rendered() })) {
      got.push(p.pageNumber);
      if (p.pageNumber === 1) {
        await done;
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
    expect(got).toEqual([1, 2, 3]);
    expect(leftovers()).toEqual([]);
  });

  it("pauses pdftoppm while `pagesAhead` rendered pages wait to be taken, and resumes it as they are", async () => {
    const pages = streamPdfPages(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 30_000, pagesAhead: 2 });
    expect((await pages.next()).value).toMatchObject({ pageNumber: 1 });
    const [pid] = renderersRunning();
    expect(pid).toBeDefined();
    await vi.waitFor(() => expect(processState(pid!)).toBe("T"), { timeout: 10_000, interval: 20 });
    // Pages 2 and 3 complete and pdftoppm stopped before the end of the document. How many more it
    // wrote before the stop depends on how soon the folder's listing ran: 4 at most on an idle machine,
    // 6 seen here with the whole suite running beside it (the listing's timer lags under load).
    const waiting = pageFilesOnDisk();
    expect(waiting.length, waiting.join(", ")).toBeGreaterThanOrEqual(3);
    expect(waiting.length, waiting.join(", ")).toBeLessThan(10);
    const rest = await drain(pages);
    expect(rest.map((p) => p.pageNumber)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(rest.map(pgmSize)).toEqual(Array(9).fill({ width: 1654, height: 2339 }));
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it("stops the time limit while pdftoppm is paused for a slow reader", async () => {
    const got: number[] = [];
    for await (const p of streamPdfPages(fixture("ten-pages.pdf"), { maxPages: 10, timeoutMs: 2000, pagesAhead: 1 })) {
      got.push(p.pageNumber);
      if (p.pageNumber === 1) await new Promise((resolve) => setTimeout(resolve, 2500));
    }
    expect(got).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("kills pdftoppm, rejects with the signal's reason and removes its folder when the caller aborts", async () => {
    const ac = new AbortController();
    const reason = new Error("client went away");
    // 300 DPI: pdftoppm is still busy with later pages when the first arrives.
    const pages = streamPdfPages(fixture("ten-pages.pdf"), { dpi: 300, maxPages: 10, timeoutMs: 30_000, signal: ac.signal });
    const first = await pages.next();
    expect(first.value).toMatchObject({ pageNumber: 1 });
    expect(renderersRunning()).toHaveLength(1);
    ac.abort(reason);
    await expect(pages.next()).rejects.toBe(reason);
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });

  it("kills pdftoppm and removes its folder when the consumer leaves the loop early", async () => {
    for await (const p of streamPdfPages(fixture("ten-pages.pdf"), { dpi: 300, maxPages: 10, timeoutMs: 30_000 })) {
      expect(p.pageNumber).toBe(1);
      expect(renderersRunning()).toHaveLength(1);
      break;
    }
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
  });
});

describe("a PDF given as a file on disk ({ path }) instead of bytes", () => {
  /** The caller's folder, outside the test's TMPDIR, so leftovers() still sees only the private folders. */
  let callerDir: string;
  beforeEach(() => {
    callerDir = mkdtempSync(join(OUTSIDE_TMP, "folio-pdf-caller-"));
  });
  afterEach(() => rmSync(callerDir, { recursive: true, force: true }));
  const onDisk = (bytes: Buffer): string => {
    const path = join(callerDir, "document.pdf");
    writeFileSync(path, bytes);
    return path;
  };
  const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

  it("counts the same pages as from the bytes, from an absolute or a relative path", async () => {
    const path = onDisk(fixture("ten-pages.pdf"));
    expect(await pdfPageCount({ path })).toBe(await pdfPageCount(fixture("ten-pages.pdf")));
    expect(await pdfPageCount({ path: relative(process.cwd(), path) })).toBe(10);
    expect(leftovers()).toEqual([]);
  });

  it("streams the same PGM bytes, and rasterizes the same PNG bytes, as from the bytes", async () => {
    const path = onDisk(multipage);
    const opts = { maxPages: 10, timeoutMs: 30_000 };
    const fromBytes = (await drain(streamPdfPages(multipage, opts))).map((p) => [p.pageNumber, sha256(p.image)]);
    const fromFile = (await drain(streamPdfPages({ path }, opts))).map((p) => [p.pageNumber, sha256(p.image)]);
    expect(fromFile).toHaveLength(3);
    expect(fromFile).toEqual(fromBytes);
    const pngs = async (source: PdfSource) => (await rasterizePdf(source, opts)).pages.map(sha256);
    expect(await pngs({ path })).toEqual(await pngs(multipage));
    expect(leftovers()).toEqual([]);
  });

  it("reads the caller's file where it is, and leaves it there unchanged after close(), removing only its own folder", async () => {
    const path = onDisk(fixture("ten-pages.pdf"));
    const before = sha256(readFileSync(path));
    const pdf = await openPdf({ path }, { maxPages: 10, timeoutMs: 30_000 });
    // Not copied: the private folder is empty until pages are rendered.
    expect(leftovers()).toHaveLength(1);
    expect(readdirSync(join(tmp, leftovers()[0]!))).toEqual([]);
    expect((await pdf.render(1, 1)).map(pngSize)).toEqual([{ width: 1654, height: 2339 }]);
    const pages = pdf.stream(1, 10);
    expect((await pages.next()).value).toMatchObject({ pageNumber: 1 });
    await pdf.close(); // with the stream's pdftoppm still running
    expect(renderersRunning()).toEqual([]);
    expect(leftovers()).toEqual([]);
    expect(existsSync(path)).toBe(true);
    expect(sha256(readFileSync(path))).toBe(before);
    expect(readdirSync(callerDir)).toEqual(["document.pdf"]);
  });

  it("leaves the caller's file in place when the PDF is refused", async () => {
    const path = onDisk(multipage);
    const err = await failure(drain(streamPdfPages({ path }, { maxPages: 2, timeoutMs: 30_000 })));
    expect(err).toMatchObject({ code: "invalid_request", message: OVER_LIMIT });
    expect(readdirSync(callerDir)).toEqual(["document.pdf"]);
    expect(leftovers()).toEqual([]);
  });

  it("rejects a missing file with the file system's error, not a 400 calling the client's PDF damaged", async () => {
    const err = await pdfPageCount({ path: join(callerDir, "missing.pdf") }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "ENOENT" });
    await expect(openPdf({ path: callerDir }, { maxPages: 10, timeoutMs: 30_000 })).rejects.toThrow(/not a regular file/);
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

  it("reads the streamed PGM pages as well", async () => {
    const engine = new TesseractEngine();
    const signal = new AbortController().signal;
    for await (const page of streamPdfPages(multipage, { maxPages: 10, timeoutMs: 30_000 })) {
      const r = await engine.extractPage(page, { extractTables: false, outputFormat: "text" }, signal);
      const rate = cer(r.text, readFileSync(join(FIXTURES, `multipage.page-${page.pageNumber}.txt`), "utf8"));
      expect(rate, `page ${page.pageNumber}: CER ${rate.toFixed(4)} for:\n${r.text}`).toBeLessThan(PAGE_CER);
    }
  });
});
