/**
 * One page read by tesseract, put in order: the text, the tables and the
 * layout blocks (docs/structure.md "Layout").
 *
 * The text follows tesseract's own page layout analysis, which orders
 * columns of prose well, except where the geometry of the words
 * ({@link readingOrder}) finds a table: tesseract reads a table a column at
 * a time (and a receipt's prices after all of its items), so a table is read
 * row by row, cell by cell, where tesseract first reached one of its words.
 * Where the two orders of such a table's words disagree, the page's own text
 * decides ({@link decideOrders}, joins.ts): narrow columns of prose whose
 * lines line up look like a table to the geometry, but read on only in
 * tesseract's order. Measured against both orders alone on the corpus in
 * docs/benchmarks.md.
 */
import type { LayoutBlock, LayoutBlockType as BlockType, PageLayout } from "../../contracts/index.ts";
import type { CellBox, CellSpan } from "../engines/tables.ts";
import { splitBulletColumns } from "./bullets.ts";
import { gridTable, inGrid, type PageRules } from "./grid.ts";
import { isMarkerText, type SourceBlock } from "./markdown.ts";
import { CharModel, orderEvidence } from "./joins.ts";
import { readingOrder, type LayoutNode } from "./reading-order.ts";
import { boundsOf, median, parseTsv, type Box, type OcrWord } from "./words.ts";

/** A table's rows of cell strings (a merged cell's text in the first position it covers) and its merged cells. */
export interface FoundTable {
  rows: string[][];
  spans: CellSpan[];
  /** Each position's box (its words'), as `rows`; null for an empty one. */
  boxes: (CellBox | null)[][];
  /** Nothing of the page's flow stands before (after) it: only a header (footer) or a figure, so it may continue a table of the page before (go on on the next). */
  opensPage?: boolean;
  closesPage?: boolean;
}

export interface AnalyzedPage {
  text: string;
  /** Mean word confidence, 0–1; absent when no word was recognised. */
  confidence?: number;
  /** Tables as rows of cell strings (empty string: an empty cell, or a position a merged cell covers) and their merged cells. */
  tables: FoundTable[];
  layout: PageLayout;
  /** The layout's blocks (the same objects) with their words and a table's cells: what `markdown.ts` reads. */
  sources: SourceBlock[];
  /** Words recognised (with a letter, digit or sign), and the median height of tesseract's lines in pixels. */
  wordCount: number;
  lineHeight: number;
  /** Each region the geometry reads as a table while tesseract read its words in another order: the order kept and why. */
  orders: OrderDecision[];
}

/** Whose order a region of disagreement is read in: the geometry's (row by row) or tesseract's. */
export type OrderChoice = "layout" | "tesseract";

export interface OrderDecision {
  chosen: OrderChoice;
  /** Evidence for tesseract's order over the geometry's, in nats (joins.ts); positive favours tesseract's. */
  evidence: number;
  words: number;
}

/** A header or footer sits in this share of the page's height at its top or bottom. */
const MARGIN_SHARE = 0.1;
/** …and is set no larger than this many times the page's line height (a title at the top of a page is larger). */
const TITLE_SIZE = 1.3;
/** Tesseract's order replaces the geometry's table where the page's own text favours it by odds of 20 to 1 (joins.ts). */
const MIN_ORDER_EVIDENCE = Math.log(20);
/**
 * Rows of two filled cells or more that a table found by the words' geometry
 * alone needs to be reported as one: two rows are one coincidence of
 * alignment, three a pattern. A ruled grid's lines say it is a table at any
 * size (docs/structure.md "Tables").
 */
const MIN_TABLE_ROWS = 3;
/** A picture tesseract left without text counts as a figure when both sides are at least this many line heights. */
const MIN_FIGURE_SIDE = 2;

/**
 * Text, tables and layout of a page from tesseract's TSV output; `words` adds
 * every word to the layout blocks; `rules`: the page's ruled tables
 * (`grid.ts`), whose words are read as their cells say rather than by the
 * geometry of the words, and its blanks, which join the words on either side.
 */
