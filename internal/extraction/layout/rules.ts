/**
 * Ruling lines taken out of a page image before it is read: table borders,
 * dotted cell separators, underlines. Tesseract's own line finder removes
 * solid lines in some layouts, but dotted rules reach the recogniser as
 * strings of dots, colons and underscores that break the words beside them
 * and hide the gaps between columns.
 *
 * A rule is a long, thin run of dark pixels along a row (or a column), with
 * small breaks allowed (dots), and light above and below it (a word's
 * letters are dark above and below their middle). Its pixels are painted
 * white; nothing else changes. Works on 8-bit grey pixels, one byte each.
 */

export interface GreyImage {
  width: number;
  height: number;
  /** 0 black .. 255 white, row by row. */
  pixels: Uint8Array;
}

/** Breaks in a dotted rule up to this many pixels (at 200–300 DPI dots are 2–6 px apart; a word's letters are closer, but the probes tell a word from a rule). */
const MAX_BREAK = 6;
/** A rule is at least this long: 1/12 of the image's shorter side (0.7 inch on A4: a cell border, a column rule). */
const MIN_LENGTH_SHARE = 1 / 12;
/** Rows this far above and below a rule are probed for ink; a rule is at most about twice this thick. */
const PROBE = 4;
/** At most this share of a rule's length may be dark at the probe rows. */
const MAX_NEIGHBOUR_INK = 0.25;

/** How many pixels have each grey level (an indexed loop: an iterator over a page's 4 million pixels costs ten times as much). */
export function greyHistogram(pixels: Uint8Array): Uint32Array {
  const hist = new Uint32Array(256);
  for (let i = 0; i < pixels.length; i++) hist[pixels[i]!]!++;
  return hist;
}

/** Otsu's threshold over the grey histogram (of `pixels`, or the one given, made by {@link greyHistogram}). */
export function otsuThreshold(pixels: Uint8Array, hist: Uint32Array = greyHistogram(pixels)): number {
  const total = pixels.length;
  let sum = 0;
  for (let i = 0; i < 256; i++) sum += i * hist[i]!;
  let sumB = 0;
  let wB = 0;
  let best = 0;
  let threshold = 128;
  for (let t = 0; t < 256; t++) {
    wB += hist[t]!;
    if (wB === 0) continue;
    const wF = total - wB;
    if (wF === 0) break;
    sumB += t * hist[t]!;
    const mB = sumB / wB;
    const mF = (sum - sumB) / wF;
    const between = wB * wF * (mB - mF) ** 2;
    if (between > best) {
      best = between;
      threshold = t;
    }
  }
  return threshold;
}

/**
 * Paints the rules of `img` white, in place; returns how many pixels were
 * painted. Horizontal and vertical rules are found on the same dark mask, so
 * a grid's crossings go with both.
 */
export function removeRules(img: GreyImage): number {
  const { width, height, pixels } = img;
  const t = otsuThreshold(pixels);
  const dark = new Uint8Array(width * height);
  for (let i = 0; i < dark.length; i++) dark[i] = pixels[i]! <= t ? 1 : 0;
  const erase = new Uint8Array(width * height);
  const minLength = Math.max(30, Math.round(Math.min(width, height) * MIN_LENGTH_SHARE));
  // Rows: a run along x at row y; probes at y ± PROBE.
  scan(width, height, minLength, (y, x) => dark[y * width + x]!, (y, x) => (y >= 0 && y < height ? dark[y * width + x]! : 0), (y, x) => (erase[y * width + x] = 1));
  // Columns: the same with the axes swapped.
  scan(height, width, minLength, (x, y) => dark[y * width + x]!, (x, y) => (x >= 0 && x < width ? dark[y * width + x]! : 0), (x, y) => (erase[y * width + x] = 1));
  let painted = 0;
  for (let i = 0; i < erase.length; i++) {
    if (erase[i] && pixels[i]! <= t) {
      pixels[i] = 255;
      painted++;
    }
  }
  return painted;
}

/**
 * Finds long thin runs along the second coordinate for every value of the
 * first (`lines` of length `length`) and marks them, with the dark pixels
 * right next to them (a rule two or three pixels thick).
 */
function scan(
  length: number,
  lines: number,
  minLength: number,
  at: (line: number, pos: number) => number,
  probe: (line: number, pos: number) => number,
  mark: (line: number, pos: number) => void,
): void {
  forEachRun(lines, length, MAX_BREAK, (line, pos) => at(line, pos) !== 0, (line, start, last) => {
    if (last - start + 1 < minLength) return;
    let neighbours = 0;
    for (let p = start; p <= last; p++) if (probe(line - PROBE, p) || probe(line + PROBE, p)) neighbours++;
    if (neighbours > MAX_NEIGHBOUR_INK * (last - start + 1)) return;
    for (let p = start; p <= last; p++) {
      for (let d = -PROBE + 1; d < PROBE; d++) if (probe(line + d, p)) mark(line + d, p);
    }
  });
}

/**
 * Every run of dark pixels along each line (`lines` of `length` pixels),
 * breaks of at most `maxBreak` pixels bridged: `run(line, start, last)`.
 * Shared by the rules taken out here and the grids of `grid.ts`.
 */
export function forEachRun(lines: number, length: number, maxBreak: number, dark: (line: number, pos: number) => boolean, run: (line: number, start: number, last: number) => void): void {
  for (let line = 0; line < lines; line++) {
    let start = -1;
    let last = -1;
    for (let p = 0; p < length; p++) {
      if (!dark(line, p)) continue;
      if (start >= 0 && p - last - 1 > maxBreak) {
        run(line, start, last);
        start = -1;
      }
      if (start < 0) start = p;
      last = p;
    }
    if (start >= 0) run(line, start, last);
  }
}
