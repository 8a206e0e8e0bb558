/**
 * eval-structure: how much of an office document's structure a local model's
 * `output_format: "markdown"` keeps (docs/ocr.md "Output formats"), against
 * `pandoc -t gfm` of the same file, on the development corpus (default
 * `../shared/corpus/office`, or FOLIO_STRUCTURE_CORPUS).
 *
 * For every DOCX, ODT, RTF and DOC file (PPTX and TXT have no pandoc reader
 * here; `awkward/` is skipped):
 * - reference: `pandoc -t gfm` of the file (a DOC converted to DOCX by
 *   LibreOffice first);
 * - reading: the file's pages as LibreOffice renders them to 200-DPI PNG
 *   (the conversion service's render, here without its sandbox: soffice to
 *   PDF, pdftoppm at 200 DPI) read by a local model (default local/auto) with
 *   output_format markdown, as the extraction service runs it; the pages'
 *   markdown joined by a blank line, as `result.text`. With FOLIO_BASE_URL
 *   and FOLIO_API_KEY set, the file goes to a running folio's /v1/ocr
 *   instead (conversion included).
 * Scores, per file and pooled over files:
 * - heading recall: the reference's headings found among the reading's
 *   headings (any level);
 * - list item recall: the reference's list items found among the reading's;
 * - table cell F1: non-empty cells of the reference's tables (GFM or HTML)
 *   against the reading's GFM table cells;
 * - CER: of the text with the markdown taken out, whitespace normalised.
 * "Found" is a one-to-one greedy match at a similarity of at least 0.8
 * (1 − edit distance / longer length, lower case, markup and punctuation at
 * the ends removed), so one misread letter does not lose an item.
 *
 * Goals (issue 26): heading recall, table cell F1 and list item recall each
 * at least 0.8, pooled.
 *
 * Usage: npx tsx bench/eval-structure.ts [--model local/auto] [--only substring] [--dump folder]
 * Needs soffice, pdftoppm and pandoc. Writes test-artifacts/eval-structure.json;
 * with --dump, each file's markdown as read (<file>.read.md) and pandoc's
 * (<file>.pandoc.md) in the folder, and the cells found and missed.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { localEngines, shutdownLocalEngines } from "../internal/extraction/index.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CORPUS = resolve(ROOT, process.env.FOLIO_STRUCTURE_CORPUS ?? "../shared/corpus/office");
const FORMATS = new Set([".docx", ".odt", ".rtf", ".doc"]);
/** Two texts match when they differ in at most a fifth of the longer one's characters. */
const MATCH = 0.8;
/** Pages read at a time (the machine's cores). */
const CONCURRENCY = 2;

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const MODEL = arg("--model") ?? "local/auto";
const ONLY = arg("--only");
const DUMP = arg("--dump");

interface Structure {
  headings: string[];
  items: string[];
  cells: string[];
  text: string;
}

/** Markup out of a piece of markdown or HTML: tags, emphasis, links, escapes, footnote marks. */
function plain(s: string): string {
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
function key(s: string): string {
  return plain(s)
    .normalize("NFC")
    .toLowerCase()
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, "");
}

