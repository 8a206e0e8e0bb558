/**
 * Plain text in the encodings people have, through real gVisor sandboxes
 * (root, runsc, LibreOffice, poppler, tesseract): every file of
 * test/fixtures/convert/encodings renders to exactly the pixels of its UTF-8
 * twin (the same text, so the same page), and the twin's page reads back as
 * the text within a stated error rate (so "the same" is not "the same
 * garbage"; not glyph by glyph, which depends on fonts and the OCR model).
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "./assets.ts";
import { backendForTests } from "./runsc.testkit.ts";
import { pngInfo } from "./testdocs.ts";
import { cer } from "../../test/cer.ts";

const ENCODINGS = join(PROJECT_ROOT, "test", "fixtures", "convert", "encodings");
const { backend, work } = backendForTests("encodings");

async function page(name: string): Promise<Buffer> {
  const result = await backend.convert({ document: readFileSync(join(ENCODINGS, name)), format: "TXT", maxPages: 5, timeoutMs: 60_000 });
  expect(result.pageCount, name).toBe(1);
  expect(pngInfo(result.pages[0] as Buffer).phys, name).toEqual({ x: 7874, y: 7874, unit: 1 });
  return result.pages[0] as Buffer;
}

/** The decoded pixels (the PNG bytes of equal pages are equal too, but pixels are what matters). */
async function pixels(png: Buffer): Promise<Buffer> {
  return sharp(png).raw().toBuffer();
}

function ocr(png: Buffer, lang: string): string {
  const file = join(work, `ocr-${Math.random().toString(36).slice(2)}.png`);
  writeFileSync(file, png);
  return execFileSync("tesseract", [file, "stdout", "-l", lang], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
}

/** Pages of the UTF-8 twins, converted once before the tests (each test reads them; none depends on another's run). */
const twins: Record<"western" | "russian", Buffer> = {} as Record<"western" | "russian", Buffer>;
beforeAll(async () => {
  twins.western = await page("western.utf8.txt");
  twins.russian = await page("russian.utf8.txt");
}, 120_000);

/**
 * The most character errors tesseract may make reading the western twin's
 * page. Which glyphs a page shows depends on the font set, and how
 * tesseract reads a glyph (Café or café, … or .) on its model: read in
 * Liberation Mono it made 3% (2026-11-27). Text decoded wrongly is far
 * above the bound: every non-ASCII character a replacement character is
 * 21%, UTF-8 read as Latin-1 45%.
 */
const MAX_TWIN_CER = 0.1;

describe("text files in the encodings people have, converted in a runsc sandbox", () => {
  it("the UTF-8 twins render as their text", () => {
    const text = readFileSync(join(ENCODINGS, "western.utf8.txt"), "utf8");
    const western = ocr(twins.western, "fra+deu+spa");
    expect(cer(western, text), western).toBeLessThanOrEqual(MAX_TWIN_CER);
    // No Cyrillic model is installed: the page must at least not be the replacement characters of a wrong decoding.
    expect(ocr(twins.russian, "eng").length).toBeGreaterThan(50);
  }, 60_000);

  it.each([
    ["western.utf8-bom.txt", "western"],
    ["western.utf16le-bom.txt", "western"],
    ["western.utf16be-bom.txt", "western"],
    ["western.windows-1252.txt", "western"],
    ["russian.cp866.txt", "russian"],
    ["russian.windows-1251.txt", "russian"],
    ["russian.koi8-r.txt", "russian"],
  ] as const)("%s renders exactly as its UTF-8 twin", async (name, family) => {
    const got = await page(name);
    expect(Buffer.compare(await pixels(got), await pixels(twins[family])), `${name} differs from ${family}.utf8.txt`).toBe(0);
  }, 60_000);
});
