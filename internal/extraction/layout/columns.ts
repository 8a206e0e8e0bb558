/**
 * Whitespace and the shape of columns, for the XY-cut of reading-order.ts:
 * the gaps across a set of boxes, the spans a band leaves free, how two
 * columns' lines line up, and whether a column reads as prose or as part of
 * a table. Thresholds are in word heights (`h`), as there.
 */
import { boundsOf, median, type Box } from "./words.ts";

/** A vertical gap narrower than this many word heights is a space between words, not a column gap. */
export const MIN_COLUMN_GAP = 1.0;
/** A column at least this many word heights wide can hold prose (about 25 characters). */
const MIN_PROSE_COLUMN = 12;
/** Share of a narrow column's lines that must line up with the next column's for the region to be a table. */
export const MIN_ROW_ALIGNMENT = 0.6;
/** The lines of a column of prose fill at least this share of its width (median over its lines). */
const MIN_PROSE_FILL = 0.8;
/** A column that is not prose needs this many lines to be read as a column of its own. */
export const MIN_COLUMN_LINES = 3;
/** A valley down a column: x positions where at most this share of its lines has ink. */
const VALLEY_SHARE = 0.3;

export interface Gap {
  /** Where the gap starts and ends along its axis. */
  from: number;
  to: number;
}

/** Whitespace bands across all of `items` along an axis: "y" gives horizontal gaps (rows), "x" vertical ones (columns). */
export function gaps(items: readonly Box[], axis: "x" | "y", minSize: number): Gap[] {
  const spans = items.map((b) => (axis === "y" ? [b.y0, b.y1] : [b.x0, b.x1]) as [number, number]).sort((a, b) => a[0] - b[0]);
  const out: Gap[] = [];
  let end = spans[0]![1];
  for (const [s, e] of spans.slice(1)) {
    if (s - end >= minSize && s > end) out.push({ from: end, to: s });
    if (e > end) end = e;
  }
  return out;
}

export function split<T extends Box>(items: readonly T[], axis: "x" | "y", at: readonly Gap[]): T[][] {
  return slots(items, axis, at).filter((p) => p.length > 0);
}

/** Items between consecutive gaps, one slot per space between gaps (empty slots kept). */
export function slots<T extends Box>(items: readonly T[], axis: "x" | "y", at: readonly Gap[]): T[][] {
  const edges = at.map((g) => (g.from + g.to) / 2).sort((a, b) => a - b);
  const parts: T[][] = edges.map(() => []).concat([[]]);
  for (const it of items) {
    const c = axis === "y" ? (it.y0 + it.y1) / 2 : (it.x0 + it.x1) / 2;
    let i = 0;
    while (i < edges.length && c > edges[i]!) i++;
    parts[i]!.push(it);
  }
  return parts;
}

/** Whitespace of a band along x, margins included, within the region: spans at least `min` wide. */
export function freeSpans(band: readonly Box[], region: Box, min: number): Gap[] {
  const spans = band.map((b) => [b.x0, b.x1] as [number, number]).sort((a, b) => a[0] - b[0]);
  const out: Gap[] = [];
  let end = region.x0;
  for (const [s, e] of spans) {
    if (s - end >= min) out.push({ from: end, to: s });
    if (e > end) end = e;
  }
  if (region.x1 - end >= min) out.push({ from: end, to: region.x1 });
  return out;
}

/** How many of `spans` lie between ink on both sides (not in a margin of `extent`). */
export function interior(spans: readonly Gap[], extent: { x0: number; x1: number }): number {
  return spans.filter((g) => g.from > extent.x0 && g.to < extent.x1).length;
}

export function intersect(a: readonly Gap[], b: readonly Gap[], min: number): Gap[] {
  const out: Gap[] = [];
  for (const x of a) {
    for (const y of b) {
      const from = Math.max(x.from, y.from);
      const to = Math.min(x.to, y.to);
      if (to - from >= min) out.push({ from, to });
    }
  }
  return out;
}

/**
 * Runs of neighbouring columns that belong to one table; a column that
 * belongs with neither neighbour is a run alone. Two columns belong together
 * when their lines line up and one of them is too narrow for prose, both
 * hold valleys (each is itself several columns of a table, or part of one),
 * or neither is prose (ragged columns of names, addresses, labels).
 * Two wide columns of prose line up too when they share a leading: they stay
 * apart, and so does a column of prose beside one that holds tables.
 */
