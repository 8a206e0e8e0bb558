/**
 * Which way a page's text runs, from its pixels alone (docs/ocr.md "Turned
 * and skewed pages"). Cheap enough to run on every page: a binarised,
 * subsampled set of ink points and projection profiles over them, no OCR.
 *
 * - Skew: the angle at which the ink's projection onto the page's vertical
 *   axis is most peaked (text lines make sharp peaks when the projection runs
 *   along them; Postl's projection-profile method), searched over ±15° and
 *   refined to 0.1°.
 * - Axis: the same peakiness measured across the page (the lines of a page
 *   turned 90° run down it), each normalised by what evenly spread ink would
 *   give, so a tall narrow receipt and a wide line compare fairly.
 * - Up or down: in Latin and Fraktur type, ascenders (b, d, h, k, l, t and
 *   capitals) are far more common than descenders (g, p, q, y): in each
 *   text line more ink lies above the x-height band than below the baseline.
 *   Upside down it is the other way round. Each line votes with its ink.
 *
 * Where the evidence is weak (a page of digits, a photo, a single word),
 * the answer says so (`upVote`, `axisRatio`, `skewContrast`), and the caller decides
 * (engines/straighten.ts asks tesseract's orientation detection then).
 */
import { greyHistogram, otsuThreshold, type GreyImage } from "./rules.ts";

/** The skew search range, degrees either way (the issue asks for at least ±15°). */
export const MAX_SKEW_DEGREES = 15;
/** Ink points sampled for the angle search: enough for a clear peak on a 2,500-px page, few enough for the ~140 profiles of the search in about 20 ms. The up/down vote uses every ink pixel. */
const MAX_POINTS = 40_000;
/** Ink is at most this share of the paper's brightness: black and dark-blue print is under 40 %, light fills (yellow, cyan, orange in grey: 75–95 %) are not ink. */
const INK_SHARE_OF_PAPER = 0.6;
/**
 * An ink pixel with ink this share of the page's shorter side away above,
 * below, left and right of it (at least {@link MIN_SOLID_REACH} pixels) lies
 * inside a solid area (a slide's dark title band, a scan's black margin, a
 * filled box), thicker than any letter's stroke: such areas are not text,
 * and their mass would outweigh the lines' in the profiles. Their edges stay.
 */
const SOLID_REACH_SHARE = 1 / 100;
const MIN_SOLID_REACH = 8;
const SOLID_ROW_STEP = 8;
/** Coarse search step and the refinement step, degrees. */
const COARSE_STEP = 0.5;
const FINE_STEP = 0.1;

/** Clockwise quarter turns of a page as sent from upright. */
export type Turn = 0 | 90 | 180 | 270;

export interface PageAngles {
  /** The best guess of how far the page as sent is turned clockwise from upright (how sure: {@link axisRatio} and {@link upVote}). */
  turn: Turn;
  /** Clockwise degrees the text lines are turned from horizontal, within ±{@link MAX_SKEW_DEGREES}, measured along the lines' axis. */
  skewDegrees: number;
  /**
   * Peakiness of the profile along the best horizontal angle divided by that
   * along the best vertical one (both normalised): above 1 the lines run
   * across the page as sent, below 1 down it.
   */
  axisRatio: number;
  /** The normalised peakiness of the better axis (about 1: no line structure at all). */
  peakiness: number;
  /**
   * The peakiness at the skew found over its median over the ±15° searched:
   * well above 1 when text lines decide the angle, about 1 when a picture or
   * a page without lines does (then the skew found means nothing).
   */
  skewContrast: number;
  /**
   * How clearly the lines' ascenders point one way: |ascender ink − descender
   * ink| / (their sum) over the text lines; 0 unsure, 1 all one way.
   */
  upVote: number;
  /** Text lines that voted. */
  lines: number;
}

interface Points {
  xs: Float32Array;
  ys: Float32Array;
  n: number;
  /** The ink threshold (Otsu's): pixels at or below it are ink. */
  threshold: number;
  /** The points' bounding box: min x, max x, min y, max y. */
  box: [number, number, number, number];
}

