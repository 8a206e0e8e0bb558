/**
 * Tables drawn as grids of ruling lines (a Word or LibreOffice table with
 * borders, a form): their rows and columns come from the lines, not from the
 * words. The geometry of the words alone (`reading-order.ts`) finds tables
 * whose columns line up and are wide apart; a ruled table's cells often hold
 * wrapped text, a heading spanning columns or a single label beside a value,
 * and its columns can be narrow, so the words say little there while the
 * lines say it all (docs/structure.md "Tables").
 *
 * 1. Lines: long thin runs of dark pixels along rows and along columns (as in
 *    `rules.ts`, with light on both sides; dark by a threshold nearer the
 *    paper's grey than Otsu's, {@link ruleThreshold}, as a scan's blurred
 *    rules are grey), runs on adjacent rows that overlap or continue one
 *    another (the steps of a line a scan tilted) merged into one line of some
 *    thickness.
 * 2. Grids: horizontal and vertical lines that cross or touch belong together;
 *    a group with at least two distinct rows of cells and two of columns is a
 *    grid (its outer edges where its lines end, for a table ruled only between
 *    its columns). A box drawn around a paragraph (one cell) or an underline
 *    is not; lines thicker than a rule (text merged row over row) are no lines.
 * 3. Separators too short to be lines by themselves: within a grid, a
 *    vertical rule that runs from one of its horizontal lines to the next (a
 *    form's row of one text line, 50–80 px high at 200 DPI, whose columns
 *    are not the rows' above: {@link shortSeparators}) is a column edge too.
 * 4. Cells: the bands between consecutive lines. A cell whose left line is
 *    missing in its row is joined to the cell before it (a heading spanning
 *    columns), one whose top line is missing in its column to the cell
 *    above it (a label down several rows); a merged cell's text stands in
 *    the first position it covers, and the table says its spans. Whether a
 *    line parts two cells is measured on every piece of rule ink, also those
 *    too short to be lines (a scan breaks its rules).
 * Words are placed in the cell that holds their centre.
 * 5. Blanks: horizontal lines in no grid (a form's lines to fill in, an
 *    underline) are handed to the reading order, where a gap between two
 *    words of a line that such a line fills is part of the sentence, not a
 *    column gap ("Konto Nr. ________ bei der").
 */
import type { CellSpan } from "../engines/tables.ts";
import type { LayoutNode, TextLine } from "./reading-order.ts";
import { forEachRun, otsuThreshold, type GreyImage } from "./rules.ts";
import { boundsOf, type Box, type OcrWord } from "./words.ts";

export interface RuledGrid {
  box: Box;
  /** Row edges, top to bottom (rows: one fewer). */
  ys: number[];
  /** Column edges, left to right (columns: one fewer). */
  xs: number[];
  /** `open[r][c]`: in row r, the line between column c − 1 and c is missing (c from 1): the two are one cell. */
  open: boolean[][];
  /** `joined[r][c]`: in column c, the line between row r − 1 and r is missing (r from 1): the two are one cell. */
  joined: boolean[][];
}

/** What ruling lines say about a page: its ruled tables, and its horizontal lines in none of them (module comment, 5). */
export interface PageRules {
  grids: RuledGrid[];
  blanks: Box[];
}

