/**
 * Reading order and page structure from word boxes: a recursive XY-cut.
 *
 * A region of words is cut where a band of whitespace crosses all of it:
 * across (a horizontal gap: the words above are read before the words below)
 * or down (a vertical gap: columns, or the cells of a table row). The widest
 * gap, measured in line heights, is cut first, so a title above two columns
 * comes off before the columns are separated, and the columns before their
 * lines. Where a region has vertical gaps it is either prose in columns (read
 * column after column) or a table (read row after row, each row cell after
 * cell). The test: a region whose columns are all wide enough for prose, or
 * whose lines do not line up across the gap, is columns; a region with a
 * narrow column whose lines line up with its neighbours' is a table (a
 * statement, a receipt's price column, a form's fields).
 *
 * Decisions a reader may question:
 * - What is cut are runs of a tesseract line's words without a column gap
 *   inside, at the height of their line. Runs without a letter or digit
 *   (rules read as dashes or colons, specks) do not hold gaps open or shut:
 *   they are placed afterwards, in the nearest region.
 * - A gap between two words of a line that a horizontal rule fills, and
 *   only the gap (a form's line to fill in: "Konto Nr. ________ bei der"),
 *   is part of the sentence, not a column gap: the rules are `blanks`, found
 *   in the page's pixels (`grid.ts`). A rule running under the words too (a
 *   table's header underlined) fills no gap of its own.
 * - Small rotations of a scan are undone before cutting (the slope of
 *   tesseract's own lines), otherwise no gap crosses a tilted page.
 * - Thresholds are in units of the page's median line height, so they hold
 *   at any resolution; their values were chosen on the corpus described in
 *   docs/benchmarks.md and are the same for every page.
 */
import type { CellSpan } from "../engines/tables.ts";
import {
  MIN_COLUMN_GAP,
  MIN_COLUMN_LINES,
  MIN_ROW_ALIGNMENT,
  alignment,
  freeSpans,
  gaps,
  interior,
  intersect,
  isProseColumn,
  lineBands,
  split,
  tableGroups,
  type Gap,
} from "./columns.ts";
import { isMarkerText } from "./markdown.ts";
import { boundsOf, isSymbolOnly, median, type Box, type OcrWord } from "./words.ts";

/**
 * A line of a single run (one cell filled) joins the table above it only
 * when the space above it is at most this many times the rows' own (their
 * median) and this many word heights more: a heading set right under a
 * table has its paragraph spacing above it (gen_066, a dev page: two
 * headings read as rows of the table above them).
 */
const ROW_SPACING_GROWTH = 1.5;
const MIN_ROW_SPACING_SLACK = 0.25;
/**
 * …unless it is at least this many word heights and runs between two
 * columns, by the evidence of at least {@link MIN_COLUMN_LINES} lines each
 * with a run of words ending left of it and another starting right of it
 * (each line's own gap being a column gap): right-aligned numbers beside a
 * left-aligned column leave a narrow valley in their union though every
 * row's gap is wide. On the generated corpus's dev pages such valleys are
 * 0.75–0.95 word heights (gen_005: 19–21 px, gen_104: 23 px, at a word
 * height of 25), and the spaces between words 0.4–0.45 (11 px).
 */
const MIN_ALIGNED_COLUMN_GAP = 0.6;
/** A cell's edge lines up with its column's other cells within this many word heights. */
const CELL_EDGE_SLACK = 0.5;
/** Lines set aside at most to find the column gaps a cell spanning columns closes ({@link columnGaps}). */
const MAX_SPANNING_LINES = 2;
/** Bands further apart than this many line heights are never one section. */
const MAX_SECTION_GAP = 3;
/** A gap two bands share must be at least this share of the gap it lies in on either side (where ink bounds it). */
const SHARED_GAP_SHARE = 0.5;

export interface TextLine {
  words: OcrWord[];
  box: Box;
}