export function analyzePage(
  tsv: string,
  opts: { words?: boolean; rules?: PageRules; order?: "evidence" | OrderChoice } = {},
): AnalyzedPage {
  const read = parseTsv(tsv);
  // A column of round bullets read as one tall word becomes a bullet at the start of each item (bullets.ts).
  const page = { ...read, words: splitBulletColumns(read.words) };
  type Found = { node: Extract<LayoutNode, { kind: "table" }>; members: Set<number>; rows: FoundTable | null; at: number };
  const ruled: Found[] = [];
  const taken = new Set<number>();
  for (const grid of opts.rules?.grids ?? []) {
    const members = page.words.filter((w) => !taken.has(w.index) && inGrid(grid, w));
    const node = members.length ? gridTable(grid, members) : null;
    if (!node) continue;
    for (const w of members) taken.add(w.index);
    // Where tesseract first reached one of its words.
    ruled.push({ node, members: new Set(members.map((w) => w.index)), rows: gridRows(node), at: Math.min(...members.map((w) => w.index)) });
  }
  const order = readingOrder(taken.size ? page.words.filter((w) => !taken.has(w.index)) : page.words, opts.rules?.blanks);
  const h = order.wordHeight;

  // Tables found by the geometry, placed among tesseract's words where both orders
  // agree: after every word the geometry reads before the table and before every word
  // it reads after it. Where tesseract's order contradicts that (it read a line above
  // the table last), the table stands where tesseract first reached one of its words.
  const tables: Found[] = [];
  const sequence: (number | Found)[] = [];
  const walk = (n: LayoutNode) => {
    if (n.kind === "table" && isList(n)) {
      // Its words stay in tesseract's paragraphs, where markdown.ts finds the list.
      for (const w of wordsOf(n)) sequence.push(w.index);
    } else if (n.kind === "table") {
      const t: Found = { node: n, members: new Set<number>(wordsOf(n).map((w) => w.index)), rows: tableRows(n, h), at: 0 };
      tables.push(t);
      sequence.push(t);
    } else if (n.kind === "leaf") {
      for (const l of n.lines) for (const w of l.words) sequence.push(w.index);
    } else n.children.forEach(walk);
  };
  if (order.root) walk(order.root);
  const orders = decideOrders(tables, page.words, opts.order ?? "evidence");
  for (const [i, d] of [...orders.entries()].reverse()) if (d?.chosen === "tesseract") tables.splice(i, 1);
  const inTable = new Set<number>(tables.flatMap((t) => [...t.members]));
  for (const t of tables) {
    const pos = sequence.indexOf(t);
    const before = sequence.slice(0, pos).filter((x): x is number => typeof x === "number" && !inTable.has(x));
    const after = sequence.slice(pos + 1).filter((x): x is number => typeof x === "number" && !inTable.has(x));
    const last = before.length ? Math.max(...before) : -1;
    const next = after.length ? Math.min(...after) : Infinity;
    t.at = last < next ? last + 1 : Math.min(...t.members);
  }
  tables.push(...ruled);
  for (const t of ruled) for (const i of t.members) inTable.add(i);

  // Blocks in reading order: tesseract's paragraphs outside tables, and the tables.
  const units: ({ kind: "words"; words: OcrWord[] } | { kind: "table"; table: Found })[] = [];
  const pending = [...tables];
  const placeTables = (upTo: number) => {
    for (let i = 0; i < pending.length; ) {
      if (pending[i]!.at <= upTo) units.push({ kind: "table", table: pending.splice(i, 1)[0]! });
      else i++;
    }
  };
  for (const w of page.words) {
    placeTables(w.index);
    if (inTable.has(w.index)) continue;
    const last = units[units.length - 1];
    if (last?.kind === "words" && last.words[last.words.length - 1]!.paragraph === w.paragraph) last.words.push(w);
    else units.push({ kind: "words", words: [w] });
  }
  placeTables(Infinity);

  const blocks: LayoutBlock[] = [];
  const sources: SourceBlock[] = [];
  const texts: string[] = [];
  for (const u of units) {
    if (u.kind === "table") {
      const text = tableText(u.table.node);
      texts.push(text);
      const words = wordsOf(u.table.node);
      blocks.push(block(u.table.rows ? "table" : "text", boundsOf(words), text, words, opts.words));
      sources.push({ block: blocks[blocks.length - 1]!, words, ...(u.table.rows ? { rows: u.table.rows.rows, spans: u.table.rows.spans, boxes: u.table.rows.boxes } : {}) });
    } else {
      const text = paragraphText(u.words);
      texts.push(text);
      blocks.push(block("text", boundsOf(u.words), text, u.words, opts.words));
      sources.push({ block: blocks[blocks.length - 1]!, words: u.words });
    }
  }
  markMargins(blocks, sources, page.height, h);
  const flow = blocks.filter((b) => b.type === "text" || b.type === "table");
  for (const [i, u] of units.entries()) {
    if (u.kind !== "table" || !u.table.rows) continue;
    const at = flow.indexOf(blocks[i]!);
    u.table.rows.opensPage = at === 0;
    u.table.rows.closesPage = at === flow.length - 1;
  }
  for (const f of page.blankBlocks) {
    if (f.x1 - f.x0 < MIN_FIGURE_SIDE * h || f.y1 - f.y0 < MIN_FIGURE_SIDE * h) continue;
    // A figure stands before the first block that starts below its top.
    const at = blocks.findIndex((b) => b.bbox[1] > f.y0);
    const figure: LayoutBlock = { type: "figure", bbox: bbox(f), text: "" };
    blocks.splice(at < 0 ? blocks.length : at, 0, figure);
    sources.splice(at < 0 ? sources.length : at, 0, { block: figure, words: [] });
  }

  const scored = page.words.filter((w) => Number.isFinite(w.conf) && w.conf >= 0);
  const confidence = scored.length ? Math.min(1, Math.max(0, scored.reduce((s, w) => s + w.conf, 0) / scored.length / 100)) : undefined;
  return {
    text: texts.join("\n\n"),
    ...(confidence !== undefined ? { confidence } : {}),
    tables: tables.filter((t) => t.rows).map((t) => t.rows!),
    layout: { width: page.width, height: page.height, blocks },
    sources,
    wordCount: page.words.length,
    lineHeight: h,
    orders: orders.filter((d): d is OrderDecision => d !== null),
  };
}