/** Paper whose grey spreads this much (a standard deviation, in grey levels) is a scan's; rule ink there is this many of them darker ({@link ruleThreshold}). */
const NOISY_PAPER = 2;
const RULE_CONTRAST_NOISE = 6;
/** Breaks in a line up to this many pixels (a scan's dropouts; dotted borders are `rules.ts`'s). */
const MAX_BREAK = 6;
/** A line is at least this share of the image's shorter side long (at 200 DPI on A4: 110 px, about half an inch). */
const MIN_LENGTH_SHARE = 1 / 15;
/** Rows this far from a line are probed for ink, and at most this share of its length may be dark there. */
const PROBE = 3;
const MAX_NEIGHBOUR_INK = 0.35;
/** Lines whose ends or crossings are this close (pixels) meet. */
const MEET = 5;
/** A line is at most this share of the image's shorter side thick (and at least 5 pixels may be), or this share of its length (a long line a scan tilted spans more rows): runs of text merged row over row are thicker. */
const MAX_THICKNESS_SHARE = 1 / 250;
const MAX_TILT = 0.025;
/**
 * A line a scan tilted crosses a row of pixels for (its thickness / the
 * tilt) pixels: at 1.2° a 2-pixel rule is a staircase of steps about 100
 * pixels long, each under a line's length. Steps down to this many pixels
 * (or a sixth of a line's length) are gathered, and steps on adjacent rows
 * that continue one another are one line ({@link merge}).
 */
const MIN_STEP = 20;
/** Images with a shorter side under this many pixels (a line of text, a snippet, a thumbnail) hold no ruled table worth finding. */
const MIN_SIDE = 500;
/** Lines at most this share of the image's shorter side apart (and at least 6 pixels) are one edge of the grid: a double border, a line a scan bent or broke into pieces side by side. */
const SAME_EDGE_SHARE = 1 / 100;
/**
 * A line between two columns (rows) counts in a row (column) when its pieces
 * cover at least this share of the row's height (column's width): a scan
 * breaks lines. A piece shorter than a line counts only where it reaches to
 * within {@link MEET} pixels of the row's top or bottom (the column's sides),
 * as a broken separator does: a letter's stem floats inside its cell
 * (gen_016, a dev page: the "d" of "Seconds", 2 px from the missing line
 * under a header over two columns, 20 px of a 53-px row, closed the merge).
 */
const MIN_SEPARATOR_COVER = 0.3;
/**
 * A column of pixels is a short separator when it is dark over at least this
 * share of the band between two of the grid's horizontal lines, and the
 * columns {@link PROBE} pixels beside it are dark over at most
 * {@link MAX_NEIGHBOUR_INK} of it: a letter's stem is neither as tall as the
 * row nor alone (the tallest letters of a row fill about two thirds of it).
 */
const SHORT_SEPARATOR_FILL = 0.9;

interface Line {
  /** Across the line: its first and last row (horizontal) or column (vertical). */
  a0: number;
  a1: number;
  /** Along it. */
  b0: number;
  b1: number;
}

