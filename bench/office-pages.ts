/**
 * office-pages: a reading corpus nothing was fitted to, built from the office
 * files of ../shared/corpus/office (or FOLIO_STRUCTURE_CORPUS): each file
 * rendered by LibreOffice to PDF, each page of it as a 200-DPI PNG (the
 * conversion service's render, without its sandbox) with the PDF's own text
 * of that page (`pdftotext`, the order LibreOffice wrote it in) as its ground
 * truth, in the layout `make eval` reads (`X.png` + `X.gt.txt`). Then
 * `FOLIO_EVAL_CORPUS=<folder> bench/eval-ocr.ts` scores the local models
 * against the tesseract CLI on pages unlike ../shared/corpus/ocr (slides,
 * forms, reports), as a stand-in for the pages this project has never seen
 * (issue 26's last goal). `make eval-office` does both.
 *
 * Pages the CLI cannot be told the language of are left out, so that it is
 * not handicapped: `make eval` tells it `deu` for names with `_de_` and
 * `eng` otherwise, and a German file is named so here (FOLIO_OFFICE_GERMAN,
 * default stress005); Spanish, Dutch and Japanese files (FOLIO_OFFICE_SKIP,
 * default stress018, testODTStyles3, testRTF-ms932, with_japanese) are
 * skipped, and so are pages with fewer than 20 characters of text.
 *
 * Usage: npx tsx bench/office-pages.ts <folder>
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, extname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CORPUS = resolve(ROOT, process.env.FOLIO_STRUCTURE_CORPUS ?? "../shared/corpus/office");
const FORMATS = new Set([".docx", ".odt", ".rtf", ".doc", ".pptx"]);
const list = (v: string | undefined, d: string) => (v ?? d).split(",").filter(Boolean);
const GERMAN = list(process.env.FOLIO_OFFICE_GERMAN, "stress005");
const SKIP = list(process.env.FOLIO_OFFICE_SKIP, "stress018,testODTStyles3,testRTF-ms932,with_japanese");
/** A page with less text than this is no test of reading. */
const MIN_CHARS = 20;

async function main(): Promise<void> {
  const out = process.argv[2];
  if (!out) throw new Error("usage: npx tsx bench/office-pages.ts <folder>");
  mkdirSync(out, { recursive: true });
  let pages = 0;
  for (const f of readdirSync(CORPUS).sort()) {
    const ext = extname(f).toLowerCase();
    const stem = basename(f, extname(f));
    if (!FORMATS.has(ext) || SKIP.includes(stem)) continue;
    const name = GERMAN.includes(stem) ? `office_de_${stem}_${ext.slice(1)}` : `office_${stem}_${ext.slice(1)}`;
    const work = mkdtempSync(join(tmpdir(), "folio-office-pages-"));
    try {
      await run("soffice", [`-env:UserInstallation=file://${work}/profile`, "--headless", "--convert-to", "pdf", "--outdir", work, join(CORPUS, f)], { timeout: 300_000 });
      const pdf = join(work, `${stem}.pdf`);
      const { stdout: info } = await run("pdfinfo", [pdf]);
      const count = Number(/^Pages:\s+(\d+)/m.exec(info)?.[1] ?? 0);
      for (let p = 1; p <= count; p++) {
        const { stdout: text } = await run("pdftotext", ["-f", String(p), "-l", String(p), "-enc", "UTF-8", pdf, "-"], { maxBuffer: 16 << 20 });
        if (text.replace(/\s+/g, "").length < MIN_CHARS) continue;
        writeFileSync(join(out, `${name}_p${p}.gt.txt`), text);
        await run("pdftoppm", ["-r", "200", "-f", String(p), "-l", String(p), "-png", "-singlefile", pdf, join(out, `${name}_p${p}`)], { timeout: 120_000 });
        pages++;
      }
      console.log(`${f}: ${count} pages`);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  console.log(`${pages} pages with their text in ${out}`);
  if (pages === 0) process.exitCode = 1;
}

await main();
