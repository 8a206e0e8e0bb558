/**
 * How tall a page's letters are, from its pixels alone (engines/tesseract.ts
 * "Small text"): the connected components of its ink (under Otsu's
 * threshold, 4-connected) that are shaped like letters, and the height that
 * three in four of them stay under. Tesseract's own word boxes say the same
 * on a page it reads; on a page whose text is too small for it, it reads
 * garbage whose boxes span several lines and do not say "small", while the
 * letters still do.
 */
import { otsuThreshold, type GreyImage } from "./rules.ts";

/** A component is letter-shaped when it is this tall at least (not a speck or a dot) and at most, … */
const MIN_LETTER_HEIGHT = 3;
const MAX_LETTER_HEIGHT = 80;
/** … at most this many times as wide as tall (a ligature or two touching letters, not a rule), … */
const MAX_LETTER_ASPECT = 3;
/** … has at least this many pixels, and fills at least this share of its box (not a frame or a hairline). */
const MIN_LETTER_PIXELS = 4;
const MIN_LETTER_FILL = 0.1;
/** Fewer letter-shaped components than this say nothing of a page's text (a photo, a blank page). */
const MIN_LETTERS = 50;

/**
 * The tracing's scratch, kept from page to page (the function runs to its
 * end without yielding, so one at a time): a mark a pixel and a stack of the
 * pixels still to visit. Allocated for every page (five bytes a pixel, 20
 * MB on an A4 page at 200 DPI), they cost a job's worker more in garbage
 * collection than the tracing itself (a `bench/run.ts jobs` CPU profile).
 * The stack grows as a component needs, to the page's size at most.
 */
let seenScratch = new Uint8Array(0);
let stackScratch = new Int32Array(1 << 16);

/** The 75th percentile of the heights of a page's letter-shaped ink components, in pixels; null with fewer than {@link MIN_LETTERS}. */
export function letterHeight(img: GreyImage): number | null {
  const { width: w, height: h, pixels } = img;
  const t = otsuThreshold(pixels);
  if (seenScratch.length < w * h) seenScratch = new Uint8Array(w * h);
  else seenScratch.fill(0, 0, w * h);
  const seen = seenScratch;
  let stack = stackScratch;
  const heights: number[] = [];
  // An unseen ink pixel joins the component being traced: pushed on the stack; the stack's new top.
  const visit = (q: number, top: number) => {
    if (seen[q] || pixels[q]! > t) return top;
    seen[q] = 1;
    if (top === stack.length) {
      const grown = new Int32Array(Math.min(w * h, stack.length * 2));
      grown.set(stack);
      stack = stackScratch = grown;
    }
    stack[top] = q;
    return top + 1;
  };
  for (let start = 0; start < pixels.length; start++) {
    if (seen[start] || pixels[start]! > t) continue;
    seen[start] = 1;
    let top = 0;
    stack[top++] = start;
    let n = 0;
    let minX = w;
    let maxX = 0;
    let minY = h;
    let maxY = 0;
    while (top) {
      const p = stack[--top]!;
      n++;
      const y = (p / w) | 0;
      const x = p - y * w;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
      if (x > 0) top = visit(p - 1, top);
      if (x < w - 1) top = visit(p + 1, top);
      if (y > 0) top = visit(p - w, top);
      if (y < h - 1) top = visit(p + w, top);
    }
    const bw = maxX - minX + 1;
    const bh = maxY - minY + 1;
    if (bh >= MIN_LETTER_HEIGHT && bh <= MAX_LETTER_HEIGHT && bw <= MAX_LETTER_ASPECT * bh && n >= MIN_LETTER_PIXELS && n >= MIN_LETTER_FILL * bw * bh) heights.push(bh);
  }
  if (heights.length < MIN_LETTERS) return null;
  heights.sort((a, b) => a - b);
  return heights[Math.floor(heights.length * 0.75)]!;
}
