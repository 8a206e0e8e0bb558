/**
 * A column of bullets read as one word. Tesseract often takes the round
 * bullets of a list (○ ◦ •, evenly spaced one under the other) for a single
 * tall, narrow "word" such as `ooooo0`, in a block of its own after the
 * items; the items then lose their markers and the word lands in the text as
 * garbage. Such a word is given back as one bullet `•` at the start of each
 * line beside it, so that the text reads as a list and the structure
 * (`markdown.ts`) sees the items.
 */
import type { OcrWord } from "./words.ts";

/** Characters tesseract reads round or dotted bullets as. */
const BULLET_CHARS = /^[oO0Qce°•·●○◦@©®]{2,}$/u;
/** At least this many word heights tall (two bullets one under the other)… */
const MIN_HEIGHT = 2;
/** …and at most this many wide: a column, not a word. */
const MAX_WIDTH = 1.5;
/** A line is beside the column when its first word starts within this many word heights right of it. */
const MAX_GAP = 4;

/**
 * The words with each bullet column (module comment) replaced by a bullet
 * before the first word of every line beside it, when at least two lines are;
 * `index` renumbered in the new order (tesseract's, the bullets where their
 * lines start). The words given are not changed; the same array when nothing
 * was found.
 */
export function splitBulletColumns(words: readonly OcrWord[]): readonly OcrWord[] {
  if (words.length < 3) return words;
  const heights = words.map((w) => w.y1 - w.y0).sort((a, b) => a - b);
  const h = heights[heights.length >> 1]!;
  const columns = words.filter((w) => BULLET_CHARS.test(w.text) && w.y1 - w.y0 >= MIN_HEIGHT * h && w.x1 - w.x0 <= MAX_WIDTH * h);
  if (!columns.length) return words;

  const lines = new Map<string, OcrWord[]>();
  for (const w of words) lines.set(w.line, [...(lines.get(w.line) ?? []), w]);
  /** Bullets to put before a word (the first of its line, in tesseract's order). */
  const before = new Map<OcrWord, OcrWord>();
  const dropped = new Set<OcrWord>();
  for (const col of columns) {
    const beside: OcrWord[][] = [];
    for (const [key, ws] of lines) {
      if (key === col.line) continue;
      const first = ws.reduce((a, b) => (b.x0 < a.x0 ? b : a));
      const cy = ws.reduce((s, w) => s + (w.y0 + w.y1) / 2, 0) / ws.length;
      if (cy >= col.y0 && cy <= col.y1 && first.x0 >= col.x1 && first.x0 - col.x1 <= MAX_GAP * h) beside.push(ws);
    }
    if (beside.length < 2) continue;
    dropped.add(col);
    for (const ws of beside) {
      const y0 = Math.min(...ws.map((w) => w.y0));
      const y1 = Math.max(...ws.map((w) => w.y1));
      const cy = (y0 + y1) / 2;
      const half = (col.x1 - col.x0) / 2;
      const firstRead = ws.reduce((a, b) => (b.index < a.index ? b : a));
      before.set(firstRead, { ...firstRead, text: "•", x0: col.x0, x1: col.x1, y0: Math.round(cy - half), y1: Math.round(cy + half), conf: col.conf });
    }
  }
  if (!dropped.size) return words;
  const out: OcrWord[] = [];
  for (const w of words) {
    if (dropped.has(w)) continue;
    const bullet = before.get(w);
    if (bullet) out.push(bullet);
    out.push(w);
  }
  return out.map((w, index) => (w.index === index ? w : { ...w, index }));
}
