/**
 * Defensive parsing of a vision model's page answer into text, tables and an
 * optional confidence (the contract is in `prompts.ts`; docs/structure.md "Tables").
 * Nothing here throws on model output: junk becomes plain text.
 *
 * - `text`/`markdown`: a wrapping code fence around the whole answer is
 *   removed; the LAST fenced block labelled `json` (or unlabelled) whose
 *   content is an object with `tables` and/or `confidence` is the metadata
 *   block: it is taken out of the text and read. A trailing block that starts
 *   like one but does not parse is removed too (it is not page content).
 * - `json`: the answer (or its only fenced block) must be one JSON object;
 *   `tables` and `confidence` are read from it and the page text is the
 *   object re-serialised without `confidence`. An answer that is not a JSON
 *   object is kept as text.
 * - Tables (only when `extractTables` is on): the metadata block's `tables`
 *   win; when it has none, GitHub Markdown tables found in the text are used.
 *   Rows are arrays of cell strings (numbers and booleans become strings,
 *   anything else an empty cell), padded to the widest row, bounded in count
 *   and size; a table without rows is dropped. Each table also carries a
 *   Markdown rendering, first row as the header.
 * - Confidence: only a finite number from 0 to 1 in the `confidence` field;
 *   anything else (a percentage, a string) is ignored.
 */
import type { ExtractOptions, Table, TableCell } from "../types.ts";
import { isRecord, parseJson } from "../util.ts";

export interface ParsedPageAnswer {
  text: string;
  tables: Table[];
  confidence?: number;
}

export const TABLE_LIMITS = Object.freeze({ tablesPerPage: 100, rows: 2_000, columns: 100, cellChars: 10_000 });
const MAX_ANSWER_CHARS = 2_000_000;

/** Parses one page's answer; never throws. */
export function parsePageAnswer(answer: unknown, pageNumber: number, options: ExtractOptions): ParsedPageAnswer {
  let raw = typeof answer === "string" ? answer : "";
  if (raw.length > MAX_ANSWER_CHARS) raw = raw.slice(0, MAX_ANSWER_CHARS);
  raw = raw.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");

  let text: string;
  let meta: Record<string, unknown> | undefined;
  if (options.outputFormat === "json") {
    const obj = parseJsonAnswer(raw);
    if (obj) {
      meta = obj;
      const { confidence: _confidence, ...rest } = obj;
      text = JSON.stringify(rest);
    } else {
      text = raw.trim();
    }
  } else {
    const split = splitMetaBlock(unwrapFence(raw.trim()));
    text = split.text.trim();
    meta = split.meta;
  }

  const result: ParsedPageAnswer = { text, tables: [] };
  if (options.extractTables) {
    const fromMeta = meta ? tablesFromJson(meta.tables) : [];
    const rowsList = fromMeta.length > 0 ? fromMeta : findMarkdownTables(text);
    result.tables = rowsList.slice(0, TABLE_LIMITS.tablesPerPage).map((rows) => tableOf(pageNumber, rows));
  }
  const c = meta?.confidence;
  if (typeof c === "number" && Number.isFinite(c) && c >= 0 && c <= 1) result.confidence = c;
  return result;
}

/** Removes one code fence that wraps the whole answer (```markdown … ```). */
function unwrapFence(s: string): string {
  const m = /^```[A-Za-z]*\n([\s\S]*?)\n?```$/.exec(s);
  if (!m) return s;
  const inner = m[1] as string;
  // Not a wrapper when the inner text itself contains fences (it was two blocks).
  return inner.includes("```") ? s : inner;
}

const FENCE = /```([A-Za-z]*)[ \t]*\n?([\s\S]*?)\n?```/g;