export type LayoutNode =
  | { kind: "leaf"; box: Box; lines: TextLine[] }
  | { kind: "stack"; box: Box; children: LayoutNode[] }
  | { kind: "columns"; box: Box; children: LayoutNode[] }
  /** Rows of a table, top to bottom; each row's cells left to right, one per column (null: an empty cell, or a position a merged cell covers); `spans`: its merged cells. */
  | { kind: "table"; box: Box; rows: (LayoutNode | null)[][]; spans?: CellSpan[] };

export interface ReadingOrder {
  root: LayoutNode | null;
  /** The median word height the thresholds were scaled by. */
  wordHeight: number;
  /** Slope undone before cutting (dy/dx). */
  skew: number;
}

/** Orders a page's words (and `blanks`, horizontal rules in no table): see the module comment. The words' boxes are not changed. */
export function readingOrder(words: readonly OcrWord[], blanks: readonly Box[] = []): ReadingOrder {
  const skew = estimateSkew(words);
  const pivot = words.length ? boundsOf(words).x0 : 0;
  // Cut on straightened copies; the original word objects ride along for the output.
  const straight = words.map((w) => straighten(w, skew, pivot));
  const rules = blanks.map((b) => straighten(b, skew, pivot));
  const h = lineHeight(straight) || 1;
  const all = segments(straight, MIN_COLUMN_GAP * h, rules);
  const solid = all.filter((s) => !s.words.every((w) => isSymbolOnly(w.text)));
  const items = solid.length ? solid : all;
  const symbols = solid.length ? all.filter((s) => !solid.includes(s)) : [];
  const root = items.length ? cut(items, h) : null;
  if (root) {
    const leaves = leavesOf(root);
    if (symbols.length) placeSymbols(leaves, symbols, h);
    for (const l of leaves) {
      l.lines = toLines(l.items);
      l.box = boundsOf(l.lines.map((x) => x.box));
      delete (l as Partial<Leaf>).items;
    }
  }
  return { root, wordHeight: h, skew };
}

/** A word (or a blank) with its box straightened (skew undone). */
interface Straight<T extends Box = OcrWord> extends Box {
  word: T;
}

/**
 * What the cut moves: a run of one tesseract line's words with no column gap
 * inside (a cell, a line of prose, a line's part on one side of a gutter).
 * Its height is the line's: the median top and bottom of the line's words,
 * so one tall box (a word fused with a rule under it) does not close the
 * gaps above and below the line.
 */
interface Item extends Box {
  words: OcrWord[];
  line: string;
}

function segments(words: readonly Straight[], minGap: number, blanks: readonly Box[]): Item[] {
  const byLine = new Map<string, Straight[]>();
  for (const w of words) {
    const l = byLine.get(w.word.line);
    if (l) l.push(w);
    else byLine.set(w.word.line, [w]);
  }
  const out: Item[] = [];
  for (const [line, ws] of byLine) {
    ws.sort((a, b) => a.x0 - b.x0);
    const y0 = median(ws.map((w) => w.y0));
    const y1 = Math.max(y0 + 1, median(ws.map((w) => w.y1)));
    let run: Straight[] = [];
    const flush = () => {
      if (run.length) out.push({ x0: run[0]!.x0, x1: Math.max(...run.map((w) => w.x1)), y0, y1, words: run.map((w) => w.word), line });
      run = [];
    };
    for (const w of ws) {
      const end = run.length ? Math.max(...run.map((r) => r.x1)) : 0;
      if (run.length && w.x0 - end >= minGap && !filled(end, w.x0, y0, y1, blanks, minGap)) flush();
      run.push(w);
    }
    flush();
  }
  return out;
}

/**
 * Whether a blank fills the gap from `from` to `to` in a line from `y0` to
 * `y1`: it lies between the line's middle and half a line below it, covers
 * at least half of the gap, and reaches under neither neighbour by more than
 * half of `space` (a word space).
 */