/**
 * A "table" of two columns whose first holds nothing but list markers
 * (bullets, bullets read as letters, "1." "b)"), at least two of them: a
 * list whose bullets stand apart from the items' text, as Word sets them.
 * Rows with the first cell empty are items' further lines.
 */
function isList(t: Extract<LayoutNode, { kind: "table" }>): boolean {
  const width = Math.max(...t.rows.map((r) => r.length));
  const used = Array.from({ length: width }, (_, i) => t.rows.some((r) => r[i]));
  if (used.filter(Boolean).length !== 2) return false;
  const first = used.indexOf(true);
  const markers = t.rows.map((r) => r[first]).filter((c): c is LayoutNode => !!c);
  return markers.length >= 2 && markers.every((c) => wordsOf(c).every((w) => isMarkerText(w.text)));
}

/**
 * For each table the geometry found (row by row, cell by cell): null where
 * tesseract read its words in the same order, else whose order is kept. With
 * "evidence", tesseract's order where its joins read on better than the
 * geometry's by odds of 20 to 1 (joins.ts); otherwise the geometry's, which
 * reads real tables right where tesseract reads them a column at a time.
 */
function decideOrders(tables: readonly { node: LayoutNode }[], words: readonly OcrWord[], policy: "evidence" | OrderChoice): (OrderDecision | null)[] {
  let model: CharModel | undefined;
  return tables.map(({ node }) => {
    const geometry = wordsOf(node);
    const pieces = piecesOf(geometry);
    if (pieces.length < 2) return null;
    model ??= new CharModel(lineTexts(words));
    const tesseract = [...pieces].sort((a, b) => a.first - b.first);
    const evidence = orderEvidence(model, tesseract.map((p) => p.text)) - orderEvidence(model, pieces.map((p) => p.text));
    const chosen: OrderChoice = policy === "evidence" ? (evidence > MIN_ORDER_EVIDENCE ? "tesseract" : "layout") : policy;
    return { chosen, evidence, words: geometry.length };
  });
}

