/**
 * The page count read from a PDF's page tree against pdfinfo's: equal on
 * the PDFs the machine's LibreOffice writes (one page, many pages, slides,
 * text), and never a wrong number on anything else (it says "don't know",
 * and the sandbox program asks pdfinfo): other producers' PDFs, an
 * incrementally updated PDF, a truncated one, junk.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quickPdfPageCount } from "./pdfpages.ts";
import { SOFFICE_BIN, fileUrl, prepareProfile } from "./profile.ts";
import { pagedDocx } from "./testdocs.ts";

const FIXTURES = fileURLToPath(new URL("../../test/fixtures", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "folio-pdfpages-test-"));
const profile = join(work, "profile");
const pdfs = join(work, "pdf");

/** pdfinfo's page count. */
function pdfinfoPages(pdf: string): number {
  return Number(/^Pages:\s+(\d+)/m.exec(execFileSync("pdfinfo", [pdf], { encoding: "utf8" }))![1]);
}

beforeAll(async () => {
  await prepareProfile(profile);
  const sources = join(work, "src");
  mkdirSync(sources);
  writeFileSync(join(sources, "seven-pages.docx"), pagedDocx(7));
  writeFileSync(join(sources, "long.txt"), Array.from({ length: 700 }, (_, i) => `Line ${i + 1} of a long plain text.`).join("\n"));
  for (const name of ["one-page.docx", "two-pages.rtf", "slides.pptx", "hello.txt"]) writeFileSync(join(sources, name), readFileSync(join(FIXTURES, "convert", name)));
  // One LibreOffice run for all of them, as the sandbox program starts it.
  execFileSync(
    SOFFICE_BIN,
    [`-env:UserInstallation=${fileUrl(profile)}`, "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck", "--convert-to", "pdf", "--outdir", pdfs, ...readdirSync(sources).map((n) => join(sources, n))],
    { stdio: "ignore", timeout: 120_000, env: { ...process.env, HOME: work } },
  );
}, 180_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("quickPdfPageCount", () => {
  it("reads the page count of every PDF LibreOffice wrote, as pdfinfo does", async () => {
    const names = readdirSync(pdfs).sort();
    expect(names).toEqual(["hello.pdf", "long.pdf", "one-page.pdf", "seven-pages.pdf", "slides.pdf", "two-pages.pdf"]);
    const got = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await quickPdfPageCount(join(pdfs, n))])));
    const want = Object.fromEntries(names.map((n) => [n, pdfinfoPages(join(pdfs, n))]));
    expect(got).toEqual(want);
    expect(want["seven-pages.pdf"]).toBe(7);
    expect(want["long.pdf"]).toBeGreaterThan(10);
  });

  it("never gives a number pdfinfo does not: other producers' PDFs are counted right or not at all", async () => {
    for (const name of ["ocr/multipage.pdf", "ocr/ten-pages.pdf"]) {
      const quick = await quickPdfPageCount(join(FIXTURES, name));
      if (quick !== undefined) expect(quick, name).toBe(pdfinfoPages(join(FIXTURES, name)));
    }
  });

  it("does not read an incrementally updated PDF (its last trailer points back: /Prev)", async () => {
    const pdf = join(work, "updated.pdf");
    const original = readFileSync(join(pdfs, "seven-pages.pdf"));
    writeFileSync(pdf, original);
    const xref = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(original.toString("latin1"))![1];
    // An update section adding nothing: what an editor appends when it saves in place.
    const at = original.length;
    appendFileSync(pdf, `xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 1 /Prev ${xref} >>\nstartxref\n${at}\n%%EOF\n`);
    expect(await quickPdfPageCount(pdf)).toBeUndefined();
  });

  it.each([
    ["a truncated PDF", (b: Buffer) => b.subarray(0, Math.floor(b.length / 2))],
    ["a PDF whose tail is cut", (b: Buffer) => b.subarray(0, b.length - 20)],
    ["junk", () => Buffer.from("not a PDF at all\n")],
    ["an empty file", () => Buffer.alloc(0)],
    ["a cross-reference offset pointing elsewhere", (b: Buffer) => Buffer.from(b.toString("latin1").replace(/startxref\s+\d+/, "startxref\n17"), "latin1")],
  ])("gives up on %s", async (_what, spoil) => {
    const pdf = join(work, "spoilt.pdf");
    writeFileSync(pdf, spoil(readFileSync(join(pdfs, "seven-pages.pdf"))));
    expect(await quickPdfPageCount(pdf)).toBeUndefined();
  });

  it("gives up on a file that is not there", async () => {
    expect(await quickPdfPageCount(join(work, "no-such.pdf"))).toBeUndefined();
  });
});
