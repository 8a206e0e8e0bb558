/**
 * structure-corpus: office documents whose structure is known because this
 * program wrote it (issue 45), too many to fit by hand: headings by tag, by
 * size alone and numbered ("2.3 Results"); paragraphs justified and ragged;
 * bulleted, numbered and nested lists; tables ruled, unruled and
 * zebra-striped, with merged cells, right-aligned numbers and header rows,
 * long enough to run onto the next page; sections of two and three columns;
 * headers, footers and footnotes; and things that are not tables though
 * their words line up: a table of contents with dot leaders, a form's
 * lines, a definition list, a two-column page of prose.
 *
 * Each document is written as HTML and turned into a DOCX by LibreOffice
 * (Writer's HTML import: spans, columns, headers and footers survive), so
 * the corpus is office files that go through the conversion service like a
 * user's. Beside each `<id>.docx`: `<id>.md`, the truth (GitHub markdown;
 * a table with merged cells as HTML with rowspan/colspan; headers and
 * footers left out, as Folio's markdown leaves them out of the flow;
 * footnotes after the text), and `<id>.json`: its split, its features and
 * whether it should be read as scanned (bench/eval-structure.ts degrades
 * those pages: blur, grey paper, noise, JPEG, a slight skew).
 *
 * The split: every fourth document (by its number) is **held out**. No
 * threshold is ever chosen on it; eval-structure reports it apart
 * (docs/benchmarks/structure.md, "Structure").
 *
 * The words are this project's own docs/*.md prose, so no corpus text is
 * reused. Seeded: the same seed writes the same documents on every machine
 * from the same commit (the docs change, and the words with them: the
 * figures in docs/benchmarks/structure.md were read from the corpus as
 * written from the docs of 2602690).
 *
 * Usage: npx tsx bench/structure-corpus.ts <folder> [--documents 120] [--seed 45]
 */
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { docsProse, mulberry32 } from "./prose.ts";

const run = promisify(execFile);

/** A cell of a generated table; `null` where a span above or to the left covers the position. */
interface Cell {
  text: string;
  rowSpan: number;
  colSpan: number;
  numeric: boolean;
}
type Grid = (Cell | null)[][];

type Block =
  | { kind: "heading"; level: 1 | 2 | 3; text: string; by: "tag" | "size" }
  | { kind: "paragraph"; text: string; footnote?: string }
  | { kind: "list"; ordered: boolean; items: { text: string; children: string[] }[] }
  | { kind: "table"; grid: Grid; header: boolean; look: "ruled" | "unruled" | "zebra" }
  | { kind: "columns"; count: 2 | 3; blocks: Block[] }
  | { kind: "toc"; entries: { text: string; page: number }[] }
  | { kind: "form"; fields: string[] }
  | { kind: "definitions"; entries: { term: string; text: string }[] };

export interface CorpusDocument {
  id: string;
  split: "dev" | "held-out";
  scanned: boolean;
  features: string[];
  hasTable: boolean;
  font: string;
  header?: string;
  footer?: string;
  blocks: Block[];
}

const FONTS = ["Liberation Serif", "Liberation Sans", "DejaVu Serif", "DejaVu Sans", "Carlito", "Caladea"];
const UNITS = ["Revenue", "Cost", "Share", "Year", "Count", "Rate", "Total", "Change", "Budget", "Staff", "Hours", "Score"];