/** The ruled grids and blanks of a page (see the module comment), in pixels of `img`. */
export function findPageRules(img: GreyImage): PageRules {
  const { width, height, pixels } = img;
  if (Math.min(width, height) < MIN_SIDE) return { grids: [], blanks: [] };
  const t = ruleThreshold(pixels);
  const minLength = Math.max(30, Math.round(Math.min(width, height) * MIN_LENGTH_SHARE));
  const sameEdge = Math.max(6, Math.round(Math.min(width, height) * SAME_EDGE_SHARE));
  // Dark pixels row by row, and the same column by column (transposed once: scanning columns of the
  // row-major image would miss the cache at every pixel).
  const rows = new Uint8Array(width * height);
  for (let i = 0; i < rows.length; i++) rows[i] = pixels[i]! <= t ? 1 : 0;
  const columns = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0, i = y * width; x < width; x++, i++) columns[x * height + y] = rows[i]!;
  const maxThickness = Math.max(5, Math.round(Math.min(width, height) * MAX_THICKNESS_SHARE));
  const thin = (l: Line) => l.a1 - l.a0 + 1 <= Math.max(maxThickness, MAX_TILT * (l.b1 - l.b0 + 1));
  // Runs shorter than a line are gathered too: a line a scan tilted is a staircase of them, one per row.
  const minRun = Math.max(MIN_STEP, Math.round(minLength / 6));
  const long = (l: Line) => l.b1 - l.b0 + 1 >= minLength;
  const hPieces = merge(runs(rows, height, width, minRun)).filter(thin);
  const vPieces = merge(runs(columns, width, height, minRun)).filter(thin);
  const horizontal = hPieces.filter(long);
  const vertical = vPieces.filter(long);
  if (!horizontal.length) return { grids: [], blanks: [] };

  // Union of lines that meet: horizontal i is i, vertical j is horizontal.length + j.
  const parent = Array.from({ length: horizontal.length + vertical.length }, (_, i) => i);
  const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i]!)));
  horizontal.forEach((h, i) => {
    vertical.forEach((v, j) => {
      const meets = v.a1 >= h.b0 - MEET && v.a0 <= h.b1 + MEET && h.a1 >= v.b0 - MEET && h.a0 <= v.b1 + MEET;
      if (meets) parent[find(i)] = find(horizontal.length + j);
    });
  });
  const groups = new Map<number, { h: Line[]; v: Line[] }>();
  horizontal.forEach((h, i) => group(find(i)).h.push(h));
  vertical.forEach((v, j) => group(find(horizontal.length + j)).v.push(v));
  function group(root: number) {
    let g = groups.get(root);
    if (!g) groups.set(root, (g = { h: [], v: [] }));
    return g;
  }

  const grids: RuledGrid[] = [];
  const loose: Line[] = [];
  const page = { columns, height, sameEdge, maxThickness, lines: horizontal, pieces: { h: hPieces.filter((l) => !long(l)), v: vPieces.filter((l) => !long(l)) } };
  for (const { h, v } of groups.values()) {
    const found = v.length ? stackedGrids(h, v, page) : [];
    if (found.length) grids.push(...found);
    else loose.push(...h);
  }
  const short = shortGrids(loose, page);
  return { grids: [...grids, ...short.grids], blanks: short.rest.map((l) => ({ x0: l.b0, y0: l.a0, x1: l.b1, y1: l.a1 })) };
}

interface PageMask {
  /** Every horizontal line of the page. */
  lines: readonly Line[];
  /** Thin runs of rule ink too short to be lines (pieces a scan broke off them); with the lines they say whether two cells are parted. */
  pieces: { h: readonly Line[]; v: readonly Line[] };
  /** The page's dark mask column by column (`height` pixels each). */
  columns: Uint8Array;
  height: number;
  sameEdge: number;
  maxThickness: number;
}

const middle = (l: Line) => (l.a0 + l.a1) / 2;

/**
 * The grids a group of lines that meet makes: one, or (two tables set one
 * right under the other, sharing a border) one above and one below the
 * horizontal line that no column line runs through, where column lines end
 * above it and others start below it (gen_064, a dev page: its tables of 3
 * and 6 columns were one grid of 9 whose cells spanned the other's columns).
 */
function stackedGrids(h: Line[], v: Line[], page: PageMask): RuledGrid[] {
  const grid = gridOf(h, v, page);
  if (!grid) return [];
  const { sameEdge } = page;
  const [left, right] = [grid.xs[0]!, grid.xs[grid.xs.length - 1]!];
  const inner = v.filter((l) => middle(l) > left + sameEdge && middle(l) < right - sameEdge);
  const at = grid.ys.slice(1, -1).find(
    (y) =>
      !inner.some((l) => l.b0 < y - sameEdge && l.b1 > y + sameEdge) &&
      inner.some((l) => Math.abs(l.b1 - y) <= sameEdge) &&
      inner.some((l) => Math.abs(l.b0 - y) <= sameEdge),
  );
  if (at === undefined) return [grid];
  // Each part keeps the shared line and the pieces of the lines on its side (the outer borders run through both).
  const clip = (l: Line, b0: number, b1: number): Line | null => (Math.min(l.b1, b1) - Math.max(l.b0, b0) > sameEdge ? { ...l, b0: Math.max(l.b0, b0), b1: Math.min(l.b1, b1) } : null);
  const part = (b0: number, b1: number) =>
    stackedGrids(
      h.filter((l) => middle(l) >= b0 - sameEdge && middle(l) <= b1 + sameEdge),
      v.map((l) => clip(l, b0, b1)).filter((l): l is Line => l !== null),
      page,
    );
  return [...part(-Infinity, at), ...part(at, Infinity)];
}

