/**
 * The sandbox program's page step on the host (LibreOffice and poppler
 * installed, no runsc): pages rendered by several pdftoppm processes at once
 * come out identical to one process's, in page order, as 200-DPI PNGs that
 * are grey where the page is grey; without libstdbuf the pages are the same;
 * the output limit stops the renderers; the page count comes from the PDF's
 * page tree, not pdfinfo; a page selection renders exactly its pages, and
 * the limits name the `pages` option.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDIN_FILE, PRESTART_FILE, runJob, type ConverterOptions } from "./converter.ts";
import type { JobResult, JobSpec } from "./interface.ts";
import { prepareProfile } from "./profile.ts";
import { SEED_BYTES } from "./reseed.ts";
import { pngInfo } from "./testdocs.ts";

const work = mkdtempSync(join(tmpdir(), "folio-pages-test-"));
const profile = join(work, "profile");
/** Plain text long enough for 5 A4 pages (LibreOffice's text import: about 60 lines a page). */
const LINES = Array.from({ length: 280 }, (_, i) => `Line ${i + 1}: the quick brown fox jumps over the lazy dog, page images at 200 DPI.`).join("\n");
const PAGES = 5;

beforeAll(async () => {
  await prepareProfile(profile);
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

let jobs = 0;
/**
 * Converts the 5-page text. `prestarted`: in pre-started mode (LibreOffice
 * and the page-1 pdftoppm started before the job is handed in), as a
 * pre-started sandbox runs it ("stdin") or one restored from the checkpoint
 * ("signal": the hand-in file with its seed, the program reseeded; the
 * pdftoppm started by the host's wake-up, or with "signal, not woken" not
 * at all).
 */
async function convert(
  spec: Partial<JobSpec>,
  options: ConverterOptions = {},
  prestarted: false | "stdin" | "signal" | "signal, not woken" = false,
): Promise<{ result: JobResult; pages: Buffer[] }> {
  const jobDir = join(work, `job-${++jobs}`);
  mkdirSync(join(jobDir, "input"), { recursive: true });
  const full: JobSpec = { format: "TXT", dpi: 200, maxPages: 10, profileDir: profile, timeoutMs: 60_000, ...spec };
  const handIn = () => {
    if (prestarted !== "stdin") writeFileSync(join(jobDir, HANDIN_FILE), JSON.stringify({ seed: "ab".repeat(SEED_BYTES) }));
    writeFileSync(join(jobDir, "input", "document.txt"), LINES);
    writeFileSync(join(jobDir, "job.json"), JSON.stringify(full));
  };
  let result: JobResult;
  if (prestarted) {
    writeFileSync(join(jobDir, PRESTART_FILE), JSON.stringify({ profileDir: profile, handIn: prestarted === "stdin" ? "stdin" : "signal" }));
    const ready = Promise.withResolvers<void>();
    const handedIn = async (wake: () => void) => {
      await ready.promise;
      if (prestarted === "signal") wake();
      handIn();
      return true;
    };
    const running = runJob(jobDir, { scratchDir: work, ...options, onReady: () => ready.resolve(), handIn: handedIn });
    result = await running;
  } else {
    handIn();
    result = await runJob(jobDir, { scratchDir: work, ...options });
  }
  const names = readdirSync(join(jobDir, "output")).filter((n) => n.endsWith(".png"));
  if (!result.ok) return { result, pages: [] };
  expect(names.sort(), "output/ holds page-1.png … page-N.png").toEqual(Array.from({ length: result.pageCount }, (_, i) => `page-${i + 1}.png`).sort());
  const pages = names.map((_, i) => readFileSync(join(jobDir, "output", `page-${i + 1}.png`)));
  return { result, pages };
}

describe("the page step", () => {
  let oneRenderer: ReturnType<typeof convert> | undefined;
  /** The document converted with one renderer, once, by whichever test asks first: what every other way of rendering must give. */
  const withOneRenderer = () => (oneRenderer ??= convert({ cpus: 1 }));
  /** The pages of {@link withOneRenderer}, page 1 first. */
  async function reference(): Promise<Buffer[]> {
    const { result, pages } = await withOneRenderer();
    expect(result.ok, `the one-renderer conversion compared with: ${JSON.stringify(result)}`).toBe(true);
    return pages;
  }

  it("renders every page as a grey 200-DPI PNG with one renderer", async () => {
    const { result, pages } = await withOneRenderer();
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: PAGES });
    expect(result.timings?.greyPages).toBe(PAGES);
    expect(pages).toHaveLength(PAGES);
    for (const png of pages) {
      expect(pngInfo(png)).toEqual({ width: 1654, height: 2339, phys: { x: 7874, y: 7874, unit: 1 } });
      expect(png[25], "colour type").toBe(0);
    }
    expect(result.timings?.pngBytes).toBe(pages.reduce((n, p) => n + p.length, 0));
  }, 60_000);

  it.each([2, 3, 8])("gives the same pages, in order, with %d renderers at once", async (cpus) => {
    const single = await reference();
    const { result, pages } = await convert({ cpus });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: PAGES });
    expect(pages.map((p) => p.length)).toEqual(single.map((p) => p.length));
    pages.forEach((p, i) => expect(Buffer.compare(p, single[i] as Buffer), `page ${i + 1}`).toBe(0));
  }, 60_000);

  it("gives the same pages without libstdbuf (pdftoppm's own buffer)", async () => {
    const single = await reference();
    const { result, pages } = await convert({ cpus: 1 }, { libstdbufPath: join(work, "no-such-libstdbuf.so") });
    expect(result.ok, JSON.stringify(result)).toBe(true);
    pages.forEach((p, i) => expect(Buffer.compare(p, single[i] as Buffer), `page ${i + 1}`).toBe(0));
  }, 60_000);

  it("counts the pages from LibreOffice's PDF without pdfinfo", async () => {
    const { result } = await convert({ cpus: 1 }, { pdfinfoPath: join(work, "no-such-pdfinfo") });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: PAGES, documentPageCount: PAGES, timings: { pdfinfoFallback: 0 } });
  }, 60_000);

  it.each([
    ["2,4-", [2, 4, 5], 2],
    ["1-2,5", [1, 2, 5], 3],
    ["3", [3], 2],
    ["1,3,5", [1, 3, 5], 1],
    ["1,4-", [1, 4, 5], 1],
  ])("renders only the pages %j selects (as page-1.png onwards), identical to the whole document's", async (pages, wanted, cpus) => {
    const single = await reference();
    const { result, pages: got } = await convert({ cpus, pages });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: wanted.length, documentPageCount: PAGES });
    // Pages between selected ones that a renderer went through are dropped, not encoded.
    expect(result.timings?.greyPages).toBe(wanted.length);
    got.forEach((p, i) => expect(Buffer.compare(p, single[wanted[i]! - 1] as Buffer), `page-${i + 1}.png is page ${wanted[i]}`).toBe(0));
  }, 60_000);

  it("a document over the limit without a selection: over_limit naming the limit and the option", async () => {
    const { result } = await convert({ maxPages: 4 });
    expect(result.error).toEqual({
      code: "over_limit",
      message: 'the document has 5 pages; at most 4 are processed per request: choose which with the "pages" option of /v1/ocr and /v1/convert (for example "pages": "1-4")',
    });
  }, 60_000);

  it.each([
    ["4-6", 10, 'the document has 5 pages; "pages": "4-6" asks for page 6'],
    ["2-", 3, `"pages": "2-" selects 4 pages of the document's 5; at most 3 are processed per request`],
  ])("a selection %j the document cannot meet: invalid_pages, nothing rendered", async (pages, maxPages, message) => {
    const { result } = await convert({ pages, maxPages });
    expect(result.error).toEqual({ code: "invalid_pages", message });
  }, 60_000);

  /** pdftoppm processes whose stdout is a file under this test's folder (the pre-started one writes page 1 there). */
  const renderers = () => {
    let pids: string[];
    try {
      pids = execFileSync("pgrep", ["-x", "pdftoppm"], { encoding: "utf8" }).split("\n").filter(Boolean);
    } catch {
      return [];
    }
    return pids.filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/1`).startsWith(work);
      } catch {
        return false; // ended meanwhile
      }
    });
  };

  // The pre-started pdftoppm renders page 1 of a short document (at most 3 pages to render) only.
  it.each([
    ["stdin", "1-3", 2, [1, 2, 3], 1],
    ["stdin", "1,4", 1, [1, 4], 1],
    ["stdin", "1", 2, [1], 1],
    ["stdin", undefined, 1, [1, 2, 3, 4, 5], 0],
    ["stdin", undefined, 2, [1, 2, 3, 4, 5], 0],
    ["stdin", "1,3-", 2, [1, 3, 4, 5], 0],
    ["stdin", "2-4", 2, [2, 3, 4], 0],
    ["signal", "1-3", 2, [1, 2, 3], 1],
    ["signal", undefined, 2, [1, 2, 3, 4, 5], 0],
    ["signal, not woken", "1-3", 2, [1, 2, 3], 0],
  ] as const)("pre-started (%s hand-in; pdftoppm waiting for page 1 on its stdin), pages %j with %d renderers: the same pages, no renderer left", async (handIn, pages, cpus, wanted, warm) => {
    const single = await reference();
    const { result, pages: got } = await convert({ cpus, ...(pages ? { pages } : {}) }, {}, handIn);
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: wanted.length, documentPageCount: PAGES });
    expect(result.timings?.warmRenderer, "page 1 from the pre-started pdftoppm").toBe(warm);
    got.forEach((p, i) => expect(Buffer.compare(p, single[wanted[i]! - 1] as Buffer), `page-${i + 1}.png is page ${wanted[i]}`).toBe(0));
    expect(renderers()).toEqual([]);
  }, 60_000);

  it("stops at the output limit: conversion_failed naming it", async () => {
    const limit = (await reference())[0]!.length * 2;
    const { result } = await convert({ cpus: 2, maxOutputBytes: limit });
    expect(result.ok).toBe(false);
    expect(result.error).toEqual({ code: "conversion_failed", message: `the rendered pages exceed ${limit} bytes` });
  }, 60_000);
});