function filled(from: number, to: number, y0: number, y1: number, blanks: readonly Box[], space: number): boolean {
  const mid = (y0 + y1) / 2;
  const below = y1 + (y1 - y0) / 2;
  return blanks.some((b) => {
    const y = (b.y0 + b.y1) / 2;
    return y >= mid && y <= below && b.x0 >= from - space / 2 && b.x1 <= to + space / 2 && Math.min(b.x1, to) - Math.max(b.x0, from) >= (to - from) / 2;
  });
}

/**
 * The page's text size: the median height of tesseract's lines (ascenders to
 * descenders), steadier than word heights, which shrink to the x-height for
 * words like "a" or "one".
 */
function lineHeight(words: readonly Straight[]): number {
  const lines = new Map<string, { y0: number; y1: number }>();
  for (const it of words) {
    const l = lines.get(it.word.line);
    if (l) {
      l.y0 = Math.min(l.y0, it.y0);
      l.y1 = Math.max(l.y1, it.y1);
    } else lines.set(it.word.line, { y0: it.y0, y1: it.y1 });
  }
  return median([...lines.values()].map((l) => l.y1 - l.y0));
}

function straighten<T extends Box>(w: T, skew: number, pivot: number): Straight<T> {
  const dy = skew * ((w.x0 + w.x1) / 2 - pivot);
  return { x0: w.x0, x1: w.x1, y0: w.y0 - dy, y1: w.y1 - dy, word: w };
}

/** Median slope of tesseract's lines of three or more words (word centres, least squares); 0 when there are none. */
export function estimateSkew(words: readonly OcrWord[]): number {
  const byLine = new Map<string, OcrWord[]>();
  for (const w of words) {
    if (isSymbolOnly(w.text)) continue;
    const l = byLine.get(w.line);
    if (l) l.push(w);
    else byLine.set(w.line, [w]);
  }
  const slopes: number[] = [];
  for (const ws of byLine.values()) {
    if (ws.length < 3) continue;
    const xs = ws.map((w) => (w.x0 + w.x1) / 2);
    const ys = ws.map((w) => w.y1);
    const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
    const my = ys.reduce((a, b) => a + b, 0) / ys.length;
    let sxx = 0;
    let sxy = 0;
    for (let i = 0; i < xs.length; i++) {
      sxx += (xs[i]! - mx) ** 2;
      sxy += (xs[i]! - mx) * (ys[i]! - my);
    }
    if (sxx > 0) slopes.push(sxy / sxx);
  }
  if (slopes.length < 3) return 0;
  const s = median(slopes);
  // Under about 0.3 degrees nothing is gained; over 10 degrees this is not a tilted scan.
  return Math.abs(s) < 0.005 || Math.abs(s) > 0.18 ? 0 : s;
}

function cut(items: Item[], h: number, region?: Box): LayoutNode {
  const box = boundsOf(items);
  if (items.length === 1) return leaf(items, box);
  const minGap = MIN_COLUMN_GAP * h;
  const across = gaps(items, "y", 1);
  const down = across.length ? withinColumns(items, columnGaps(items, h), h) : gaps(items, "x", minGap);
  if (across.length > 0) {
    // Blocks one above the other first: neighbouring bands that share column gaps (a
    // gutter, a table's column gaps) are one section, cut again as a whole, so columns
    // are found before their lines are separated, and two sections (columns above, a
    // table below) are not read as columns running through both.
    const within = region ?? box;
    const sections = sectionsOf(split(items, "y", across), within, h);
    if (sections.length > 1 || down.length === 0) {
      const children: LayoutNode[] = [];
      for (const section of sections) {
        const union = section.flat();
        // A section is cut again only when a column gap runs through its words; otherwise its bands stand alone.
        if (section.length > 1 && columnGaps(union, h).length > 0) children.push(cut(union, h, within));
        else children.push(...section.map((b) => cut(b, h, within)));
      }
      return stack(children, box);
    }
  }
  if (down.length === 0) return leaf(items, box);
  const columns = split(items, "x", down);
  if (columns.every((c) => isProseColumn(c, h))) return { kind: "columns", box, children: columns.map((c) => cut(c, h)) };
  // Neighbouring columns whose lines line up belong to one table; the groups are read one after the other.
  const groups = tableGroups(columns, h);
  if (groups.length > 1) {
    // Scraps beside each other that are neither prose nor a table (a receipt's "1 No" above
    // "GST TA AMT RM4.72") are read line by line across.
    const scraps = groups.some((g) => !isProseColumn(g.flat(), h) && lineBands(g.flat()).length < MIN_COLUMN_LINES);
    if (scraps) return leaf(items, box);
    return { kind: "columns", box, children: groups.map((g) => cut(g.flat(), h)) };
  }
  if (across.length > 0) return table(items, box, down, across, h);
  // One band cut by wide spaces: a line of words is one leaf; cells holding several lines are read cell by cell.
  const cells = columns.map((c) => cut(c, h));
  if (cells.every((c) => c.kind === "leaf" && lineCount(c) <= 1)) return leaf(items, box);
  // Cells whose lines line up across the band are rows that no gap separates (tight
  // leading, a tilt): read line by line. A cell wrapped beside one-line cells is read as a cell.
  const bands = columns.map(lineBands);
  if (bands.every((b, i) => i === 0 || alignment(bands[i - 1]!, b) >= MIN_ROW_ALIGNMENT) && bands.every((b) => b.length === bands[0]!.length)) return leaf(items, box);
  return { kind: "table", box, rows: [cells] };
}