/** The grid a group of lines that meet makes (module comment, 2–4), or null when it is not one. */
function gridOf(h: Line[], v: Line[], page: PageMask): RuledGrid | null {
  const { columns, height, sameEdge, maxThickness } = page;
  if (!h.length) return null;
  // A table ruled between its columns but not at its sides (nor between rows) ends where its other lines end.
  const ys = edges([...h.map((l) => (l.a0 + l.a1) / 2), Math.min(...v.map((l) => l.b0)), Math.max(...v.map((l) => l.b1))], sameEdge);
  const xs = edges([...v.map((l) => (l.a0 + l.a1) / 2), Math.min(...h.map((l) => l.b0)), Math.max(...h.map((l) => l.b1))], sameEdge);
  // Two rows and two columns at least: a box around a paragraph, a header row alone or a pair of underlines is not a table.
  if (ys.length < 3 || xs.length < 3) return null;
  const short = shortSeparators(columns, height, ys, xs[0]!, xs[xs.length - 1]!, maxThickness);
  const all = [...v, ...short];
  if (short.length) xs.splice(0, xs.length, ...edges([...xs, ...short.map((l) => (l.a0 + l.a1) / 2)], sameEdge));
  return grid(ys, xs, all, page);
}

/**
 * A grid of rows `ys` and columns `xs`, a cell open to the one before it
 * where neither `verticals` (the grid's lines) nor the page's pieces of rule
 * ink separate them, joined to the one above where neither the page's
 * horizontal lines nor its pieces do ({@link MIN_SEPARATOR_COVER}).
 */
function grid(ys: number[], xs: number[], verticals: readonly Line[], page: PageMask): RuledGrid {
  const { sameEdge } = page;
  /** How much of the span from `from` to `to` the lines and pieces at `at` cover; a piece only where it reaches near an end. */
  const cover = (lines: readonly Line[], pieces: readonly Line[], at: number, from: number, to: number) =>
    [...lines, ...pieces.filter((l) => l.b0 <= from + MEET || l.b1 >= to - MEET)]
      .filter((l) => Math.abs(middle(l) - at) <= sameEdge)
      .reduce((sum, l) => sum + Math.max(0, Math.min(l.b1, to) - Math.max(l.b0, from)), 0);
  const open = ys.slice(0, -1).map((y0, r) => {
    const y1 = ys[r + 1]!;
    return xs.map((x, c) => {
      // The outer edges are no line between two cells.
      if (c === 0 || c === xs.length - 1) return false;
      return cover(verticals, page.pieces.v, x, y0, y1) < MIN_SEPARATOR_COVER * (y1 - y0);
    });
  });
  const joined = ys.slice(0, -1).map((y, r) =>
    xs.slice(0, -1).map((x0, c) => {
      // The top edge is no line between two cells.
      if (r === 0) return false;
      const x1 = xs[c + 1]!;
      return cover(page.lines, page.pieces.h, y, x0, x1) < MIN_SEPARATOR_COVER * (x1 - x0);
    }),
  );
  return { box: { x0: xs[0]!, y0: ys[0]!, x1: xs[xs.length - 1]!, y1: ys[ys.length - 1]! }, ys, xs, open, joined };
}

/**
 * Tables whose vertical lines are all too short to be found (module comment,
 * 3: a table of one-line rows, its rows 40–80 pixels high at 200 DPI): among
 * horizontal lines in no grid, lines of one extent (both ends within
 * `sameEdge`) stacked one under the other are rows where each band between
 * them has short separators; two such bands in a row or more, with a
 * separator strictly inside, are a grid. A box around a paragraph (no
 * separator inside) and a form's stacked lines to fill in (text between
 * them, no rule the band's height) are not. The lines of no such grid are
 * the page's blanks.
 */