/** Headings, list items, table cells and plain text of GitHub markdown (pandoc's, with its HTML tables, or Folio's). */
function parse(md: string): Structure {
  const headings: string[] = [];
  const items: string[] = [];
  const cells: string[] = [];
  const text: string[] = [];
  // HTML tables (pandoc writes tables GFM cannot hold as HTML).
  const noHtml = md.replace(/<table[\s\S]*?<\/table>/g, (t) => {
    for (const m of t.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)) {
      const c = plain(m[1]!);
      if (c) cells.push(c);
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
  return { headings: headings.filter(Boolean), items: items.filter(Boolean), cells, text: text.filter(Boolean).join(" ") };
}

/** Edit distance over code points, one row at a time. */
function distance(a: string, b: string): number {
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

function similar(a: string, b: string): boolean {
  const longer = Math.max([...a].length, [...b].length);
  if (longer === 0) return true;
  // Cheap bound first: lengths alone already too far apart.
  if (Math.abs([...a].length - [...b].length) > (1 - MATCH) * longer) return false;
  return 1 - distance(a, b) / longer >= MATCH;
}

/** How many of `reference` find a partner in `found`, one to one, exact keys first. */
function matched(reference: readonly string[], found: readonly string[]): number {
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

async function reference(file: string, work: string): Promise<string> {
  let source = file;
  if (extname(file).toLowerCase() === ".doc") {
    await run("soffice", [`-env:UserInstallation=file://${work}/profile`, "--headless", "--convert-to", "docx", "--outdir", work, file], { timeout: 180_000 });
    source = join(work, `${basename(file, extname(file))}.docx`);
  }
  const { stdout } = await run("pandoc", ["-t", "gfm", "--wrap=none", source], { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
  return stdout;
}

/** The file's pages as LibreOffice renders them for the conversion service: PDF, then 200-DPI PNG pages. */
async function pages(file: string, work: string): Promise<Buffer[]> {
  await run("soffice", [`-env:UserInstallation=file://${work}/profile`, "--headless", "--convert-to", "pdf", "--outdir", work, file], { timeout: 300_000 });
  const pdf = join(work, `${basename(file, extname(file))}.pdf`);
  await run("pdftoppm", ["-r", "200", "-png", pdf, join(work, "page")], { timeout: 300_000 });
  return readdirSync(work)
    .filter((f) => /^page-\d+\.png$/.test(f))
    .sort((a, b) => Number(/\d+/.exec(a)![0]) - Number(/\d+/.exec(b)![0]))
    .map((f) => readFileSync(join(work, f)));
}

async function readLocally(file: string, work: string): Promise<string> {
  const engine = localEngines().get(MODEL);
  if (!engine) throw new Error(`no local model ${MODEL}`);
  const images = await pages(file, work);
  const out = new Array<string>(images.length);
  let next = 0;
  const worker = async () => {
    while (next < images.length) {
      const i = next++;
      const r = await engine.extractPage({ pageNumber: i + 1, image: images[i]!, mimeType: "image/png" }, { extractTables: false, outputFormat: "markdown" }, AbortSignal.timeout(300_000));
      out[i] = r.text;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return out.join("\n\n");
}

async function readRemotely(file: string): Promise<string> {
  const res = await fetch(`${process.env.FOLIO_BASE_URL!.replace(/\/+$/, "")}/v1/ocr`, {
    method: "POST",
    headers: { authorization: `Bearer ${process.env.FOLIO_API_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ base64: readFileSync(file).toString("base64"), model: MODEL, options: { output_format: "markdown" } }),
  });
  const body = (await res.json()) as { result?: { text: string }; error?: unknown };
  if (!res.ok || !body.result) throw new Error(`/v1/ocr answered ${res.status}: ${JSON.stringify(body.error)}`);
  return body.result.text;
}

interface FileScore {
  file: string;
  headings: [number, number];
  items: [number, number];
  cells: { reference: number; read: number; matched: number };
  cer: number;
  refChars: number;
  edits: number;
}

async function main(): Promise<void> {
  const files = readdirSync(CORPUS)
    .filter((f) => FORMATS.has(extname(f).toLowerCase()) && (!ONLY || f.includes(ONLY)))
    .sort();
  const scores: FileScore[] = [];
  for (const f of files) {
    const work = mkdtempSync(join(tmpdir(), "folio-eval-structure-"));
    try {
      const file = join(CORPUS, f);
      const [refMd, readMd] = [await reference(file, work), process.env.FOLIO_BASE_URL ? await readRemotely(file) : await readLocally(file, work)];
      const [ref, read] = [parse(refMd), parse(readMd)];
      if (DUMP) {
        mkdirSync(DUMP, { recursive: true });
        writeFileSync(join(DUMP, `${f}.read.md`), readMd);
        writeFileSync(join(DUMP, `${f}.pandoc.md`), refMd);
        writeFileSync(join(DUMP, `${f}.cells.json`), JSON.stringify({ reference: ref.cells, read: read.cells }, null, 2));
      }
      const refText = key(ref.text);
      const edits = distance(key(read.text), refText);
      const s: FileScore = {
        file: f,
        headings: [matched(ref.headings, read.headings), ref.headings.length],
        items: [matched(ref.items, read.items), ref.items.length],
        cells: { reference: ref.cells.length, read: read.cells.length, matched: matched(ref.cells, read.cells) },
        cer: refText.length ? edits / [...refText].length : 0,
        refChars: [...refText].length,
        edits,
      };
      scores.push(s);
      console.log(
        `${f.padEnd(28)} headings ${s.headings[0]}/${s.headings[1]}  list items ${s.items[0]}/${s.items[1]}  cells ${s.cells.matched} of ${s.cells.reference} (read ${s.cells.read})  CER ${s.cer.toFixed(3)}`,
      );
    } catch (err) {
      const cause = (err as Error).cause instanceof Error ? ` (${((err as Error).cause as Error).message.split("\n")[0]})` : "";
      console.log(`${f.padEnd(28)} failed: ${(err as Error).message.split("\n")[0]}${cause}`);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const sum = (f: (s: FileScore) => number) => scores.reduce((n, s) => n + f(s), 0);
  const ratio = (a: number, b: number) => (b === 0 ? null : a / b);
  const precision = ratio(sum((s) => s.cells.matched), sum((s) => s.cells.read));
  const recall = ratio(sum((s) => s.cells.matched), sum((s) => s.cells.reference));
  const total = {
    model: MODEL,
    files: scores.length,
    heading_recall: ratio(sum((s) => s.headings[0]), sum((s) => s.headings[1])),
    list_item_recall: ratio(sum((s) => s.items[0]), sum((s) => s.items[1])),
    table_cell_precision: precision,
    table_cell_recall: recall,
    table_cell_f1: precision !== null && recall !== null && precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : null,
    cer: ratio(sum((s) => s.edits), sum((s) => s.refChars)),
  };
  console.log(JSON.stringify(total, null, 2));
  mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
  writeFileSync(join(ROOT, "test-artifacts", "eval-structure.json"), JSON.stringify({ total, files: scores }, null, 2));
  await shutdownLocalEngines();
}

await main();
