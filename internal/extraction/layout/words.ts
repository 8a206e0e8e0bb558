/**
 * Recognised words with their boxes, as tesseract's TSV output gives them
 * (level 5 rows): the input of the layout analysis.
 */

/** A rectangle in pixels of the image that was read: left, top, right, bottom (exclusive). */
export interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export interface OcrWord extends Box {
  text: string;
  /** 0–100 as tesseract reports it; -1 when it gave none. */
  conf: number;
  /** Tesseract's line: words with the same key were read as one text line. */
  line: string;
  /** Tesseract's paragraph (block and paragraph numbers). */
  paragraph: string;
  /** Position in tesseract's reading order, from 0. */
  index: number;
}

export interface TsvPage {
  /** The page image's size in pixels, as tesseract read it. */
  width: number;
  height: number;
  /** Words with text, in tesseract's order. */
  words: OcrWord[];
  /** Blocks tesseract found that hold no text: pictures, rules, drawings. */
  blankBlocks: Box[];
}

/** Parses tesseract's TSV output: the page size, the words with their boxes, and the blocks without text. */
export function parseTsv(tsv: string): TsvPage {
  const words: OcrWord[] = [];
  const blocks = new Map<string, { box: Box; text: boolean }>();
  let width = 0;
  let height = 0;
  for (const row of tsv.split("\n")) {
    const f = row.replace(/\r$/, "").split("\t");
    if (f.length < 12) continue;
    const [x, y, w, h] = [Number(f[6]), Number(f[7]), Number(f[8]), Number(f[9])];
    if (![x, y, w, h].every(Number.isFinite)) continue;
    if (f[0] === "1") {
      width = Math.max(width, x + w);
      height = Math.max(height, y + h);
      continue;
    }
    if (f[0] === "2") {
      blocks.set(`${f[1]}.${f[2]}`, { box: { x0: x, y0: y, x1: x + w, y1: y + h }, text: false });
      continue;
    }
    // level 5 = word; paragraph and line rows are skipped.
    if (f[0] !== "5") continue;
    const text = f.slice(11).join("\t").trim();
    if (!text) continue;
    const block = blocks.get(`${f[1]}.${f[2]}`);
    if (block) block.text = true;
    const conf = Number(f[10]);
    words.push({
      x0: x,
      y0: y,
      x1: x + Math.max(1, w),
      y1: y + Math.max(1, h),
      text,
      conf: Number.isFinite(conf) ? conf : -1,
      line: `${f[1]}.${f[2]}.${f[3]}.${f[4]}`,
      paragraph: `${f[1]}.${f[2]}.${f[3]}`,
      index: words.length,
    });
  }
  return { width, height, words, blankBlocks: [...blocks.values()].filter((b) => !b.text).map((b) => b.box) };
}

export function boundsOf(boxes: readonly Box[]): Box {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const b of boxes) {
    if (b.x0 < x0) x0 = b.x0;
    if (b.y0 < y0) y0 = b.y0;
    if (b.x1 > x1) x1 = b.x1;
    if (b.y1 > y1) y1 = b.y1;
  }
  return { x0, y0, x1, y1 };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** True when a word has no letter or digit: punctuation, rules read as dashes, specks. */
export function isSymbolOnly(text: string): boolean {
  return !/[\p{L}\p{N}]/u.test(text);
}
