/**
 * `local/auto`: the best local reading of a page without knowing engines.
 * 1. It reads the page as `local/tesseract` does (finding the language).
 * 2. When the page has ruling lines (table borders, dotted cell separators,
 *    underlines) it reads it a second time with the rules taken out
 *    (`layout/rules.ts`) and keeps the reading tesseract is more confident
 *    of, unless that one lost words.
 * 3. When tesseract's best reading of an English page is still not
 *    confident (mean word confidence under 0.88: receipts, photocopies,
 *    charts), the page is read by PP-OCR (`local/ppocr`) and that reading is
 *    answered, unless tables were asked for and tesseract found some
 *    (PP-OCR finds no tables), or tesseract read the page as columns of
 *    prose side by side ({@link proseColumns}), whose order PP-OCR loses.
 * A clean page without rules costs one tesseract reading, as on
 * `local/tesseract`.
 *
 * Chosen from measurements (docs/benchmarks/reading-quality.md "Reading quality"): on the
 * corpus's ruled tables and receipts the second reading roughly halves the
 * character error rate (a dotted table 0.48 → 0.16, a coloured statistics
 * table 0.29 → 0.19, a receipt 0.17 → 0.09); on a dense financial statement
 * rule removal cut descenders and tesseract lost a third of the words, which
 * the word-count guard catches. Mean confidence picks the better reading on
 * every ruled page of the corpus but one (a degraded photocopy where both
 * readings are poor). Below 0.88 on English pages PP-OCR read better on
 * every such page of the corpus (four receipts: CER 0.04–0.20 against
 * 0.09–0.33; a stained table; a flowchart); at or above it tesseract read
 * better (columns of prose, where PP-OCR's order suffers, and most tables).
 * PP-OCR reads English and Chinese only, so other languages stay with
 * tesseract.
 */
import type { Engine, ExtractOptions, PageInput, PageResult } from "../types.ts";
import { findPageRules } from "../layout/grid.ts";
import { decodeGrey, encodePgm } from "../layout/image.ts";
import type { AnalyzedPage } from "../layout/page.ts";
import { removeRules } from "../layout/rules.ts";
import type { SourceWord } from "../layout/markdown.ts";
import { boundsOf, type Box } from "../layout/words.ts";
import { pageResult, wantsGrids } from "./local-result.ts";
import type { TesseractEngine } from "./tesseract.ts";

export const AUTO_MODEL_ID = "local/auto";

/** Under this mean word confidence an English page is read by PP-OCR instead. */
const PPOCR_BELOW_CONFIDENCE = 0.88;
/** A line of prose has at least this many words… */
const PROSE_LINE_WORDS = 6;
/** …a page of prose columns at least this many such lines… */
const MIN_PROSE_LINES = 20;
/** …and this share of them beside another ({@link proseColumns}). */
const MIN_SIDE_BY_SIDE = 0.3;
/** The rule-free reading must be this much more confident (0–1 scale)… */
const MIN_CONFIDENCE_GAIN = 0.005;
/** …and keep at least this share of the words of the first reading. */
const MIN_WORDS_KEPT = 0.9;
/** Images shorter than this many lines of text are lines or snippets: no rules to find. */
const MIN_LINES_FOR_RULES = 8;
/** Fewer painted pixels than this share of the page is specks, not rules. */
export const MIN_RULE_SHARE = 0.0005;

export class AutoEngine implements Engine {
  readonly id = AUTO_MODEL_ID;
  /** The answers that are tesseract's readings (not PP-OCR's): their confidence is tesseract's (engines/straighten.ts). */
  readonly #byTesseract = new WeakSet<PageResult>();

  /** `ppocr`: the PP-OCR engine for pages tesseract reads with low confidence; without it, tesseract answers every page. */
  constructor(
    private readonly tesseract: TesseractEngine,
    private readonly ppocr?: Engine,
  ) {}