function shortGrids(lines: readonly Line[], page: PageMask): { grids: RuledGrid[]; rest: Line[] } {
  const { columns, height, sameEdge, maxThickness } = page;
  const used = new Set<Line>();
  const grids: RuledGrid[] = [];
  const stacks: Line[][] = [];
  for (const l of [...lines].sort((a, b) => a.a0 - b.a0)) {
    const stack = stacks.find((c) => Math.abs(c[0]!.b0 - l.b0) <= sameEdge && Math.abs(c[0]!.b1 - l.b1) <= sameEdge);
    if (stack) stack.push(l);
    else stacks.push([l]);
  }
  for (const stack of stacks) {
    // Two rows need three lines.
    if (stack.length < 3) continue;
    const ys = edges(stack.map(middle), sameEdge);
    const x0 = Math.min(...stack.map((l) => l.b0));
    const x1 = Math.max(...stack.map((l) => l.b1));
    const separators = ys.slice(0, -1).map((y, r) => shortSeparators(columns, height, [y, ys[r + 1]!], x0, x1, maxThickness));
    // Runs of consecutive bands that each have a separator.
    let start = 0;
    for (let r = 0; r <= separators.length; r++) {
      if (r < separators.length && separators[r]!.length) continue;
      const v = separators.slice(start, r).flat();
      const xs = edges([x0, x1, ...v.map(middle)], sameEdge);
      if (r - start >= 2 && xs.length >= 3) {
        const rows = ys.slice(start, r + 1);
        grids.push(grid(rows, xs, v, page));
        for (const l of stack) if (middle(l) >= rows[0]! - sameEdge && middle(l) <= rows[rows.length - 1]! + sameEdge) used.add(l);
      }
      start = r + 1;
    }
  }
  return { grids, rest: lines.filter((l) => !used.has(l)) };
}

/**
 * The vertical rules of a grid's rows too short to be found as lines (module
 * comment, 3): in each band between consecutive edges `ys`, strictly between
 * `x0` and `x1`, runs of adjacent pixel columns dark over
 * {@link SHORT_SEPARATOR_FILL} of the band, at most `maxThickness` wide, with
 * light columns beside them. `columns` is the page's dark mask column by
 * column (`height` pixels each).
 */
function shortSeparators(columns: Uint8Array, height: number, ys: readonly number[], x0: number, x1: number, maxThickness: number): Line[] {
  const found: Line[] = [];
  for (let r = 0; r + 1 < ys.length; r++) {
    const top = Math.round(ys[r]!);
    const bottom = Math.round(ys[r + 1]!);
    const span = bottom - top + 1;
    const fill = (x: number) => {
      let dark = 0;
      for (let y = top, i = x * height + top; y <= bottom; y++, i++) dark += columns[i]!;
      return dark / span;
    };
    let start = -1;
    for (let x = x0 + PROBE + 1; x <= x1 - PROBE; x++) {
      const tall = x < x1 - PROBE && fill(x) >= SHORT_SEPARATOR_FILL;
      if (tall && start < 0) start = x;
      if (tall || start < 0) continue;
      const last = x - 1;
      if (last - start + 1 <= maxThickness && fill(start - PROBE) <= MAX_NEIGHBOUR_INK && fill(last + PROBE) <= MAX_NEIGHBOUR_INK) {
        found.push({ a0: start, a1: last, b0: top, b1: bottom });
      }
      start = -1;
    }
  }
  return found;
}