/**
 * Pixels at or below this are ink: Otsu's threshold, but at most
 * {@link INK_SHARE_OF_PAPER} of the paper's brightness (the 90th percentile),
 * so that coloured cell fills, a yellowed sheet on a white scanner lid and
 * the white corners a rotation adds stay paper.
 */
function inkThreshold(pixels: Uint8Array): { threshold: number; ink: number } {
  const hist = greyHistogram(pixels);
  let acc = 0;
  let paper = 255;
  while (paper > 0 && (acc += hist[paper]!) < pixels.length * 0.1) paper--;
  const threshold = Math.min(otsuThreshold(pixels, hist), Math.floor(paper * INK_SHARE_OF_PAPER));
  let ink = 0;
  for (let v = 0; v <= threshold; v++) ink += hist[v]!;
  return { threshold, ink };
}

/**
 * Ink points of the page, centred, at most {@link MAX_POINTS} (a fixed stride
 * over the ink: deterministic), leaving out ink inside solid areas
 * ({@link SOLID_REACH_SHARE}).
 */
function inkPoints(img: GreyImage): Points | null {
  const { width, height, pixels } = img;
  const { threshold: t, ink } = inkThreshold(pixels);
  // No ink, or more ink than paper (a photo, a dark page): nothing to measure.
  if (ink < 200 || ink > pixels.length / 2) return null;
  const r = Math.max(MIN_SOLID_REACH, Math.round(Math.min(width, height) * SOLID_REACH_SHARE));
  const solid = (x: number, y: number, i: number) =>
    x >= r && x < width - r && y >= r && y < height - r && pixels[i - r]! <= t && pixels[i + r]! <= t && pixels[i - r * width]! <= t && pixels[i + r * width]! <= t;
  // Solid ink counted on every SOLID_ROW_STEP-th row (a pass over the whole page would cost as much as the
  // profiles): the stride is set on the rest, a little wider where there is any, so that an estimate a
  // little low does not run out of points before the page's end. A page without solid areas is sampled as always.
  let solidInk = 0;
  for (let y = r; y < height - r; y += SOLID_ROW_STEP) for (let x = r, i = y * width + r; x < width - r; x++, i++) if (pixels[i]! <= t && solid(x, y, i)) solidInk++;
  const strokes = ink - solidInk * SOLID_ROW_STEP;
  if (strokes < 200) return null;
  const stride = Math.max(1, (solidInk ? strokes * 1.1 : strokes) / MAX_POINTS);
  const n = Math.min(strokes, MAX_POINTS);
  const xs = new Float32Array(n);
  const ys = new Float32Array(n);
  const cx = width / 2;
  const cy = height / 2;
  let minX = Infinity;
  let maxX = -Infinity;
  let minY = Infinity;
  let maxY = -Infinity;
  let k = 0;
  let next = 0;
  let seen = 0;
  for (let y = 0; y < height && k < n; y++) {
    const row = y * width;
    for (let x = 0; x < width; x++) {
      if (pixels[row + x]! > t || solid(x, y, row + x)) continue;
      if (seen++ < next) continue;
      next += stride;
      xs[k] = x - cx;
      ys[k] = y - cy;
      if (xs[k]! < minX) minX = xs[k]!;
      if (xs[k]! > maxX) maxX = xs[k]!;
      if (ys[k]! < minY) minY = ys[k]!;
      if (ys[k]! > maxY) maxY = ys[k]!;
      if (++k >= n) break;
    }
  }
  return { xs, ys, n: k, threshold: t, box: [minX, maxX, minY, maxY] };
}

/**
 * The profile of the points projected onto the axis at `deg` from the
 * vertical (1-px bins), and its first bin's offset. The bins span the
 * projection of the points' bounding box, which holds every point's: the
 * bins beyond the ink stay empty, and {@link peakiness} skips them (one pass
 * over the points instead of two).
 */
