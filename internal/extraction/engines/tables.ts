/**
 * Defensive parsing of a vision model's page answer into text, tables and an
 * optional confidence (the contract is in `prompts.ts`; docs/ocr.md "Tables").
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
import type { ExtractOptions, Table } from "../types.ts";
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
    result.tables = rowsList.slice(0, TABLE_LIMITS.tablesPerPage).map((rows) => ({ page_number: pageNumber, rows, markdown: renderMarkdownTable(rows) }));
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