/**
 * Column gaps down a region of several lines: those of all its lines
 * ({@link alignedGaps}), or more where setting aside one or two lines opens
 * them (at most {@link MAX_SPANNING_LINES}, leaving at least
 * {@link MIN_COLUMN_LINES} to bear each gap out): a header cell set over two
 * columns ("Revenue (EUR)" over "2023" and "2024") closes the valley between
 * them, and without it the two columns would be read as one in every row.
 * Such a cell is a merged cell of the table ({@link table}).
 */
function columnGaps(items: readonly Item[], h: number): Gap[] {
  let best = alignedGaps(items, h);
  let rest = items;
  for (let k = 0; k < MAX_SPANNING_LINES; k++) {
    const lines = lineBands(rest);
    if (lines.length <= MIN_COLUMN_LINES) break;
    let pick: { rest: readonly Item[]; gaps: Gap[] } | undefined;
    for (const l of lines) {
      const others = rest.filter((it) => (it.y0 + it.y1) / 2 < l.from || (it.y0 + it.y1) / 2 > l.to);
      const opened = bornOut(others, alignedGaps(others, h));
      if (opened.length > (pick?.gaps.length ?? best.length)) pick = { rest: others, gaps: opened };
    }
    if (!pick) break;
    // Every gap kept so far stays (a wider one may have narrowed to the gap now found).
    if (!best.every((g) => pick.gaps.some((x) => x.from < g.to && x.to > g.from))) break;
    best = pick.gaps;
    rest = pick.rest;
  }
  if (rest === items) return best;
  // The lines set aside narrow the gaps they reach into short of the middle (a header cell set
  // left in a column of right-aligned numbers); a run over a gap's middle is a cell spanning it.
  const aside = items.filter((it) => !rest.includes(it));
  return best
    .map((g) => {
      const mid = (g.from + g.to) / 2;
      let { from, to } = g;
      for (const it of aside) {
        if (it.x0 <= mid && it.x1 >= mid) continue;
        if (it.x1 > from && it.x1 < mid) from = it.x1;
        else if (it.x0 < to && it.x0 > mid) to = it.x0;
      }
      return { from, to };
    })
    .filter((g) => g.to > g.from);
}

/**
 * `found` without the gaps inside one column: a column of left-aligned words
 * and right-aligned numbers (a header over numbers, a few words among them)
 * leaves a valley between the two that no row crosses, but no row has ink on
 * both sides of it either. A gap is dropped when the runs between it and its
 * neighbouring gaps are never side by side in a row, those left of it start
 * where the column starts and those right of it end where it ends (within
 * {@link CELL_EDGE_SLACK}). Two columns of numbers filled in turn (a
 * statement's debits and credits) are both right-aligned: they stay apart.
 */