class Writer {
  private readonly texts: string[];
  private at: number;
  constructor(readonly rnd: () => number) {
    this.texts = docsProse(120, /[<>&|\\{}$]/);
    if (this.texts.length < 40) throw new Error(`only ${this.texts.length} paragraphs of prose in docs/`);
    this.at = Math.floor(rnd() * this.texts.length);
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.rnd() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rnd() * xs.length)]!;
  }
  chance(p: number): boolean {
    return this.rnd() < p;
  }
  paragraph(maxChars = 700): string {
    const p = this.texts[this.at++ % this.texts.length]!;
    if (p.length <= maxChars) return p;
    const cut = p.slice(0, maxChars);
    const end = cut.lastIndexOf(". ");
    return end > 80 ? cut.slice(0, end + 1) : `${cut.slice(0, cut.lastIndexOf(" "))}.`;
  }
  /** A phrase of n words as they stand in some paragraph (so it reads as language), punctuation out, first letter capital. */
  phrase(n: number): string {
    for (;;) {
      const words = this.pick(this.texts)
        .split(/\s+/)
        .map((w) => w.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, ""));
      if (words.length < n + 2) continue;
      const at = this.int(0, words.length - n);
      const w = words.slice(at, at + n);
      if (w.some((x) => x === "" || !/^[\p{L}][\p{L}'-]*$/u.test(x))) continue;
      return w.join(" ").replace(/^./, (c) => c.toUpperCase());
    }
  }
  /** A short sentence for a list item. */
  item(): string {
    return `${this.phrase(this.int(3, 9))}${this.chance(0.3) ? "." : ""}`;
  }
  number(): string {
    const kind = this.int(0, 4);
    if (kind === 0) return this.int(1, 99_999).toLocaleString("en-US");
    if (kind === 1) return `${(this.rnd() * 100).toFixed(1)}%`;
    if (kind === 2) return `$${(this.rnd() * 10_000).toFixed(2)}`;
    if (kind === 3) return String(this.int(1990, 2026));
    return (this.rnd() * 1000 - 200).toFixed(2);
  }
}

/** A table: a header row, label column, numbers right-aligned; spans where asked (a group header over columns, a label down rows). */
function table(w: Writer, rows: number, cols: number, spans: boolean): Grid {
  const grid: Grid = [];
  grid.push(Array.from({ length: cols }, (_, c) => ({ text: c === 0 ? w.phrase(1) : w.pick(UNITS), rowSpan: 1, colSpan: 1, numeric: false })));
  for (let r = 0; r < rows; r++) {
    const numericRow = Array.from({ length: cols }, (_, c) => c > 0 && w.chance(0.85));
    grid.push(Array.from({ length: cols }, (_, c) => ({ text: c === 0 ? w.phrase(w.int(1, 3)) : numericRow[c] ? w.number() : w.phrase(w.int(1, 2)), rowSpan: 1, colSpan: 1, numeric: numericRow[c]! })));
  }
  // A word longer than a column can hold (an environment variable's name in the docs' prose) would push
  // the table past the page's edge, where the truth has cells no reader can see: cut to 12 letters.
  for (const row of grid) for (const cell of row) if (cell) cell.text = cell.text.replace(/[\p{L}\p{N}]{16,}/gu, (w) => w.slice(0, 12));
  if (spans && cols >= 3) {
    // A group header over two columns of the header row.
    const c = w.int(1, cols - 2);
    grid[0]![c] = { ...grid[0]![c]!, text: `${w.phrase(1)} ${w.pick(UNITS).toLowerCase()}`, colSpan: 2 };
    grid[0]![c + 1] = null;
    // A label over two or three rows of the first column.
    if (rows >= 4) {
      const r = w.int(1, rows - 2);
      const n = Math.min(w.int(2, 3), rows - r + 1);
      grid[r]![0] = { ...grid[r]![0]!, rowSpan: n };
      for (let k = 1; k < n; k++) grid[r + k]![0] = null;
    }
  }
  return grid;
}

function heading(w: Writer, level: 1 | 2 | 3, numbered: number[] | undefined): Block {
  const text = w.phrase(w.int(2, 6));
  return { kind: "heading", level, text: numbered ? `${numbered.join(".")} ${text}` : text, by: w.chance(0.3) ? "size" : "tag" };
}

/** One document: a title, then sections of mixed blocks, each kind chosen by a weighted draw. */
function document(w: Writer, n: number): CorpusDocument {
  const features = new Set<string>();
  const blocks: Block[] = [];
  const numbered = w.chance(0.4);
  const tableFree = w.chance(0.3);
  const sections = w.int(2, 5);
  blocks.push({ kind: "heading", level: 1, text: w.phrase(w.int(3, 7)), by: w.chance(0.3) ? "size" : "tag" });
  let hasTable = false;
  const section = (s: number, into: Block[], narrow: boolean) => {
    into.push(heading(w, 2, numbered ? [s] : undefined));
    const parts = w.int(2, 4);
    for (let p = 0; p < parts; p++) {
      const draw = w.rnd();
      if (draw < 0.35) {
        const footnote = !narrow && w.chance(0.12) ? w.paragraph(160) : undefined;
        if (footnote) features.add("footnote");
        into.push({ kind: "paragraph", text: w.paragraph(narrow ? 450 : 700), ...(footnote ? { footnote } : {}) });
      } else if (draw < 0.55) {
        const ordered = w.chance(0.4);
        const nested = w.chance(0.3);
        features.add(ordered ? "numbered list" : "bulleted list");
        if (nested) features.add("nested list");
        into.push({
          kind: "list",
          ordered,
          items: Array.from({ length: w.int(2, 6) }, (_, i) => ({ text: w.item(), children: nested && i === 1 ? Array.from({ length: w.int(2, 3) }, () => w.item()) : [] })),
        });
      } else if (draw < 0.72 && !tableFree) {
        const spans = w.chance(0.35);
        const look = w.pick(["ruled", "unruled", "zebra"] as const);
        features.add(`${look} table`);
        if (spans) features.add("merged cells");
        const long = !narrow && w.chance(0.12);
        if (long) features.add("table across pages");
        into.push({ kind: "table", grid: table(w, long ? w.int(40, 60) : w.int(3, 9), narrow ? w.int(2, 3) : w.int(2, 6), spans), header: true, look });
        hasTable = true;
      } else if (draw < 0.8) {
        const sub = heading(w, 3, numbered ? [s, p + 1] : undefined);
        into.push(sub, { kind: "paragraph", text: w.paragraph(500) });
      } else if (draw < 0.87 && !narrow) {
        const kind = w.pick(["toc", "form", "definitions"] as const);
        features.add(kind === "toc" ? "table of contents" : kind === "form" ? "form lines" : "definition list");
        if (kind === "toc") into.push({ kind, entries: Array.from({ length: w.int(4, 8) }, (_, i) => ({ text: `${i + 1} ${w.phrase(w.int(2, 5))}`, page: 2 + i * w.int(1, 4) })) });
        else if (kind === "form") into.push({ kind, fields: Array.from({ length: w.int(3, 6) }, () => w.phrase(w.int(1, 3))) });
        else into.push({ kind, entries: Array.from({ length: w.int(3, 5) }, () => ({ term: w.phrase(1), text: w.paragraph(200) })) });
      } else {
        into.push({ kind: "paragraph", text: w.paragraph(narrow ? 450 : 700) });
      }
    }
  };
  const columns = w.chance(0.3) ? (w.chance(0.6) ? 2 : 3) : 0;
  for (let s = 1; s <= sections; s++) {
    if (columns && s === 2) {
      features.add(`${columns} columns`);
      const inner: Block[] = [];
      section(s, inner, true);
      inner.push({ kind: "paragraph", text: w.paragraph(600) }, { kind: "paragraph", text: w.paragraph(600) });
      blocks.push({ kind: "columns", count: columns as 2 | 3, blocks: inner });
    } else section(s, blocks, false);
  }
  if (blocks.some((b) => b.kind === "heading" && b.by === "size")) features.add("heading by size");
  if (numbered) features.add("numbered headings");
  const header = w.chance(0.4) ? w.phrase(w.int(2, 5)) : undefined;
  const footer = w.chance(0.4) ? `${w.phrase(w.int(1, 3))} · ${w.int(2020, 2026)}` : undefined;
  if (header || footer) features.add("header or footer");
  return {
    id: `gen_${String(n).padStart(3, "0")}`,
    split: n % 4 === 3 ? "held-out" : "dev",
    scanned: w.chance(0.25),
    features: [...features].sort(),
    hasTable,
    font: w.pick(FONTS),
    ...(header ? { header } : {}),
    ...(footer ? { footer } : {}),
    blocks,
  };
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** The document as the HTML that LibreOffice's Writer imports. */
function html(d: CorpusDocument, w: Writer): string {
  let footnotes = 0;
  const notes: string[] = [];
  const base = w.pick([10, 10.5, 11, 12]);
  const justify = w.chance(0.5);
  const sizes = { 1: base + 9, 2: base + 4, 3: base + 2 } as const;
  const block = (b: Block): string => {
    switch (b.kind) {
      case "heading":
        return b.by === "tag" ? `<h${b.level}>${esc(b.text)}</h${b.level}>` : `<p style="font-size:${sizes[b.level]}pt;font-weight:bold;margin-top:10pt">${esc(b.text)}</p>`;
      case "paragraph": {
        if (!b.footnote) return `<p${justify ? ' align="justify"' : ""}>${esc(b.text)}</p>`;
        const k = ++footnotes;
        notes.push(`<div id="sdfootnote${k}"><p><a class="sdfootnotesym" name="sdfootnote${k}sym" href="#sdfootnote${k}anc">${k}</a>${esc(b.footnote)}</p></div>`);
        return `<p${justify ? ' align="justify"' : ""}>${esc(b.text)}<a class="sdfootnoteanc" name="sdfootnote${k}anc" href="#sdfootnote${k}sym"><sup>${k}</sup></a></p>`;
      }
      case "list": {
        const tag = b.ordered ? "ol" : "ul";
        return `<${tag}>${b.items.map((i) => `<li>${esc(i.text)}${i.children.length ? `<${tag}>${i.children.map((c) => `<li>${esc(c)}</li>`).join("")}</${tag}>` : ""}</li>`).join("")}</${tag}>`;
      }
      case "table": {
        const ruled = b.look === "ruled";
        const rows = b.grid.map((row, r) => {
          const shade = b.look === "zebra" && r > 0 && r % 2 === 0 ? ' bgcolor="#e4e4e4"' : b.look === "zebra" && r === 0 ? ' bgcolor="#c8c8c8"' : "";
          const cells = row.map((c) => {
            if (!c) return "";
            const tag = r === 0 && b.header ? "th" : "td";
            const span = `${c.rowSpan > 1 ? ` rowspan="${c.rowSpan}"` : ""}${c.colSpan > 1 ? ` colspan="${c.colSpan}"` : ""}`;
            return `<${tag}${span}${c.numeric ? ' align="right"' : r === 0 ? ' align="left"' : ""}>${esc(c.text)}</${tag}>`;
          });
          return `<tr${shade}>${cells.join("")}</tr>`;
        });
        return `<table${ruled ? ' border="1"' : ""} cellpadding="4" cellspacing="0">${rows.join("")}</table><p></p>`;
      }
      case "columns":
        return `<multicol cols="${b.count}" gutter="${w.int(16, 30)}">${b.blocks.map(block).join("")}</multicol>`;
      case "toc":
        return b.entries.map((e) => `<p>${esc(e.text)} ${".".repeat(Math.max(8, 70 - e.text.length))} ${e.page}</p>`).join("");
      case "form":
        return b.fields.map((f) => `<p>${esc(f)}: ${"_".repeat(40)}</p>`).join("");
      case "definitions":
        return `<dl>${b.entries.map((e) => `<dt><b>${esc(e.term)}</b></dt><dd>${esc(e.text)}</dd>`).join("")}</dl>`;
    }
  };
  const body = d.blocks.map(block).join("\n");
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{font-family:'${d.font}';font-size:${base}pt}</style></head><body>
${d.header ? `<div title="header"><p>${esc(d.header)}</p></div>` : ""}
${body}
${notes.join("\n")}
${d.footer ? `<div title="footer"><p>${esc(d.footer)}</p></div>` : ""}
</body></html>`;
}

/** A table as markdown: GFM when no cell spans, else HTML with rowspan/colspan (GFM cannot say a span). */
function tableMarkdown(grid: Grid): string {
  if (grid.every((row) => row.every((c) => c && c.rowSpan === 1 && c.colSpan === 1))) {
    const line = (row: (Cell | null)[]) => `| ${row.map((c) => c!.text.replace(/\|/g, "\\|")).join(" | ")} |`;
    return [line(grid[0]!), `|${grid[0]!.map(() => "---").join("|")}|`, ...grid.slice(1).map(line)].join("\n");
  }
  const rows = grid.map(
    (row, r) =>
      `<tr>${row
        .filter((c): c is Cell => c !== null)
        .map((c) => `<${r === 0 ? "th" : "td"}${c.rowSpan > 1 ? ` rowspan="${c.rowSpan}"` : ""}${c.colSpan > 1 ? ` colspan="${c.colSpan}"` : ""}>${esc(c.text)}</${r === 0 ? "th" : "td"}>`)
        .join("")}</tr>`,
  );
  return `<table>${rows.join("")}</table>`;
}

/** The truth: the document's flow as GitHub markdown; header and footer out; footnotes at the end. */
export function truth(d: CorpusDocument): string {
  const out: string[] = [];
  const notes: string[] = [];
  const block = (b: Block): void => {
    switch (b.kind) {
      case "heading":
        out.push(`${"#".repeat(b.level)} ${b.text}`);
        break;
      case "paragraph":
        out.push(b.text);
        if (b.footnote) notes.push(b.footnote);
        break;
      case "list":
        out.push(
          b.items
            .map((i, k) => {
              const marker = b.ordered ? `${k + 1}.` : "-";
              const children = i.children.map((c, j) => `${" ".repeat(marker.length + 1)}${b.ordered ? `${j + 1}.` : "-"} ${c}`);
              return [`${marker} ${i.text}`, ...children].join("\n");
            })
            .join("\n"),
        );
        break;
      case "table":
        out.push(tableMarkdown(b.grid));
        break;
      case "columns":
        b.blocks.forEach(block);
        break;
      case "toc":
        for (const e of b.entries) out.push(`${e.text} ${e.page}`);
        break;
      case "form":
        for (const f of b.fields) out.push(`${f}:`);
        break;
      case "definitions":
        for (const e of b.entries) out.push(`**${e.term}**`, e.text);
        break;
    }
  };
  d.blocks.forEach(block);
  out.push(...notes);
  return `${out.join("\n\n")}\n`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const arg = (name: string, def: number) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : def;
  };
  const out = args[0] && !args[0].startsWith("--") ? resolve(args[0]) : undefined;
  if (!out) throw new Error("usage: npx tsx bench/structure-corpus.ts <folder> [--documents 120] [--seed 45]");
  const count = arg("--documents", 120);
  const seed = arg("--seed", 45);
  mkdirSync(out, { recursive: true });
  for (const f of readdirSync(out).filter((f) => /^gen_\d+\.(docx|md|json)$/.test(f))) rmSync(join(out, f));
  const work = join(out, ".html");
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work);
  const w = new Writer(mulberry32(seed));
  const docs = Array.from({ length: count }, (_, n) => document(w, n));
  for (const d of docs) {
    writeFileSync(join(work, `${d.id}.html`), html(d, w));
    writeFileSync(join(out, `${d.id}.md`), truth(d));
    const { blocks: _blocks, ...meta } = d;
    writeFileSync(join(out, `${d.id}.json`), `${JSON.stringify({ ...meta, seed }, null, 2)}\n`);
  }
  // One LibreOffice for every file (its start is most of a small conversion), with a profile of its own.
  const files = docs.map((d) => join(work, `${d.id}.html`));
  await run("soffice", [`-env:UserInstallation=file://${work}/profile`, "--headless", "--infilter=HTML (StarWriter)", "--convert-to", "docx:MS Word 2007 XML", "--outdir", out, ...files], {
    timeout: 30 * 60_000,
    maxBuffer: 16 << 20,
  });
  const made = readdirSync(out).filter((f) => f.endsWith(".docx")).length;
  if (made !== count) throw new Error(`LibreOffice wrote ${made} of ${count} documents`);
  rmSync(work, { recursive: true, force: true });
  const heldOut = docs.filter((d) => d.split === "held-out").length;
  console.log(`${count} documents (${count - heldOut} dev, ${heldOut} held out; ${docs.filter((d) => d.scanned).length} to be read as scans) in ${out}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main();