/** Long thin runs along each of `lines` lines of `length` dark-or-not bytes in `mask` (see the module comment). */
function runs(mask: Uint8Array, lines: number, length: number, minLength: number): Line[] {
  const out: Line[] = [];
  const dark = (line: number, p: number) => line >= 0 && line < lines && mask[line * length + p] === 1;
  forEachRun(lines, length, MAX_BREAK, dark, (line, start, last) => {
    if (last - start + 1 < minLength) return;
    let neighbours = 0;
    for (let p = start; p <= last; p++) if (dark(line - PROBE, p) && dark(line + PROBE, p)) neighbours++;
    if (neighbours <= MAX_NEIGHBOUR_INK * (last - start + 1)) out.push({ a0: line, a1: line, b0: start, b1: last });
  });
  return out;
}

/**
 * Darker than this is ink of a rule. On clean paper, Otsu's threshold (ink
 * against paper). On a scan's noisy paper, six times the paper's noise
 * below its grey (the median pixel): a thin rule a scan
 * blurred is mid-grey, 140–150 against paper at 234 with noise of about 9
 * and blurred text on the generated corpus's dev scan gen_012 (Otsu 159,
 * this 181); by Otsu alone half of its pixels are paper, and its breaks cut
 * it into pieces too short to be a line. A table's shading (200 and
 * lighter) stays paper.
 */
function ruleThreshold(pixels: Uint8Array): number {
  const counts = new Uint32Array(256);
  for (const v of pixels) counts[v]!++;
  const quantile = (q: number) => {
    let v = 0;
    for (let seen = counts[0]!; v < 255 && seen < q * pixels.length; seen += counts[++v]!);
    return v;
  };
  const paper = quantile(0.5);
  // The spread of the paper's grey from its upper half, median to upper quartile (the white a straightened page's corners add lies beyond it).
  const noise = (quantile(0.75) - paper) / 0.674;
  return noise >= NOISY_PAPER ? Math.round(paper - RULE_CONTRAST_NOISE * noise) : otsuThreshold(pixels);
}

/** Runs on adjacent rows (columns) that overlap along their length become one line; `found` is in row order. */
function merge(found: Line[]): Line[] {
  const lines: Line[] = [];
  // Lines that reached the previous row or this one: the only ones a run can continue.
  let active: Line[] = [];
  let row = -1;
  let next: Line[] = [];
  for (const r of found) {
    if (r.a0 !== row) {
      active = r.a0 === row + 1 ? [...active.filter((l) => l.a1 >= row), ...next] : [];
      next = [];
      row = r.a0;
    }
    const into = active.find((l) => {
      const overlap = Math.min(l.b1, r.b1) - Math.max(l.b0, r.b0);
      if (overlap > 0.5 * Math.min(l.b1 - l.b0, r.b1 - r.b0)) return true;
      // The next step of a tilted line: it starts where the line ends (or ends where it starts), give or take a break.
      const slack = Math.max(MAX_BREAK, 0.5 * Math.min(l.b1 - l.b0, r.b1 - r.b0));
      return (r.b1 > l.b1 && r.b0 >= l.b1 - slack && r.b0 <= l.b1 + MAX_BREAK) || (r.b0 < l.b0 && r.b1 <= l.b0 + slack && r.b1 >= l.b0 - MAX_BREAK);
    });
    if (into) {
      into.a1 = Math.max(into.a1, r.a1);
      into.b0 = Math.min(into.b0, r.b0);
      into.b1 = Math.max(into.b1, r.b1);
    } else {
      const line = { ...r };
      lines.push(line);
      next.push(line);
    }
  }
  return lines;
}

/** Positions within `same` pixels of each other as one edge (their mean), sorted. */
function edges(at: number[], same: number): number[] {
  const sorted = [...at].sort((a, b) => a - b);
  const out: number[][] = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last && p - last[last.length - 1]! <= same) last.push(p);
    else out.push([p]);
  }
  return out.map((g) => Math.round(g.reduce((s, p) => s + p, 0) / g.length));
}