function withinColumns(items: readonly Item[], found: readonly Gap[], h: number): Gap[] {
  const sorted = [...found].sort((a, b) => a.from - b.from);
  const centre = (it: Item) => (it.x0 + it.x1) / 2;
  return sorted.filter((g, i) => {
    const leftEdge = i > 0 ? sorted[i - 1]!.to : -Infinity;
    const rightEdge = i + 1 < sorted.length ? sorted[i + 1]!.from : Infinity;
    const left = items.filter((it) => centre(it) > leftEdge && centre(it) < g.from);
    const right = items.filter((it) => centre(it) > g.to && centre(it) < rightEdge);
    if (!left.length || !right.length || sideBySide(left, right) > 0) return true;
    const start = Math.min(...left.map((it) => it.x0));
    const end = Math.max(...right.map((it) => it.x1));
    const slack = CELL_EDGE_SLACK * h;
    return !(left.every((it) => it.x0 - start <= slack) && right.every((it) => end - it.x1 <= slack));
  });
}

/**
 * Column gaps of all of a region's lines: the wide ones, and narrower ones
 * two columns' lines bear out ({@link MIN_ALIGNED_COLUMN_GAP}). They are
 * looked for between words, not runs: a right-aligned number and the
 * left-aligned word of the next column can stand closer than a column gap
 * ("2013 Of", one run), closing the valley down the table in every such row.
 */
function alignedGaps(items: readonly Item[], h: number): Gap[] {
  const minGap = MIN_COLUMN_GAP * h;
  const words = items.flatMap((it) => it.words.map((w) => ({ x0: w.x0, x1: w.x1, y0: it.y0, y1: it.y1, words: [w], line: it.line })));
  const all = gaps(words, "x", MIN_ALIGNED_COLUMN_GAP * h);
  return all.filter((g) => g.to - g.from >= minGap || bothSides(words, g) >= MIN_COLUMN_LINES);
}

/**
 * The gaps that part two columns by the evidence of at least
 * {@link MIN_COLUMN_LINES} lines, each with a run ending in the column
 * left of the gap and one starting in the column right of it (a gap between
 * a column and a header's lone word beside it is no column gap).
 */
function bornOut(items: readonly Item[], found: readonly Gap[]): Gap[] {
  const sorted = [...found].sort((a, b) => a.from - b.from);
  return sorted.filter((g, i) => {
    const leftEdge = i > 0 ? sorted[i - 1]!.to : -Infinity;
    const rightEdge = i + 1 < sorted.length ? sorted[i + 1]!.from : Infinity;
    return sideBySide(items.filter((it) => it.x1 <= g.from && it.x1 > leftEdge), items.filter((it) => it.x0 >= g.to && it.x0 < rightEdge)) >= MIN_COLUMN_LINES;
  });
}

/** How many lines have a run ending left of a gap and another starting right of it. */
function bothSides(items: readonly Item[], g: Gap): number {
  return sideBySide(items.filter((it) => it.x1 <= g.from), items.filter((it) => it.x0 >= g.to));
}

/**
 * How many rows hold a run of `left` and one of `right` side by side (their
 * heights overlapping by half the shorter): rows by the page's geometry, not
 * tesseract's lines, which often end at a table's column gap (each cell a
 * line of its own).
 */
function sideBySide(left: readonly Item[], right: readonly Item[]): number {
  const beside = (a: Box, b: Box) => Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) >= 0.5 * Math.min(a.y1 - a.y0, b.y1 - b.y0);
  return lineBands(left.filter((a) => right.some((b) => beside(a, b)))).length;
}

/**
 * Consecutive bands grouped into sections: a band joins the section above
 * it when it is near (a page number far below a table starts its own) and
 * keeps at least half of the column gaps, its own or the section's, whichever
 * has more: a table's rows join each other, a title across them does not.
 */