/** Splits off the metadata block (see the file header). */
function splitMetaBlock(s: string): { text: string; meta?: Record<string, unknown> } {
  let last: { start: number; end: number; body: string } | undefined;
  for (const m of s.matchAll(FENCE)) {
    const lang = (m[1] ?? "").toLowerCase();
    if (lang !== "json" && lang !== "") continue;
    last = { start: m.index, end: m.index + m[0].length, body: m[2] ?? "" };
  }
  if (last === undefined) return { text: s };
  const parsed = parseJson(last.body.trim());
  const looksMeta = /^\s*\{\s*"(tables|confidence)"/.test(last.body);
  if (isRecord(parsed) && ("tables" in parsed || "confidence" in parsed)) {
    return { text: s.slice(0, last.start) + s.slice(last.end), meta: parsed };
  }
  if (looksMeta && s.slice(last.end).trim() === "") return { text: s.slice(0, last.start) };
  return { text: s };
}

function parseJsonAnswer(raw: string): Record<string, unknown> | undefined {
  const trimmed = raw.trim();
  const direct = parseJson(trimmed);
  if (isRecord(direct)) return direct;
  const fenced = /^```[A-Za-z]*[ \t]*\n([\s\S]*?)\n?```$/.exec(trimmed);
  if (fenced) {
    const inner = parseJson((fenced[1] ?? "").trim());
    if (isRecord(inner)) return inner;
  }
  // Prose around one object: take the outermost braces.
  const first = trimmed.indexOf("{");
  const last = trimmed.lastIndexOf("}");
  if (first >= 0 && last > first) {
    const inner = parseJson(trimmed.slice(first, last + 1));
    if (isRecord(inner)) return inner;
  }
  return undefined;
}

/**
 * Reads a `tables` value: `[{"rows": [[...]]}]`, `[{"header": [...], "rows": [[...]]}]`
 * or a bare list of row lists `[[[...]]]`. Junk entries are skipped.
 */
export function tablesFromJson(value: unknown): string[][][] {
  if (!Array.isArray(value)) return [];
  const out: string[][][] = [];
  for (const t of value.slice(0, TABLE_LIMITS.tablesPerPage)) {
    let rowsValue: unknown;
    let header: unknown;
    if (Array.isArray(t)) rowsValue = t;
    else if (isRecord(t)) {
      rowsValue = t.rows;
      header = t.header ?? t.headers;
    } else continue;
    const rows = normalizeRows(Array.isArray(header) ? [header, ...(Array.isArray(rowsValue) ? rowsValue : [])] : rowsValue);
    if (rows) out.push(rows);
  }
  return out;
}

/** Rows of cell strings, padded to the widest row; undefined when there is no row. */
export function normalizeRows(value: unknown): string[][] | undefined {
  if (!Array.isArray(value)) return undefined;
  const rows: string[][] = [];
  for (const r of value.slice(0, TABLE_LIMITS.rows)) {
    if (!Array.isArray(r)) continue;
    rows.push(r.slice(0, TABLE_LIMITS.columns).map(cellString));
  }
  const width = Math.max(0, ...rows.map((r) => r.length));
  if (rows.length === 0 || width === 0) return undefined;
  return rows.map((r) => (r.length < width ? [...r, ...Array<string>(width - r.length).fill("")] : r));
}

function cellString(v: unknown): string {
  let s: string;
  if (typeof v === "string") s = v;
  else if (typeof v === "number" && Number.isFinite(v)) s = String(v);
  else if (typeof v === "boolean") s = String(v);
  else s = "";
  return s.length > TABLE_LIMITS.cellChars ? s.slice(0, TABLE_LIMITS.cellChars) : s;
}

const DELIMITER_ROW = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

/** GitHub Markdown tables in a text: header row, delimiter row, body rows. */
export function findMarkdownTables(text: string): string[][][] {
  const lines = text.split("\n");
  const tables: string[][][] = [];
  for (let i = 0; i + 1 < lines.length && tables.length < TABLE_LIMITS.tablesPerPage; i++) {
    const header = lines[i] as string;
    const delimiter = lines[i + 1] as string;
    if (!header.includes("|") || !delimiter.includes("-") || !DELIMITER_ROW.test(delimiter)) continue;
    const headerCells = splitRow(header);
    const columns = splitRow(delimiter).length;
    // GFM requires the header to have as many cells as the delimiter row.
    if (headerCells.length !== columns || (columns < 2 && !/^\s*\|/.test(header))) continue;
    const rows = [headerCells];
    let j = i + 2;
    for (; j < lines.length; j++) {
      const line = lines[j] as string;
      if (line.trim() === "" || !line.includes("|")) break;
      rows.push(splitRow(line));
    }
    const normalized = normalizeRows(rows);
    if (normalized) tables.push(normalized);
    i = j - 1;
  }
  return tables;
}

function splitRow(line: string): string[] {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells: string[] = [];
  let cur = "";
  for (let k = 0; k < s.length; k++) {
    const ch = s[k];
    if (ch === "\\" && s[k + 1] === "|") {
      cur += "|";
      k++;
    } else if (ch === "|") {
      cells.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  cells.push(cur.trim());
  return cells;
}

/** GitHub Markdown for rows (first row the header); `|` escaped, line breaks as `<br>`. */
export function renderMarkdownTable(rows: readonly (readonly string[])[]): string {
  const width = Math.max(1, ...rows.map((r) => r.length));
  const cell = (s: string | undefined) => (s ?? "").replace(/\|/g, "\\|").replace(/\r?\n/g, "<br>").trim();
  const line = (r: readonly string[]) => `| ${Array.from({ length: width }, (_, k) => cell(r[k])).join(" | ")} |`;
  const [head = [], ...body] = rows;
  return [line(head), `|${" --- |".repeat(width)}`, ...body.map(line)].join("\n");
}



/** A merged cell: where it starts (row and column from 0) and how many rows and columns it covers. */
export interface CellSpan {
  row: number;
  col: number;
  rows: number;
  cols: number;
}

/**
 * A table of `result.tables` from its rows (a merged cell's text in the
 * first position it covers, the others empty) and its merged cells: the
 * rows, their GitHub markdown, every cell once with its spans, and HTML with
 * `rowspan`/`colspan`.
 */
export function tableOf(
  pageNumber: number,
  rows: string[][],
  spans: readonly CellSpan[] = [],
  place: { opensPage?: boolean; closesPage?: boolean; boxes?: readonly (readonly (CellBox | null)[])[] } = {},
): Table {
  const cells = tableCells(rows, spans, place.boxes);
  return {
    page_number: pageNumber,
    rows,
    markdown: renderMarkdownTable(rows),
    cells,
    html: renderHtmlTable(cells),
    ...(place.opensPage ? { opens_page: true } : {}),
    ...(place.closesPage ? { closes_page: true } : {}),
  };
}

/** A cell's box, [x0, y0, x1, y1] in pixels. */
export type CellBox = [number, number, number, number];

/** Every cell of `rows` once: a merged cell at its first position with its spans, the positions it covers left out; `boxes` (by position, as `rows`) gives each its box. */
export function tableCells(rows: readonly (readonly string[])[], spans: readonly CellSpan[] = [], boxes?: readonly (readonly (CellBox | null)[])[]): TableCell[] {
  const width = Math.max(0, ...rows.map((r) => r.length));
  const covered = new Set<string>();
  const spanAt = new Map<string, CellSpan>();
  for (const s of spans) {
    if (s.row < 0 || s.col < 0 || s.row >= rows.length || s.col >= width) continue;
    const key = `${s.row},${s.col}`;
    if (covered.has(key) || spanAt.has(key)) continue;
    const span = { ...s, rows: Math.max(1, Math.min(s.rows, rows.length - s.row)), cols: Math.max(1, Math.min(s.cols, width - s.col)) };
    spanAt.set(key, span);
    for (let r = span.row; r < span.row + span.rows; r++) for (let c = span.col; c < span.col + span.cols; c++) if (r !== span.row || c !== span.col) covered.add(`${r},${c}`);
  }
  const cells: TableCell[] = [];
  for (const [r, row] of rows.entries()) {
    for (let c = 0; c < width; c++) {
      const key = `${r},${c}`;
      if (covered.has(key)) continue;
      const s = spanAt.get(key);
      const box = boxes?.[r]?.[c];
      cells.push({ row: r, col: c, row_span: s?.rows ?? 1, col_span: s?.cols ?? 1, text: row[c] ?? "", ...(box ? { bbox: box } : {}) });
    }
  }
  return cells;
}

/** A `<table>` of cells: the first row as header cells, `rowspan`/`colspan` where a cell covers more than one. */
export function renderHtmlTable(cells: readonly TableCell[]): string {
  const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/\r?\n/g, "<br>");
  // Every row gets its <tr>, also one whose every position a cell above covers.
  const count = cells.reduce((n, c) => Math.max(n, c.row + c.row_span), 0);
  const byRow: TableCell[][] = Array.from({ length: count }, () => []);
  for (const c of cells) byRow[c.row]!.push(c);
  const body = byRow.map((cs, r) => {
    const tag = r === 0 ? "th" : "td";
    const html = cs
      .sort((a, b) => a.col - b.col)
      .map((c) => `<${tag}${c.row_span > 1 ? ` rowspan="${c.row_span}"` : ""}${c.col_span > 1 ? ` colspan="${c.col_span}"` : ""}>${esc(c.text)}</${tag}>`)
      .join("");
    return `<tr>${html}</tr>`;
  });
  return `<table>${body.join("")}</table>`;
}

/**
 * Tables continued over pages joined into one: a table that closes its page
 * (nothing of the page's flow after it) and one that opens the next (nothing
 * before it but a header) with as many columns are one table, its first
 * page's number first in `page_numbers`; the continuation's first row is
 * dropped where it repeats the header (a table's header printed again on
 * each page). `opens_page` and `closes_page` are dropped: they are between
 * the services only.
 */
export function joinPageTables(tables: readonly Table[]): (Table & { page_numbers: number[] })[] {
  const out: (Table & { page_numbers: number[] })[] = [];
  const same = (a: readonly string[] | undefined, b: readonly string[] | undefined) =>
    !!a && !!b && a.length === b.length && a.every((s, i) => s.replace(/\s+/g, " ").trim().toLowerCase() === b[i]!.replace(/\s+/g, " ").trim().toLowerCase());
  let open: { table: Table & { page_numbers: number[] }; closes: boolean } | undefined;
  for (const t of tables) {
    const { opens_page, closes_page, ...table } = t;
    const pages = table.page_numbers ?? [table.page_number];
    const last = open?.table;
    const width = (x: Table) => x.rows[0]?.length ?? 0;
    if (last && open!.closes && opens_page && pages[0] === last.page_numbers.at(-1)! + 1 && width(last) === width(table)) {
      const skip = same(table.rows[0], last.rows[0]) ? 1 : 0;
      const rows = [...last.rows, ...table.rows.slice(skip)];
      const offset = last.rows.length - skip;
      // Each cell says its page: its box is in that page's pixels.
      const onPage = (c: TableCell, page: number) => ({ ...c, page_number: c.page_number ?? page });
      const cells = [...last.cells.map((c) => onPage(c, last.page_number)), ...table.cells.filter((c) => c.row >= skip).map((c) => ({ ...onPage(c, table.page_number), row: c.row + offset }))];
      const joined = { ...last, page_numbers: [...last.page_numbers, ...pages], rows, markdown: renderMarkdownTable(rows), cells, html: renderHtmlTable(cells) };
      out[out.length - 1] = joined;
      open = { table: joined, closes: closes_page ?? false };
      continue;
    }
    const own = { ...table, page_numbers: pages };
    out.push(own);
    open = { table: own, closes: closes_page ?? false };
  }
  return out;
}
