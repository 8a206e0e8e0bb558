/**
 * How a reading of a document is scored against its truth (bench/eval-structure.ts
 * and anything else that measures structure): both parsed from GitHub markdown
 * (HTML tables with rowspan/colspan included) into headings, list items, table
 * cells, merged cells and plain text, and matched one to one at a similarity of
 * at least {@link MATCH}.
 */
/** Two texts match when they differ in at most a fifth of the longer one's characters. */
export const MATCH = 0.8;

export interface Structure {
  headings: string[];
  items: string[];
  cells: string[];
  /** Merged cells (HTML tables' rowspan/colspan, or the reading's `result.tables` cells): text and spans. */
  spans: Span[];
  text: string;
}

export interface Span {
  text: string;
  rows: number;
  cols: number;
}

/** Markup out of a piece of markdown or HTML: tags, emphasis, links, escapes, footnote marks. */
export function plain(s: string): string {
  return s
    .replace(/<[^>]+>/g, " ")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[\^[^\]]+\]:?/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\\([\\`*_{}[\]()#+\-.!|~<>])/g, "$1")
    .replace(/(\*\*|__|~~|\*|`)/g, "")
    .replace(/&nbsp;|&#160;/g, " ")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/\s+/g, " ")
    .trim();
}

/** What is compared: lower case, NFC, no punctuation at the ends. */
export function key(s: string): string {
  return plain(s)
    .normalize("NFC")
    .toLowerCase()
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, "");
}

/** Headings, list items, table cells and plain text of GitHub markdown (pandoc's, with its HTML tables, or Folio's). */
export function parse(md: string): Structure {
  const headings: string[] = [];
  const items: string[] = [];
  const cells: string[] = [];
  const text: string[] = [];
  // HTML tables (pandoc writes tables GFM cannot hold as HTML).
  const spans: Span[] = [];
  const noHtml = md.replace(/<table[\s\S]*?<\/table>/g, (t) => {
    for (const m of t.matchAll(/<t[hd]([^>]*)>([\s\S]*?)<\/t[hd]>/g)) {
      const c = plain(m[2]!);
      if (c) cells.push(c);
      const rows = Number(/rowspan="(\d+)"/.exec(m[1]!)?.[1] ?? 1);
      const cols = Number(/colspan="(\d+)"/.exec(m[1]!)?.[1] ?? 1);
      if (c && (rows > 1 || cols > 1)) spans.push({ text: c, rows, cols });
    }
    text.push(plain(t));
    return "\n";
  });
  const lines = noHtml.split("\n");
  let item: string[] | undefined;
  const endItem = () => {
    if (item) items.push(plain(item.join(" ")));
    item = undefined;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    const marker = /^\s*(?:[-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line);
    if (/^\s*\|/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{3,}/.test(lines[i + 1]!)) {
      endItem();
      for (; i < lines.length && /^\s*\|/.test(lines[i]!); i++) {
        if (/^\s*\|?\s*:?-{3,}/.test(lines[i]!)) continue;
        const row = lines[i]!.trim().replace(/^\||\|$/g, "").split(/(?<!\\)\|/).map(plain).filter((c) => c !== "");
        cells.push(...row);
        text.push(row.join(" "));
      }
      i--;
      continue;
    }
    if (heading) {
      endItem();
      headings.push(plain(heading[1]!));
      text.push(plain(heading[1]!));
    } else if (marker) {
      endItem();
      item = [marker[1]!];
      text.push(plain(marker[1]!));
    } else if (line.trim() === "") {
      // A blank line ends an item unless the next line is indented to it (a loose item's next paragraph).
      if (item && !/^\s{2,}\S/.test(lines[i + 1] ?? "")) endItem();
    } else if (item && /^\s+\S/.test(line)) {
      item.push(line);
      text.push(plain(line));
    } else {
      endItem();
      text.push(plain(line.replace(/^>\s?/, "")));
    }
  }
  endItem();
  return { headings: headings.filter(Boolean), items: items.filter(Boolean), cells, spans, text: text.filter(Boolean).join(" ") };
}

/** Edit distance over code points, one row at a time. */
export function distance(a: string, b: string): number {
  const s = Uint32Array.from([...a].map((c) => c.codePointAt(0)!));
  const t = Uint32Array.from([...b].map((c) => c.codePointAt(0)!));
  if (s.length === 0 || t.length === 0) return s.length + t.length;
  let prev = new Int32Array(t.length + 1).map((_, j) => j);
  let cur = new Int32Array(t.length + 1);
  for (let i = 1; i <= s.length; i++) {
    cur[0] = i;
    const si = s[i - 1];
    for (let j = 1; j <= t.length; j++) {
      const sub = prev[j - 1]! + (si === t[j - 1] ? 0 : 1);
      const del = prev[j]! + 1;
      const ins = cur[j - 1]! + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : del < ins ? del : ins;
    }
    [prev, cur] = [cur, prev];
  }
  return prev[t.length]!;
}

export function similar(a: string, b: string): boolean {
  const longer = Math.max([...a].length, [...b].length);
  if (longer === 0) return true;
  // Cheap bound first: lengths alone already too far apart.
  if (Math.abs([...a].length - [...b].length) > (1 - MATCH) * longer) return false;
  return 1 - distance(a, b) / longer >= MATCH;
}

/** How many of `reference` find a partner in `found`, one to one, exact keys first. */
export function matched(reference: readonly string[], found: readonly string[]): number {
  const pool = found.map(key);
  const refs = reference.map(key).filter((k) => k !== "");
  let n = 0;
  const rest: string[] = [];
  for (const r of refs) {
    const i = pool.indexOf(r);
    if (i >= 0) {
      pool.splice(i, 1);
      n++;
    } else rest.push(r);
  }
  for (const r of rest) {
    const i = pool.findIndex((p) => similar(r, p));
    if (i >= 0) {
      pool.splice(i, 1);
      n++;
    }
  }
  return n;
}


/** Merged cells of `reference` with a partner in `found` of similar text and the same spans, one to one. */
export function matchedSpans(reference: readonly Span[], found: readonly Span[]): number {
  const pool = [...found];
  let n = 0;
  for (const r of reference) {
    const i = pool.findIndex((p) => p.rows === r.rows && p.cols === r.cols && similar(key(r.text), key(p.text)));
    if (i >= 0) {
      pool.splice(i, 1);
      n++;
    }
  }
  return n;
}

/** The merged cells of `result.tables` (cells spanning more than one row or column). */
export const spansOf = (tables: readonly { cells?: readonly { text: string; row_span: number; col_span: number }[] }[]): Span[] =>
  tables.flatMap((t) => (t.cells ?? []).filter((c) => c.text && (c.row_span > 1 || c.col_span > 1)).map((c) => ({ text: plain(c.text), rows: c.row_span, cols: c.col_span })));