  async extractPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageResult> {
    const first = await this.tesseract.readPage(page, options, signal);
    const best = await this.#withoutRules(page, first.page, first.language, options, signal);
    const keepTables = options.extractTables && best.tables.length > 0;
    if (this.ppocr && first.language === "eng" && (best.confidence ?? 0) < PPOCR_BELOW_CONFIDENCE && !keepTables && !proseColumns(best)) {
      return this.ppocr.extractPage(page, { ...options, language: "en" }, signal);
    }
    const r = await pageResult(page, best, options);
    this.#byTesseract.add(r);
    return r;
  }

  /** Whether this answer of {@link extractPage} is tesseract's reading, whose confidence is tesseract's mean word confidence. */
  readByTesseract(r: PageResult): boolean {
    return this.#byTesseract.has(r);
  }

  /** The reading without ruling lines when it is the better one; `read` otherwise (also when the image cannot be decoded here). */
  async #withoutRules(page: PageInput, read: AnalyzedPage, language: string, options: ExtractOptions, signal: AbortSignal): Promise<AnalyzedPage> {
    const { width, height } = read.layout;
    if (Math.min(width, height) < MIN_LINES_FOR_RULES * read.lineHeight) return read;
    let grey;
    try {
      grey = await decodeGrey(page.image);
    } catch {
      // An image sharp cannot decode (BMP) was still read by tesseract: keep that reading.
      return read;
    }
    signal.throwIfAborted();
    // The ruled tables and blanks are found before their lines are taken out; the reading without them places its words in the same cells.
    const rules = wantsGrids(options) ? findPageRules(grey) : undefined;
    const painted = removeRules(grey);
    if (painted < MIN_RULE_SHARE * grey.width * grey.height) return read;
    const clean = await this.tesseract.read({ ...page, image: encodePgm(grey), mimeType: "image/x-portable-graymap" }, language, options, signal, rules);
    return isBetter(clean, read) ? clean : read;
  }
}

/**
 * Whether tesseract read a page as columns of prose side by side: at least
 * {@link MIN_PROSE_LINES} lines of {@link PROSE_LINE_WORDS} words or more,
 * holding at least half the page's words, and at least
 * {@link MIN_SIDE_BY_SIDE} of them beside another such line (their heights
 * overlapping, their extents not). PP-OCR reads such a page line by line
 * across its columns; tesseract's confidence on it is low when its letters
 * are small and were read enlarged (a magazine page, a two-column book page
 * downscaled to half: 0.71 and 0.86), not because it read it badly.
 * Measured in docs/benchmarks/reading-quality.md "Small pages": receipts, tables and charts
 * have at most 18 such lines, or none beside each other.
 */
export function proseColumns(read: AnalyzedPage): boolean {
  const byLine = new Map<string, SourceWord[]>();
  let words = 0;
  for (const s of read.sources) {
    for (const w of s.words) {
      words++;
      const line = byLine.get(w.line);
      if (line) line.push(w);
      else byLine.set(w.line, [w]);
    }
  }
  const prose = [...byLine.values()].filter((l) => l.length >= PROSE_LINE_WORDS);
  const lines = prose.map(boundsOf);
  const inLines = prose.reduce((n, l) => n + l.length, 0);
  if (lines.length < MIN_PROSE_LINES || inLines < words / 2) return false;
  const beside = (a: Box, b: Box) => (b.x0 >= a.x1 || b.x1 <= a.x0) && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 0.5 * Math.min(a.y1 - a.y0, b.y1 - b.y0);
  const side = lines.filter((a) => lines.some((b) => b !== a && beside(a, b))).length;
  return side >= MIN_SIDE_BY_SIDE * lines.length;
}

/** The selection rule of the module comment. */
export function isBetter(candidate: AnalyzedPage, current: AnalyzedPage): boolean {
  return (candidate.confidence ?? 0) >= (current.confidence ?? 0) + MIN_CONFIDENCE_GAIN && candidate.wordCount >= MIN_WORDS_KEPT * current.wordCount;
}
