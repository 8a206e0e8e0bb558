/**
 * structure-layout: the layout code alone (internal/extraction/layout) scored
 * on the generated structure corpus, from pages read once and cached, so
 * two versions of the layout can be compared on the same words in a minute
 * (bench/eval-structure.ts reads every page anew through a local model,
 * about half an hour for the corpus).
 *
 * `cache` renders each corpus document as eval-structure does (soffice to
 * PDF, pdftoppm at 200 DPI, a scan's pages degraded by bench/scan.ts with
 * the same seeds) and keeps each page with the tesseract command line's TSV
 * (`--psm 3`, English) in test-artifacts/structure-cache. `score` runs the
 * layout on them (the page's ruled grids from its pixels, analyzePage,
 * structurePage, renderMarkdown, the tables' cells) and scores as
 * eval-structure does (bench/structure-score.ts), pooled per set and per
 * feature of the corpus. The words are the CLI's, not local/auto's (no
 * straightening of scans, no enlarged second reading): the figures compare
 * layout code, and eval-structure's are the ones the goals name.
 * As `local/auto` does (engines/auto.ts), a page with ruling lines is also
 * read with its lines painted out (`<page>.unruled.tsv`), and that reading
 * is scored where auto would keep it (`isBetter`): read with its lines, the
 * CLI takes a table's rules for "|" and fuses them with the cells' words.
 *
 * Usage: npx tsx bench/structure-layout.ts cache
 *        npx tsx bench/structure-layout.ts score [--set dev|held-out|all] [--only gen_001] [--first N] [--lined] [-v]
 * (`--first N`: the first N documents by name only, to compare two layouts while the cache is still filling;
 * `--lined`: the readings with their ruling lines only, as while the second reading is not cached yet)
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { MIN_RULE_SHARE, isBetter } from "../internal/extraction/engines/auto.ts";
import { tableOf } from "../internal/extraction/engines/tables.ts";
import { findPageRules } from "../internal/extraction/layout/grid.ts";
import { decodeGrey, encodePgm } from "../internal/extraction/layout/image.ts";
import { removeRules } from "../internal/extraction/layout/rules.ts";
import { renderMarkdown, structurePage } from "../internal/extraction/layout/markdown.ts";
import { analyzePage } from "../internal/extraction/layout/page.ts";
import { lcg, scannedPage } from "./scan.ts";
import { matched, matchedSpans, parse, spansOf } from "./structure-score.ts";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CORPUS = resolve(ROOT, "test-artifacts/structure-corpus");
const CACHE = resolve(ROOT, "test-artifacts/structure-cache");
/** As bench/eval-structure.ts reads scans: a skew of up to this many degrees, seeded per file and page. */
const MAX_SCAN_SKEW = 1.2;

const args = process.argv.slice(2);
const arg = (name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const seedOf = (name: string) => [...name].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);

interface Meta {
  split: "dev" | "held-out";
  scanned: boolean;
  features: string[];
  header?: string;
  footer?: string;
}

async function cache(): Promise<void> {
  const pdfs = join(CACHE, "pdf");
  mkdirSync(pdfs, { recursive: true });
  const docs = readdirSync(CORPUS).filter((f) => f.endsWith(".docx")).sort();
  const todo = docs.filter((f) => !existsSync(join(pdfs, `${basename(f, ".docx")}.pdf`)));
  if (todo.length) {
    await run("soffice", [`-env:UserInstallation=file://${join(CACHE, "profile")}`, "--headless", "--convert-to", "pdf", "--outdir", pdfs, ...todo.map((f) => join(CORPUS, f))], { timeout: 3_600_000, maxBuffer: 1 << 24 });
  }
  for (const f of docs) {
    const name = basename(f, ".docx");
    const dir = join(CACHE, name);
    if (existsSync(join(dir, "done"))) continue;
    mkdirSync(dir, { recursive: true });
    const meta = JSON.parse(readFileSync(join(CORPUS, `${name}.json`), "utf8")) as Meta;
    await run("pdftoppm", ["-r", "200", "-png", join(pdfs, `${name}.pdf`), join(dir, "page")]);
    const rendered = readdirSync(dir)
      .filter((x) => /^page-\d+\.png$/.test(x))
      .sort((a, b) => Number(/\d+/.exec(a)![0]) - Number(/\d+/.exec(b)![0]));
    const pages: string[] = [];
    for (const [i, p] of rendered.entries()) {
      let file = join(dir, p);
      if (meta.scanned) {
        const rnd = lcg(seedOf(f) + i);
        file = join(dir, `scan-${i + 1}.jpg`);
        writeFileSync(file, await scannedPage(readFileSync(join(dir, p)), seedOf(f) + 101 * i, (rnd() * 2 - 1) * MAX_SCAN_SKEW));
      }
      pages.push(file);
    }
    let next = 0;
    const worker = async () => {
      while (next < pages.length) {
        const file = pages[next++]!;
        const { stdout } = await run("tesseract", [file, "-", "-l", "eng", "--psm", "3", "tsv"], { maxBuffer: 1 << 26 });
        writeFileSync(file.replace(/\.(png|jpg)$/, ".tsv"), stdout);
      }
    };
    await Promise.all([worker(), worker()]);
    writeFileSync(join(dir, "pages.json"), JSON.stringify({ ...meta, pages: pages.map((p) => basename(p)) }));
    writeFileSync(join(dir, "done"), "");
  }
  // Each page with ruling lines read again without them, as local/auto reads it.
  for (const f of docs) {
    const dir = join(CACHE, basename(f, ".docx"));
    if (existsSync(join(dir, "unruled.done"))) continue;
    const { pages } = JSON.parse(readFileSync(join(dir, "pages.json"), "utf8")) as { pages: string[] };
    for (const page of pages) {
      const grey = await decodeGrey(readFileSync(join(dir, page)));
      if (removeRules(grey) < MIN_RULE_SHARE * grey.width * grey.height) continue;
      const pgm = join(dir, page.replace(/\.(png|jpg)$/, ".unruled.pgm"));
      writeFileSync(pgm, encodePgm(grey));
      const { stdout } = await run("tesseract", [pgm, "-", "-l", "eng", "--psm", "3", "tsv"], { maxBuffer: 1 << 26 });
      writeFileSync(pgm.replace(/\.pgm$/, ".tsv"), stdout);
    }
    writeFileSync(join(dir, "unruled.done"), "");
  }
  console.log(`${docs.length} documents cached in ${CACHE}`);
}

