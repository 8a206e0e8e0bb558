/**
 * local/auto against the real tesseract CLI: a page with dotted ruling
 * lines (ruled.png, made by test/fixtures/ocr/generate.ts) is read again
 * without them; a page without rules is read once, as local/tesseract
 * reads it; an unsure English page goes to PP-OCR; and the selection rule.
 */
import { afterAll, describe, expect, it } from "vitest";
import { cer } from "../../../test/cer.ts";
import { TEXT_OPTIONS as TEXT, liveSignal as live, ocrFixture as fixture, ocrTruth as truth, pngPage as page } from "../../../test/support.ts";
import type { AnalyzedPage } from "../layout/page.ts";
import { AutoEngine, isBetter, proseColumns } from "./auto.ts";
import { TesseractEngine } from "./tesseract.ts";
import { PpOcrEngine, shutdownPpOcr } from "./ppocr.ts";
import { TABLE_ROWS } from "../../../test/fixtures/ocr/table-rows.ts";


describe("AutoEngine", () => {
  const tesseract = new TesseractEngine();
  const auto = new AutoEngine(tesseract);

  it("reads a table in a grid of dotted rules without the rules, better than one tesseract reading", async () => {
    const once = await tesseract.extractPage(page(fixture("ruled.png")), TEXT, live());
    const r = await auto.extractPage(page(fixture("ruled.png")), { ...TEXT, extractTables: true }, live());
    const mine = cer(r.text, truth("ruled.txt"));
    const theirs = cer(once.text, truth("ruled.txt"));
    expect(mine, `local/auto CER ${mine.toFixed(4)}:\n${r.text}`).toBeLessThan(0.02);
    expect(mine, `local/tesseract read it with CER ${theirs.toFixed(4)}`).toBeLessThanOrEqual(theirs);
    expect(r.tables[0]?.rows[2], JSON.stringify(r.tables)).toEqual(["Toner cartridge", "3", "68.90", "206.70"]);
  });

  it("reads a ruled table by its grid: every row and cell, the empty ones too, and a GFM table in markdown", async () => {
    const r = await auto.extractPage(page(fixture("ruled.png")), { ...TEXT, extractTables: true, outputFormat: "markdown" }, live());
    expect(r.tables.map((t) => t.rows), r.text).toEqual([TABLE_ROWS]);
    expect(r.text).toContain("| Item | Quantity | Unit price | Amount |\n| --- | --- | --- | --- |\n| Printer paper A4 | 12 | 4.50 | 54.00 |");
    expect(r.text).toContain("| Total |  |  | 346.60 |");
  });

  it("gives the same reading as local/tesseract on a page without rules", async () => {
    const [a, t] = await Promise.all([auto.extractPage(page(fixture("english.png")), TEXT, live()), tesseract.extractPage(page(fixture("english.png")), TEXT, live())]);
    expect(a).toEqual(t);
    expect(auto.readByTesseract(a)).toBe(true);
    expect(auto.readByTesseract(t)).toBe(false);
  });
});

describe("AutoEngine with PP-OCR for unsure English pages", () => {
  const tesseract = new TesseractEngine();
  const ppocr = new PpOcrEngine();
  const auto = new AutoEngine(tesseract, ppocr);
  afterAll(() => shutdownPpOcr());

  it("answers PP-OCR's reading of a degraded English scan that tesseract reads with low confidence", async () => {
    const once = await tesseract.extractPage(page(fixture("scan.png")), TEXT, live());
    expect(once.confidence, "tesseract's confidence on scan.png").toBeLessThan(0.88);
    const [a, p] = await Promise.all([auto.extractPage(page(fixture("scan.png")), TEXT, live()), ppocr.extractPage(page(fixture("scan.png")), { ...TEXT, language: "en" }, live())]);
    expect(a.text).toBe(p.text);
    expect(cer(a.text, truth("scan.txt"))).toBeLessThanOrEqual(cer(once.text, truth("scan.txt")));
    // PP-OCR's confidence says nothing of the page's turn (engines/straighten.ts).
    expect(auto.readByTesseract(a)).toBe(false);
  });

  it("keeps tesseract's reading of a page it reads confidently (German: PP-OCR does not read it)", async () => {
    const [a, t] = await Promise.all([auto.extractPage(page(fixture("german.png")), TEXT, live()), tesseract.extractPage(page(fixture("german.png")), TEXT, live())]);
    expect(a).toEqual(t);
  });
});

describe("isBetter (the reading kept)", () => {
  const reading = (confidence: number, wordCount: number) => ({ confidence, wordCount }) as AnalyzedPage;

  it("keeps the reading without rules when it is more confident and kept its words", () => {
    expect(isBetter(reading(0.9, 250), reading(0.84, 206))).toBe(true);
  });

  it("keeps the first reading when the second is not more confident, or lost words", () => {
    expect(isBetter(reading(0.85, 100), reading(0.85, 100))).toBe(false);
    expect(isBetter(reading(0.914, 392), reading(0.925, 555))).toBe(false);
    expect(isBetter(reading(0.95, 80), reading(0.9, 100))).toBe(false);
  });
});

describe("proseColumns (whether PP-OCR would lose a page's order)", () => {
  /** A reading whose words stand in `lines` lines of `words` words each, in `columns` columns side by side. */
  const reading = (columns: number, lines: number, words: number) => {
    const ws = [];
    for (let c = 0; c < columns; c++) {
      for (let l = 0; l < lines; l++) {
        for (let i = 0; i < words; i++) {
          const x0 = c * 1000 + i * 90;
          ws.push({ text: "word", line: `${c}.${l}`, paragraph: `${c}`, x0, x1: x0 + 80, y0: l * 40, y1: l * 40 + 25 });
        }
      }
    }
    // Only the sources' words matter here.
    return { sources: [{ block: { type: "text", bbox: [0, 0, 0, 0], text: "" }, words: ws }] } as unknown as AnalyzedPage;
  };
  it.each([
    ["two columns of 30 lines of 8 words", 2, 30, 8, true],
    ["one column of 60 lines of 8 words", 1, 60, 8, false],
    ["two columns of 30 lines of 3 words (a receipt's items and prices)", 2, 30, 3, false],
    ["two columns of 8 lines of 8 words", 2, 8, 8, false],
  ] as const)("%s", (_what, columns, lines, words, expected) => {
    expect(proseColumns(reading(columns, lines, words))).toBe(expected);
  });
});