function sectionsOf(bands: readonly Item[][], within: Box, h: number): Item[][][] {
  const minGap = MIN_COLUMN_GAP * h;
  const sections: Item[][][] = [];
  let current: Item[][] = [];
  let free: Gap[] = [];
  let extent = { x0: 0, x1: 0 };
  let bottom = 0;
  /** The space above each band of the current section but its first. */
  let spacing: number[] = [];
  for (const whole of bands) {
    // A row whose cells a tight table set closer than a column gap: its runs are cut where the section's columns part.
    const band = current.length >= 2 ? splitAtGaps(whole, free.filter((g) => g.from > extent.x0 && g.to < extent.x1), h) : whole;
    const f = freeSpans(band, within, minGap);
    const b = boundsOf(band);
    if (current.length) {
      const union = { x0: Math.min(extent.x0, b.x0), x1: Math.max(extent.x1, b.x1) };
      // Each band's own gaps are wide; where they overlap it may be narrower (right-aligned numbers beside a left-aligned column).
      const shared = intersect(free, f, MIN_ALIGNED_COLUMN_GAP * h);
      // A gap kept is one both sides agree on: where it lies between ink on one side, it is
      // not a sliver of a much wider gap there (a table's label column ending far left of the gutter).
      const fits = (g: Gap, spans: readonly Gap[], ext: { x0: number; x1: number }) => {
        const host = spans.find((x) => x.from <= g.from && x.to >= g.to);
        if (!host || host.from <= ext.x0 || host.to >= ext.x1) return true;
        return g.to - g.from >= SHARED_GAP_SHARE * (host.to - host.from);
      };
      const mine = interior(free, extent);
      const theirs = interior(f, b);
      // Only a band bringing more gaps than the section has is held to that (ragged prose lines end anywhere).
      const agreed = theirs > mine ? shared.filter((g) => fits(g, f, b) && fits(g, free, extent)) : shared;
      const kept = interior(agreed, union);
      // A band keeping most of the section's column gaps joins it, even with gaps of its own (a table
      // inside a column); a section of full-width lines so far takes a band only if it keeps most of
      // the band's gaps (a title does not swallow the table under it).
      const needed = mine > 0 && theirs >= mine ? Math.ceil(mine / 2) : Math.ceil(Math.max(mine, theirs) / 2);
      const near = b.y0 - bottom <= MAX_SECTION_GAP * h;
      // A single run alone so far (a title, a running header, a line of prose) evidences no column: it starts no table.
      const alone = current.length === 1 && current[0]!.length === 1 && mine === 0;
      // A single run set further below the rows than they are apart (a heading after a table) is no row of it,
      // nor is one that opens with a list's marker under rows that do not (a list right under a table: gen_001).
      const apart =
        band.length === 1 &&
        spacing.length > 0 &&
        (b.y0 - bottom > ROW_SPACING_GROWTH * median(spacing) + MIN_ROW_SPACING_SLACK * h || (opensWithMarker(band[0]!) && !current.some((row) => opensWithMarker(leftmost(row)))));
      if (near && !alone && !apart && kept > 0 && kept >= needed) {
        spacing.push(b.y0 - bottom);
        current.push(band);
        free = agreed;
        extent = union;
        bottom = Math.max(bottom, b.y1);
        continue;
      }
      sections.push(current);
    }
    current = [band];
    spacing = [];
    free = f;
    extent = b;
    bottom = b.y1;
  }
  sections.push(current);
  return sections;
}

/** Whether a run's first word is a list item's marker ("1.", "b)", a bullet). */
function opensWithMarker(it: Item): boolean {
  const first = it.words.reduce((a, w) => (w.x0 < a.x0 ? w : a));
  return isMarkerText(first.text);
}

const leftmost = (row: readonly Item[]): Item => row.reduce((a, it) => (it.x0 < a.x0 ? it : a));

/**
 * A band's runs cut where they cross one of `gaps` (the column gaps of the
 * rows above) at a space between two words that reaches into the gap and is
 * at least
 * {@link MIN_ALIGNED_COLUMN_GAP} word heights wide: a tight table's cells
 * ("30.8% 49.4%", 0.9 word heights apart on the generated corpus's dev page
 * gen_104) are one run by the width of their space alone.
 */