/** Whether a word's centre lies in the grid. */
export function inGrid(grid: RuledGrid, w: Box): boolean {
  const cx = (w.x0 + w.x1) / 2;
  const cy = (w.y0 + w.y1) / 2;
  return cx >= grid.box.x0 && cx <= grid.box.x1 && cy >= grid.box.y0 && cy <= grid.box.y1;
}

/**
 * The grid as a table node of the layout, its words (those {@link inGrid})
 * in their cells, a merged cell's in the first position it covers, with
 * its spans; null when fewer than two cells hold words (a frame around a
 * paragraph, a form left blank).
 */
export function gridTable(grid: RuledGrid, words: readonly OcrWord[]): Extract<LayoutNode, { kind: "table" }> | null {
  const cols = grid.xs.length - 1;
  const origins = mergedCells(grid);
  const bands: OcrWord[][][] = Array.from({ length: grid.ys.length - 1 }, () => Array.from({ length: cols }, () => []));
  for (const w of words) {
    const [r, c] = origins[band(grid.ys, (w.y0 + w.y1) / 2)]![band(grid.xs, (w.x0 + w.x1) / 2)]!;
    bands[r]![c]!.push(w);
  }
  // A band is split into a row per line of text only where no merged cell reaches across its top or bottom.
  const crossed = (r: number) => origins[r]!.some(([or], c) => or !== r || origins[r + 1]?.[c]?.[0] === r);
  const rows: OcrWord[][][] = [];
  const first: number[] = [];
  for (const [r, b] of bands.entries()) {
    first.push(rows.length);
    rows.push(...(crossed(r) ? [b] : splitRows(b)));
  }
  first.push(rows.length);
  if (rows.flat().filter((c) => c.length > 0).length < 2) return null;
  // Rows with no word (a ruled space, a row of empty cells) say nothing.
  const kept = rows.map((row) => row.some((c) => c.length > 0));
  const index = kept.map((_, i) => kept.slice(0, i).filter(Boolean).length);
  const spans: CellSpan[] = [];
  for (const [r, row] of origins.entries()) {
    for (const [c, [or, oc]] of row.entries()) {
      if (or !== r || oc !== c) continue;
      let end = r + 1;
      while (end < origins.length && origins[end]![c]![0] === r && origins[end]![c]![1] === c) end++;
      let right = c + 1;
      while (right < cols && origins[r]![right]![0] === r && origins[r]![right]![1] === c) right++;
      if (end - r === 1 && right - c === 1) continue;
      // Each row the band was split into keeps the cell's columns; its rows are the kept rows it covers.
      for (let k = first[r]!; k < first[r + 1]!; k++) {
        if (!kept[k]) continue;
        const below = end - r > 1 ? kept.slice(k, first[end]!).filter(Boolean).length : 1;
        if (below > 1 || right - c > 1) spans.push({ row: index[k]!, col: c, rows: below, cols: right - c });
      }
    }
  }
  const table = rows.filter((_, i) => kept[i]).map((row) => row.map((ws) => (ws.length ? leaf(ws) : null)));
  return { kind: "table", box: boundsOf(words), rows: table, ...(spans.length ? { spans } : {}) };
}

/**
 * Each position's merged cell, as the position it starts at: left while the
 * line before it is missing, up while the line above it is. A merge that is
 * not a rectangle (a line a scan broke in one row only) is no merge: its
 * positions are cells of their own.
 */
function mergedCells(grid: RuledGrid): [number, number][][] {
  const rows = grid.ys.length - 1;
  const cols = grid.xs.length - 1;
  const origins = Array.from({ length: rows }, (_, r) =>
    Array.from({ length: cols }, (_, c): [number, number] => {
      let [or, oc] = [r, c];
      for (;;) {
        if (oc > 0 && grid.open[or]![oc]) oc--;
        else if (or > 0 && grid.joined[or]![oc]) or--;
        else return [or, oc];
      }
    }),
  );
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const [or, oc] = origins[r]![c]!;
      if (or === r && oc === c) continue;
      // The rectangle from the origin to this position must all be the origin's.
      const whole = origins.slice(or, r + 1).every((row) => row.slice(oc, c + 1).every(([a, b]) => a === or && b === oc));
      if (!whole) origins[r]![c] = [r, c];
    }
  }
  return origins;
}