/** Runs of words in the geometry's order that tesseract also read one after the other, with the index of their first word. */
function piecesOf(geometry: readonly OcrWord[]): { text: string; first: number }[] {
  const sorted = geometry.map((w) => w.index).sort((a, b) => a - b);
  const nextOf = new Map<number, number>();
  for (let i = 1; i < sorted.length; i++) nextOf.set(sorted[i - 1]!, sorted[i]!);
  const pieces: { text: string; first: number }[] = [];
  let run: OcrWord[] = [];
  for (const w of geometry) {
    const prev = run[run.length - 1];
    if (prev && nextOf.get(prev.index) !== w.index) {
      pieces.push({ text: run.map((x) => x.text).join(" "), first: run[0]!.index });
      run = [];
    }
    run.push(w);
  }
  if (run.length) pieces.push({ text: run.map((x) => x.text).join(" "), first: run[0]!.index });
  return pieces;
}

/** The text of each of tesseract's lines. */
function lineTexts(words: readonly OcrWord[]): string[] {
  const lines = new Map<string, string[]>();
  for (const w of words) {
    const l = lines.get(w.line);
    if (l) l.push(w.text);
    else lines.set(w.line, [w.text]);
  }
  return [...lines.values()].map((l) => l.join(" "));
}

function bbox(b: Box): [number, number, number, number] {
  return [Math.round(b.x0), Math.round(b.y0), Math.round(b.x1), Math.round(b.y1)];
}

function block(type: BlockType, box: Box, text: string, words: readonly OcrWord[], withWords: boolean | undefined): LayoutBlock {
  const b: LayoutBlock = { type, bbox: bbox(box), text };
  if (withWords) b.words = words.map((w) => ({ text: w.text, bbox: bbox(w), confidence: w.conf >= 0 ? Math.round(w.conf * 10) / 1000 : 0 }));
  return b;
}

/** Words of a paragraph: a space between words, a line break between lines. */
function paragraphText(words: readonly OcrWord[]): string {
  let out = "";
  let prev: OcrWord | undefined;
  for (const w of words) {
    if (prev) out += w.line !== prev.line ? "\n" : " ";
    out += w.text;
    prev = w;
  }
  return out;
}

function wordsOf(n: LayoutNode): OcrWord[] {
  if (n.kind === "leaf") return n.lines.flatMap((l) => l.words);
  if (n.kind === "table") return n.rows.flatMap((r) => r.flatMap((c) => (c ? wordsOf(c) : [])));
  return n.children.flatMap(wordsOf);
}

/** A cell's or region's text in reading order, its lines joined by spaces. */
function flatText(n: LayoutNode): string {
  if (n.kind === "leaf") return n.lines.map((l) => l.words.map((w) => w.text).join(" ")).join(" ");
  if (n.kind === "table") return n.rows.map((r) => r.filter((c) => c).map((c) => flatText(c!)).join(" ")).join(" ");
  return n.children.map(flatText).join(" ");
}

/** A table as text: a line per row, its cells separated by a tab. */
function tableText(t: Extract<LayoutNode, { kind: "table" }>): string {
  return t.rows.map((r) => r.filter((c) => c).map((c) => flatText(c!)).join("\t")).join("\n");
}

/**
 * The rows of a table found by the words' geometry alone, as cell strings,
 * or null when it is not one worth reporting: fewer than
 * {@link MIN_TABLE_ROWS} rows with two filled cells (a line with wide
 * spaces, a label beside a value; two lines that share a gap: two form
 * lines set with tabs, a chart's tick labels over its axis title). Its text
 * is still read row by row. Columns that are empty in every row are dropped.
 */