function splitAtGaps(band: Item[], gaps: readonly Gap[], h: number): Item[] {
  if (!gaps.length) return band;
  return band.flatMap((it) => {
    const words = [...it.words].sort((a, b) => a.x0 - b.x0);
    const parts: OcrWord[][] = [[words[0]!]];
    for (let i = 1; i < words.length; i++) {
      const [a, b] = [words[i - 1]!, words[i]!];
      // The space between the two words reaches into the column gap (a right-aligned number ends in it, a left-aligned one starts in it).
      const cuts = b.x0 - a.x1 >= MIN_ALIGNED_COLUMN_GAP * h && gaps.some((g) => a.x1 <= g.to && b.x0 >= g.from);
      if (cuts) parts.push([b]);
      else parts[parts.length - 1]!.push(b);
    }
    if (parts.length === 1) return [it];
    return parts.map((ws) => ({ x0: ws[0]!.x0, x1: Math.max(...ws.map((w) => w.x1)), y0: it.y0, y1: it.y1, words: ws, line: it.line }));
  });
}

function lineCount(n: LayoutNode): number {
  return n.kind === "leaf" ? toLines((n as Leaf).items).length : Infinity;
}


/**
 * A table: every row band, each cut into cells at the table's column gaps.
 * A run that crosses a column gap (found by {@link columnGaps} with its line
 * set aside) is either two cells set close (a tight row: "8,703 Error event",
 * where "Error" starts where the column's other cells start, or "8,703" ends
 * where they end) and is cut at that space, or one cell over the columns it
 * crosses (a header over two columns), read in the first of them. It is not
 * reported as a merged cell: on the dev pages every run so reported was two
 * cells set close or a header word beside right-aligned numbers, none a
 * header the truth merged (docs/structure.md).
 */
function table(items: Item[], box: Box, down: Gap[], across: Gap[], h: number): LayoutNode {
  const edges = down.map((g) => (g.from + g.to) / 2).sort((a, b) => a - b);
  const slotOf = (x: number) => edges.filter((e) => e < x).length;
  const reach = (it: Box) => ({ first: slotOf(it.x0), last: slotOf(it.x1) });
  const bands = split(items, "y", across);
  const settled = bands.flat().filter((it) => reach(it).first === reach(it).last);
  const lined = (x: number, slot: number, side: "x0" | "x1") =>
    settled.filter((it) => slotOf((it.x0 + it.x1) / 2) === slot && Math.abs(it[side] - x) <= CELL_EDGE_SLACK * h).length >= MIN_COLUMN_LINES - 1;
  const rows = bands.map((band) => {
    const row = band.flatMap((it) => {
      const { first, last } = reach(it);
      if (first === last) return [it];
      // Cut at a space inside a crossed gap where a side lines up with its column's other cells.
      const words = [...it.words].sort((a, b) => a.x0 - b.x0);
      const parts: OcrWord[][] = [[words[0]!]];
      for (let i = 1; i < words.length; i++) {
        const [a, b] = [words[i - 1]!, words[i]!];
        const edge = edges.findIndex((e) => a.x1 <= e + (b.x0 - a.x1) && b.x0 >= e - (b.x0 - a.x1) && a.x1 < b.x0);
        const at = edge >= 0 && (lined(b.x0, edge + 1, "x0") || lined(a.x1, edge, "x1"));
        if (at) parts.push([b]);
        else parts[parts.length - 1]!.push(b);
      }
      return parts.map((ws) => ({ x0: ws[0]!.x0, x1: Math.max(...ws.map((w) => w.x1)), y0: it.y0, y1: it.y1, words: ws, line: it.line }));
    });
    const cells: Item[][] = edges.map(() => []).concat([[]]);
    for (const it of row) cells[reach(it).first]!.push(it);
    return cells.map((cell) => (cell.length ? cut(cell, h) : null));
  });
  return { kind: "table", box, rows };
}