export function tableGroups<T extends Box>(columns: readonly T[][], h: number): T[][][] {
  const bands = columns.map(lineBands);
  const shapes = columns.map((c) => ({ narrow: width(c) < MIN_PROSE_COLUMN * h, valley: hasValley(c, h), prose: isProseColumn(c, h) }));
  const groups: T[][][] = [[columns[0]!]];
  for (let i = 1; i < columns.length; i++) {
    const [a, b] = [shapes[i - 1]!, shapes[i]!];
    const fits = a.narrow || b.narrow || (a.valley && b.valley) || (!a.prose && !b.prose);
    // A sparse column beside a full one (a column's few left-aligned words set apart from its right-aligned numbers) lines up where its own lines do.
    const lined = alignment(bands[i - 1]!, bands[i]!) >= MIN_ROW_ALIGNMENT || (!a.prose && !b.prose && sparseAlignment(bands[i - 1]!, bands[i]!) >= MIN_ROW_ALIGNMENT);
    if (fits && lined) groups[groups.length - 1]!.push(columns[i]!);
    else groups.push([columns[i]!]);
  }
  return groups;
}

/** How full a column's lines are: the median of each line's width over the column's. Prose fills its lines. */
export function lineFill(items: readonly Box[]): number {
  const w = width(items);
  if (w <= 0) return 1;
  return median(lineBands(items).map((band) => {
    const inLine = items.filter((it) => (it.y0 + it.y1) / 2 >= band.from && (it.y0 + it.y1) / 2 <= band.to);
    return inLine.length ? width(inLine) / w : 0;
  }));
}

export function width(items: readonly Box[]): number {
  const b = boundsOf(items);
  return b.x1 - b.x0;
}

/**
 * A column of prose: wide enough, no valley of whitespace runs down it (see
 * {@link hasValley}), and its lines are full (a table's column of names or
 * e-mail addresses is ragged: its lines fill two thirds of it).
 */
export function isProseColumn(items: readonly Box[], h: number): boolean {
  if (width(items) < MIN_PROSE_COLUMN * h || hasValley(items, h)) return false;
  return lineBands(items).length < MIN_COLUMN_LINES || lineFill(items) >= MIN_PROSE_FILL;
}

/**
 * True when a valley of whitespace runs down a column through nearly all of
 * its lines, with ink on both sides: the column holds several columns of a
 * table (interrupted by a heading or a note across them), not prose.
 */
export function hasValley(items: readonly Box[], h: number): boolean {
  const b = boundsOf(items);
  const lines = lineBands(items);
  if (lines.length < 3) return false;
  // Ink coverage per x, counted in lines: bins of a quarter word height.
  const bin = Math.max(1, h / 4);
  const n = Math.ceil((b.x1 - b.x0) / bin) + 1;
  const covered = new Array<number>(n).fill(0);
  for (const l of lines) {
    const seen = new Uint8Array(n);
    for (const it of items) {
      const mid = (it.y0 + it.y1) / 2;
      if (mid < l.from || mid > l.to) continue;
      for (let i = Math.floor((it.x0 - b.x0) / bin); i <= Math.floor((it.x1 - 1 - b.x0) / bin); i++) seen[i] = 1;
    }
    for (let i = 0; i < n; i++) covered[i]! += seen[i]!;
  }
  const limit = VALLEY_SHARE * lines.length;
  const minBins = Math.ceil((MIN_COLUMN_GAP * h) / bin);
  let run = 0;
  for (let i = 0; i < n; i++) {
    if (covered[i]! <= limit) run++;
    else {
      // A valley with ink on both sides (i > run: not the left margin).
      if (run >= minBins && i - run > 0) return true;
      run = 0;
    }
  }
  return false;
}

/** How well two columns' lines line up: the smaller of the shares of each one's lines that overlap a line of the other (a cell centred beside two lines counts). */
export function alignment(a: readonly Gap[], b: readonly Gap[]): number {
  return Math.min(share(a, b), share(b, a));
}

/** The share of the sparser column's lines that overlap a line of the other. */
function sparseAlignment(a: readonly Gap[], b: readonly Gap[]): number {
  return a.length <= b.length ? share(a, b) : share(b, a);
}

/** The share of `from`'s lines that overlap a line of `to`. */
function share(from: readonly Gap[], to: readonly Gap[]): number {
  return from.filter((l) => to.some((m) => Math.min(l.to, m.to) > Math.max(l.from, m.from))).length / Math.max(1, from.length);
}

/** Vertical extents of the text lines in a set of words (overlapping extents merged). */
export function lineBands(items: readonly Box[]): Gap[] {
  const spans = items.map((b) => [b.y0, b.y1] as [number, number]).sort((a, b) => a[0] - b[0]);
  const out: Gap[] = [];
  for (const [s, e] of spans) {
    const last = out[out.length - 1];
    if (last && s < last.to) last.to = Math.max(last.to, e);
    else out.push({ from: s, to: e });
  }
  return out;
}