/** Matched, reference and read counts of one score, summed. */
interface Tally {
  headings: [number, number, number];
  items: [number, number];
  cells: [number, number, number];
  spans: [number, number, number];
  noTable: [number, number];
}
const empty = (): Tally => ({ headings: [0, 0, 0], items: [0, 0], cells: [0, 0, 0], spans: [0, 0, 0], noTable: [0, 0] });
function add(into: Tally, t: Tally): void {
  for (const k of Object.keys(into) as (keyof Tally)[]) into[k].forEach((_, i) => (into[k][i]! += t[k][i]!));
}
function line(label: string, t: Tally): string {
  const f1 = ([m, r, g]: number[]) => {
    const p = g ? m! / g : 0;
    const q = r ? m! / r : 0;
    return `${p.toFixed(2)} / ${q.toFixed(2)} / ${p + q ? ((2 * p * q) / (p + q)).toFixed(2) : "0.00"} (${m} of ${r}, read ${g})`;
  };
  const h = t.headings;
  return `${label.padEnd(24)} headings ${(h[0] / Math.max(1, h[1])).toFixed(3)} (${h[0]} of ${h[1]})  list items ${(t.items[0] / Math.max(1, t.items[1])).toFixed(2)}  cells P/R/F1 ${f1(t.cells)}  merged ${f1(t.spans)}  no table where none ${t.noTable[0]} of ${t.noTable[1]}`;
}

async function score(): Promise<void> {
  const set = arg("--set") ?? "dev";
  const only = arg("--only");
  const first = Number(arg("--first") ?? Infinity);
  const total = empty();
  const byFeature = new Map<string, Tally>();
  for (const name of readdirSync(CACHE).filter((d) => existsSync(join(CACHE, d, "done"))).sort().slice(0, first)) {
    if (only && !name.includes(only)) continue;
    const meta = JSON.parse(readFileSync(join(CACHE, name, "pages.json"), "utf8")) as Meta & { pages: string[] };
    if (set !== "all" && meta.split !== set) continue;
    const markdown: string[] = [];
    const spans = [];
    for (const [i, page] of meta.pages.entries()) {
      const file = join(CACHE, name, page);
      const grey = await decodeGrey(readFileSync(file));
      const rules = findPageRules(grey);
      const lined = analyzePage(readFileSync(file.replace(/\.(png|jpg)$/, ".tsv"), "utf8"), { rules });
      const unruled = file.replace(/\.(png|jpg)$/, ".unruled.tsv");
      const clean = existsSync(unruled) && !args.includes("--lined") ? analyzePage(readFileSync(unruled, "utf8"), { rules }) : undefined;
      const read = clean && isBetter(clean, lined) ? clean : lined;
      markdown.push(renderMarkdown(structurePage(read.sources, grey)));
      spans.push(...spansOf(read.tables.map((t) => tableOf(i + 1, t.rows, t.spans, t))));
    }
    const ref = parse(readFileSync(join(CORPUS, `${name}.md`), "utf8"));
    const got = parse(markdown.join("\n\n"));
    const t: Tally = {
      headings: [matched(ref.headings, got.headings), ref.headings.length, got.headings.length],
      items: [matched(ref.items, got.items), ref.items.length],
      cells: [matched(ref.cells, got.cells), ref.cells.length, got.cells.length],
      spans: [matchedSpans(ref.spans, spans), ref.spans.length, spans.length],
      noTable: ref.cells.length === 0 ? [got.cells.length === 0 ? 1 : 0, 1] : [0, 0],
    };
    add(total, t);
    for (const f of [...meta.features, meta.scanned ? "read as a scan" : "clean"]) {
      if (!byFeature.has(f)) byFeature.set(f, empty());
      add(byFeature.get(f)!, t);
    }
    if (args.includes("-v")) console.log(line(`${name}${meta.scanned ? " scan" : ""}`, t));
  }
  for (const [f, t] of [...byFeature].sort()) console.log(line(f, t));
  console.log(line(`all ${set}`, total));
}

if (args[0] === "cache") await cache();
else if (args[0] === "score") await score();
else {
  console.error("usage: npx tsx bench/structure-layout.ts cache | score [--set dev|held-out|all] [--only name] [--first N] [--lined] [-v]");
  process.exit(2);
}