function stack(children: LayoutNode[], box: Box): LayoutNode {
  // Flatten nested stacks: a stack of stacks is one sequence of blocks.
  const flat: LayoutNode[] = [];
  for (const c of children) {
    if (c.kind === "stack") flat.push(...c.children);
    else flat.push(c);
  }
  return { kind: "stack", box, children: flat };
}

/** A region that is not cut further; its lines are made once the symbols are placed. */
type Leaf = Extract<LayoutNode, { kind: "leaf" }> & { items: Item[] };

function leaf(items: Item[], box: Box): LayoutNode {
  const l: Leaf = { kind: "leaf", box, lines: [], items };
  return l;
}

function leavesOf(root: LayoutNode): Leaf[] {
  const out: Leaf[] = [];
  const walk = (n: LayoutNode) => {
    if (n.kind === "leaf") out.push(n as Leaf);
    else if (n.kind === "table") n.rows.forEach((r) => r.forEach((c) => c && walk(c)));
    else n.children.forEach(walk);
  };
  walk(root);
  return out;
}

/** Words of one region as text lines: grouped by vertical overlap, left to right, lines top to bottom. */
function toLines(items: readonly Item[]): TextLine[] {
  // Tesseract's own lines are kept whole (it follows a curved or tilted line better than boxes can);
  // pieces of lines side by side at the same height (a label and its price) become one line.
  const units = new Map<string, Item[]>();
  for (const it of items) {
    const u = units.get(it.line);
    if (u) u.push(it);
    else units.set(it.line, [it]);
  }
  const pieces = [...units.values()].map((segs) => ({ segs, ...boundsOf(segs) })).sort((a, b) => (a.y0 + a.y1) / 2 - (b.y0 + b.y1) / 2);
  const lines: { pieces: (typeof pieces)[number][]; y0: number; y1: number }[] = [];
  for (const p of pieces) {
    let best: (typeof lines)[number] | undefined;
    let bestOverlap = 0;
    for (const l of lines) {
      const overlap = Math.min(l.y1, p.y1) - Math.max(l.y0, p.y0);
      // Side by side only: a piece under or over another one's words is another line.
      if (overlap < 0.5 * Math.min(p.y1 - p.y0, l.y1 - l.y0) || overlap <= bestOverlap) continue;
      if (l.pieces.some((q) => Math.min(q.x1, p.x1) > Math.max(q.x0, p.x0))) continue;
      best = l;
      bestOverlap = overlap;
    }
    if (best) {
      best.pieces.push(p);
      best.y0 = Math.min(best.y0, p.y0);
      best.y1 = Math.max(best.y1, p.y1);
    } else lines.push({ pieces: [p], y0: p.y0, y1: p.y1 });
  }
  lines.sort((a, b) => a.y0 - b.y0);
  return lines.map((l) => {
    const ws = l.pieces.sort((a, b) => a.x0 - b.x0).flatMap((p) => p.segs.flatMap((sg) => sg.words).sort((a, b) => a.x0 - b.x0));
    return { words: ws, box: boundsOf(ws) };
  });
}

/** Puts each symbol-only word into the leaf whose box holds its centre (or the nearest leaf within two word heights). */
function placeSymbols(leaves: readonly Leaf[], symbols: readonly Item[], h: number): void {
  for (const s of symbols) {
    const cx = (s.x0 + s.x1) / 2;
    const cy = (s.y0 + s.y1) / 2;
    let best: Leaf | undefined;
    let bestD = Infinity;
    for (const l of leaves) {
      const b = boundsOf(l.items);
      const dx = Math.max(b.x0 - cx, 0, cx - b.x1);
      const dy = Math.max(b.y0 - cy, 0, cy - b.y1);
      const d = dx * dx + dy * dy;
      if (d < bestD) {
        best = l;
        bestD = d;
      }
    }
    // Far from every text region: a speck, not a mark of the text.
    if (best && bestD <= (2 * h) ** 2) best.items.push(s);
  }
}