function tableRows(t: Extract<LayoutNode, { kind: "table" }>, _h: number): FoundTable | null {
  const found = gridRows(t);
  const full = found.rows.filter((r) => r.filter((c) => c !== "").length >= 2).length;
  if ((found.rows[0]?.length ?? 0) < 2 || full < MIN_TABLE_ROWS) return null;
  return found.spans.length ? found : { ...found, spans: headerSpans(found.rows) };
}

/**
 * Merged cells of a header row no lines rule: a header cell followed by
 * empty ones, over columns that hold cells in at least half of the rows
 * below, spans them (a group header over two columns, its text set left
 * in the first). The first column's empty corner spans nothing.
 */
function headerSpans(rows: readonly (readonly string[])[]): CellSpan[] {
  const [head, ...body] = rows;
  if (!head || body.length < MIN_TABLE_ROWS - 1) return [];
  const filled = (c: number) => body.filter((r) => (r[c] ?? "") !== "").length >= body.length / 2;
  const spans: CellSpan[] = [];
  for (let c = 0; c < head.length; c++) {
    if (head[c] === "") continue;
    let end = c + 1;
    while (end < head.length && head[end] === "" && filled(end)) end++;
    if (end - c > 1) spans.push({ row: 0, col: c, rows: 1, cols: end - c });
    c = end - 1;
  }
  return spans;
}

/** A table's rows as cell strings, the columns empty in every row dropped and its merged cells' columns counted without them. */
function gridRows(t: Extract<LayoutNode, { kind: "table" }>): FoundTable {
  const rows = t.rows.map((r) => r.map((c) => (c ? flatText(c) : "")));
  const width = Math.max(...rows.map((r) => r.length));
  const used = Array.from({ length: width }, (_, i) => rows.some((r) => (r[i] ?? "") !== ""));
  const before = (c: number) => used.slice(0, c).filter(Boolean).length;
  const boxOf = (c: LayoutNode | null | undefined): CellBox | null => {
    const ws = c ? wordsOf(c) : [];
    if (!ws.length) return null;
    const b = boundsOf(ws);
    return [Math.round(b.x0), Math.round(b.y0), Math.round(b.x1), Math.round(b.y1)];
  };
  const boxes = t.rows.map((r) => Array.from({ length: width }, (_, i) => boxOf(r[i])).filter((_, i) => used[i]));
  const spans = (t.spans ?? [])
    .filter((s) => used[s.col])
    .map((s) => ({ ...s, col: before(s.col), cols: used.slice(s.col, s.col + s.cols).filter(Boolean).length }))
    .filter((s) => s.rows > 1 || s.cols > 1);
  return { rows: rows.map((r) => Array.from({ length: width }, (_, i) => r[i] ?? "").filter((_, i) => used[i])), spans, boxes };
}

/**
 * Headers and footers: text blocks of at most two lines inside the top or
 * bottom tenth of a page that has other text beyond them (a page at least
 * twelve lines tall: a single line or a small snippet has no margins), set
 * no larger than the page's text (a title at the page's top is text).
 */
function markMargins(blocks: LayoutBlock[], sources: readonly SourceBlock[], pageHeight: number, h: number): void {
  if (pageHeight < 12 * h || blocks.length < 2) return;
  const top = pageHeight * MARGIN_SHARE;
  const bottom = pageHeight * (1 - MARGIN_SHARE);
  for (const [i, b] of blocks.entries()) {
    if (b.type !== "text" || b.text.split("\n").length > 2) continue;
    // A title set larger than the page's text is the page's, not a running header.
    const words = sources[i]?.words ?? [];
    if (words.length && median(words.map((w) => w.y1 - w.y0)) >= TITLE_SIZE * h) continue;
    const others = blocks.filter((o) => o !== b && o.type !== "header" && o.type !== "footer");
    if (b.bbox[3] <= top && others.some((o) => o.bbox[1] >= b.bbox[3] + h)) b.type = "header";
    else if (b.bbox[1] >= bottom && others.some((o) => o.bbox[3] <= b.bbox[1] - h)) b.type = "footer";
  }
}