/** A row band holds rows of its own when at least this many lines of text… */
const MIN_UNRULED_ROWS = 3;
/** …line up across at least two columns, each with text on at least this share of them. */
const MIN_ALIGNED_SHARE = 0.6;

/**
 * A band between two horizontal lines as rows: one, or (a table ruled only
 * between its columns, its rows not ruled) one per line of text where the
 * columns' lines line up. Wrapped text in one cell beside a single line in
 * the next (a label over several lines) stays one row.
 */
function splitRows(band: OcrWord[][]): OcrWord[][][] {
  const all = band.flat();
  if (all.length < MIN_UNRULED_ROWS * 2) return [band];
  const heights = all.map((w) => w.y1 - w.y0).sort((a, b) => a - b);
  const h = heights[heights.length >> 1]!;
  // Text lines of the band by their centres, tesseract's lines of every column together.
  const centres = [...new Set(all.map((w) => w.line))]
    .map((line) => {
      const ws = all.filter((w) => w.line === line);
      return ws.reduce((s, w) => s + (w.y0 + w.y1) / 2, 0) / ws.length;
    })
    .sort((a, b) => a - b);
  const rows: number[][] = [];
  for (const c of centres) {
    const last = rows[rows.length - 1];
    if (last && c - last[last.length - 1]! <= h / 2) last.push(c);
    else rows.push([c]);
  }
  if (rows.length < MIN_UNRULED_ROWS) return [band];
  const mids = rows.map((r) => r.reduce((s, c) => s + c, 0) / r.length);
  const rowOf = (w: OcrWord) => {
    const cy = (w.y0 + w.y1) / 2;
    let best = 0;
    for (let i = 1; i < mids.length; i++) if (Math.abs(mids[i]! - cy) < Math.abs(mids[best]! - cy)) best = i;
    return best;
  };
  const filled = band.filter((ws) => new Set(ws.map(rowOf)).size >= MIN_ALIGNED_SHARE * rows.length);
  if (filled.length < 2) return [band];
  return mids.map((_, i) => band.map((ws) => ws.filter((w) => rowOf(w) === i)));
}

/** The band of `edges` that holds `p` (clamped to the first and last). */
function band(edges: readonly number[], p: number): number {
  let i = 0;
  while (i < edges.length - 2 && p >= edges[i + 1]!) i++;
  return i;
}

/** A cell's words as a leaf: tesseract's lines, top to bottom, each left to right. */
function leaf(words: OcrWord[]): LayoutNode {
  const byLine = new Map<string, OcrWord[]>();
  for (const w of words) byLine.set(w.line, [...(byLine.get(w.line) ?? []), w]);
  const lines: TextLine[] = [...byLine.values()]
    .map((ws) => ws.sort((a, b) => a.x0 - b.x0))
    .map((ws) => ({ words: ws, box: boundsOf(ws) }))
    .sort((a, b) => a.box.y0 - b.box.y0);
  return { kind: "leaf", box: boundsOf(words), lines };
}

/** Rules found on an image, in pixels of that image scaled by `factor` (a page read enlarged). */
export function scaleRules(rules: PageRules, factor: number): PageRules {
  const s = (v: number) => Math.round(v * factor);
  const box = (b: Box): Box => ({ x0: s(b.x0), y0: s(b.y0), x1: s(b.x1), y1: s(b.y1) });
  return {
    grids: rules.grids.map((g) => ({ box: box(g.box), ys: g.ys.map(s), xs: g.xs.map(s), open: g.open, joined: g.joined })),
    blanks: rules.blanks.map(box),
  };
}