function profile(p: Points, deg: number, out: { bins: Float64Array; lo: number }): void {
  const a = (deg * Math.PI) / 180;
  const s = Math.sin(a);
  const c = Math.cos(a);
  const [minX, maxX, minY, maxY] = p.box;
  let lo = Infinity;
  let hi = -Infinity;
  for (const x of [minX, maxX]) {
    for (const y of [minY, maxY]) {
      const v = y * c - x * s;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  const base = Math.floor(lo);
  const len = Math.floor(hi) - base + 1;
  const bins = out.bins.length >= len ? out.bins.fill(0, 0, len) : new Float64Array(len);
  const { xs, ys, n } = p;
  // The row a point falls in once the page is turned back by `deg` (clockwise skew: lines fall to the right);
  // v − base is never negative, so truncation is the floor.
  for (let i = 0; i < n; i++) bins[(ys[i]! * c - xs[i]! * s - base) | 0]!++;
  out.bins = bins.length === len ? bins : bins.subarray(0, len);
  out.lo = base;
}

/** The profile of every ink pixel along `deg` (as {@link profile}): finer than the sample's, for the up/down vote. */
function fullProfile(img: GreyImage, threshold: number, deg: number): Float64Array {
  const { width, height, pixels } = img;
  const a = (deg * Math.PI) / 180;
  const s = Math.sin(a);
  const c = Math.cos(a);
  const cx = width / 2;
  const cy = height / 2;
  // The corners bound the projections.
  const corners = [-cx, cx].flatMap((x) => [-cy, cy].map((y) => y * c - x * s));
  const base = Math.floor(Math.min(...corners));
  const bins = new Float64Array(Math.floor(Math.max(...corners)) - base + 1);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    const yc = (y - cy) * c + cx * s - base;
    for (let x = 0; x < width; x++) if (pixels[row + x]! <= threshold) bins[Math.floor(yc - x * s)]!++;
  }
  return bins;
}

/**
 * How peaked a profile is: its energy divided by the energy of the same ink
 * spread evenly over the bins between its 1st and 99th percentile of ink.
 */
function peakiness(bins: Float64Array, total: number): number {
  let energy = 0;
  for (const b of bins) energy += b * b;
  const cut = total * 0.01;
  let acc = 0;
  let first = 0;
  while (first < bins.length && (acc += bins[first]!) < cut) first++;
  acc = 0;
  let last = bins.length - 1;
  while (last > first && (acc += bins[last]!) < cut) last--;
  const span = Math.max(1, last - first + 1);
  return (energy * span) / (total * total);
}

/** The angle near which the profile is most peaked, searched from `from` to `to`, with its peakiness. */
function bestAngle(p: Points, from: number, to: number, step: number): { deg: number; score: number; median: number } {
  const buf = { bins: new Float64Array(0), lo: 0 };
  let best = { deg: from, score: -1 };
  const scores: number[] = [];
  for (let d = from; d <= to + 1e-9; d += step) {
    profile(p, d, buf);
    const score = peakiness(buf.bins, p.n);
    scores.push(score);
    if (score > best.score) best = { deg: d, score };
  }
  scores.sort((a, b) => a - b);
  return { ...best, median: scores[scores.length >> 1]! };
}

function refine(p: Points, around: number): { deg: number; score: number } {
  return bestAngle(p, around - COARSE_STEP, around + COARSE_STEP, FINE_STEP);
}

/** The page's skew, axis and which way up its lines are (see the module comment); null when it has too little ink to tell. */
export function measureAngles(img: GreyImage): PageAngles | null {
  const pts = inkPoints(img);
  if (!pts) return null;
  const acrossCoarse = bestAngle(pts, -MAX_SKEW_DEGREES, MAX_SKEW_DEGREES, COARSE_STEP);
  const downCoarse = bestAngle(pts, 90 - MAX_SKEW_DEGREES, 90 + MAX_SKEW_DEGREES, COARSE_STEP);
  const across = refine(pts, acrossCoarse.deg);
  const down = refine(pts, downCoarse.deg);
  const horizontal = across.score >= down.score;
  const axis = horizontal ? across : down;
  const median = horizontal ? acrossCoarse.median : downCoarse.median;
  const vote = upVote(fullProfile(img, pts.threshold, axis.deg));
  // Along a vertical axis the profile's first bins are the page's right edge: ascenders
  // first there means the tops of the lines face right, a page turned 90° clockwise.
  const up = vote.vote >= 0;
  const turn: Turn = horizontal ? (up ? 0 : 180) : up ? 90 : 270;
  const skew = horizontal ? axis.deg : axis.deg - 90;
  return {
    turn,
    skewDegrees: Math.round(skew * 10) / 10 || 0,
    axisRatio: across.score / down.score,
    peakiness: axis.score,
    skewContrast: axis.score / median,
    upVote: Math.abs(vote.vote),
    lines: vote.lines,
  };
}

/**
 * Ascender against descender ink, over the text lines of a profile taken
 * along the lines (see the module comment). A line is a run of bins with
 * ink, split where the ink falls under a tenth of its neighbours' peaks; its
 * x-height band is the bins holding at least half the line's peak.
 */
function upVote(bins: Float64Array): { vote: number; lines: number } {
  let max = 0;
  for (const b of bins) if (b > max) max = b;
  const floor = max * 0.02;
  let above = 0;
  let below = 0;
  let lines = 0;
  let i = 0;
  while (i < bins.length) {
    while (i < bins.length && bins[i]! <= floor) i++;
    const start = i;
    while (i < bins.length && bins[i]! > floor) i++;
    const end = i; // exclusive
    if (end - start < 4) continue;
    for (const [s, e] of splitRun(bins, start, end)) {
      const zones = lineZones(bins, s, e);
      if (!zones || zones.up + zones.down === 0) continue;
      above += zones.up;
      below += zones.down;
      lines++;
    }
  }
  return { vote: above + below > 0 ? (above - below) / (above + below) : 0, lines };
}

/**
 * The ink above a text line's x-height band and below it, within a line
 * [s, e) of the profile. The band is the widest stretch of bins holding at
 * least half the line's peak, the peak being the 5th-highest bin so that a
 * ruling line (2–4 bins of solid ink) does not set it; other such stretches
 * (rules, underlines) bound the zones and are not counted.
 */
function lineZones(bins: Float64Array, s: number, e: number): { up: number; down: number } | null {
  const values = Array.from(bins.subarray(s, e)).sort((a, b) => b - a);
  const peak = values[Math.min(4, values.length - 1)]!;
  const half = peak / 2;
  const stretches: [number, number][] = [];
  for (let k = s; k < e; ) {
    if (bins[k]! < half) {
      k++;
      continue;
    }
    const from = k;
    while (k < e && bins[k]! >= half) k++;
    stretches.push([from, k]);
  }
  if (!stretches.length) return null;
  let core = 0;
  for (let i = 1; i < stretches.length; i++) if (stretches[i]![1] - stretches[i]![0] > stretches[core]![1] - stretches[core]![0]) core = i;
  const [top, bottom] = stretches[core]!;
  const upFrom = core > 0 ? stretches[core - 1]![1] : s;
  const downTo = core < stretches.length - 1 ? stretches[core + 1]![0] : e;
  let up = 0;
  let down = 0;
  for (let k = upFrom; k < top; k++) up += bins[k]!;
  for (let k = bottom; k < downTo; k++) down += bins[k]!;
  return { up, down };
}

/** A run of inked bins cut at deep valleys (two lines whose descenders and ascenders touch). */
function splitRun(bins: Float64Array, start: number, end: number): [number, number][] {
  const out: [number, number][] = [];
  let s = start;
  let peakSoFar = 0;
  for (let k = start + 1; k < end - 1; k++) {
    peakSoFar = Math.max(peakSoFar, bins[k - 1]!);
    const v = bins[k]!;
    if (v > bins[k - 1]! || v > bins[k + 1]!) continue;
    let nextPeak = 0;
    for (let j = k + 1; j < end; j++) nextPeak = Math.max(nextPeak, bins[j]!);
    if (v < 0.1 * Math.min(peakSoFar, nextPeak)) {
      out.push([s, k]);
      s = k + 1;
      peakSoFar = 0;
    }
  }
  out.push([s, end]);
  return out.filter(([a, b]) => b - a >= 4);
}
