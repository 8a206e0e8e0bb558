/**
 * column-pages: pages of columns nothing was fitted to, for issue 26's goal on
 * pages this project has never seen, where the tesseract CLI's own column
 * reading is strongest (the issue's unseen set lost most on two- and
 * three-column report and magazine pages). Each page is HTML printed to PDF
 * by chromium (two and three columns, a title across them, an abstract, a
 * table inside a column and one across the page, a boxed sidebar with a list,
 * a footnote line; four fonts, justified and ragged), rendered at 200 DPI by
 * pdftoppm, with the PDF's text in its content order (`pdftotext -raw`: the
 * document's order, column after column) as its truth. The prose is this
 * project's own docs/*.md, so no corpus text is reused. With `--scanned`,
 * each page is also written as a "scan": a soft blur, grey paper, grey ink,
 * noise and JPEG at quality 55 (sharp), a fixed seed per page.
 *
 * Then `FOLIO_EVAL_CORPUS=<folder> bench/eval-ocr.ts` scores it as `make
 * eval` scores ../shared/corpus/ocr; `make eval-columns` does both (figures
 * in docs/benchmarks/reading-quality.md, "Pages of columns").
 *
 * Usage: npx tsx bench/column-pages.ts <folder> [--scanned]
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { docsProse } from "./prose.ts";
import { lcg as random, scannedPage } from "./scan.ts";

const run = promisify(execFile);
const CHROMIUM = process.env.FOLIO_TEST_CHROMIUM ?? "/usr/bin/chromium";

const FONTS = ["'DejaVu Serif', serif", "'Liberation Serif', serif", "'DejaVu Sans', sans-serif", "'Liberation Sans', sans-serif"];

function layouts(next: () => string, rnd: () => number): ((p: () => string) => string)[] {
  const words = (n: number) => next().split(" ").slice(0, n).join(" ");
  const table = (rows: number, cols: number) =>
    "<table><tr>" +
    Array.from({ length: cols }, (_, c) => `<th>${c === 0 ? "Item" : ["Cost", "Share", "Year", "Count", "Rate"][c % 5]}</th>`).join("") +
    "</tr>" +
    Array.from({ length: rows }, (_, r) => "<tr>" + Array.from({ length: cols }, (_, c) => `<td>${c === 0 ? words(2 + (r % 2)) : (Math.floor(rnd() * 9000) + 100).toLocaleString("en-US")}</td>`).join("") + "</tr>").join("") +
    "</table>";
  const paras = (n: number) => Array.from({ length: n }, () => `<p>${next()}</p>`).join("");
  return [
    () => `<h1>${words(6)}</h1><div class="cols" style="column-count:2">${paras(9)}</div>`,
    () => `<h1>${words(4)}</h1><div class="cols" style="column-count:3">${Array.from({ length: 6 }, () => `<h3>${words(3)}</h3><p>${next()}</p>`).join("")}</div>`,
    () => `<h2>${words(7)}</h2><div class="cols" style="column-count:2"><p>${next()}</p>${table(6, 3)}${paras(4)}</div>`,
    () => `<h1>${words(5)}</h1><p class="abs"><b>Abstract.</b> ${next()}</p><div class="cols" style="column-count:2">${paras(4)}</div>${table(5, 5)}`,
    () =>
      `<h2>${words(5)}</h2><div style="display:flex;gap:6mm"><div style="flex:2">${paras(5)}</div><div style="flex:1;border:1px solid #444;padding:3mm;font-size:0.85em"><h3>${words(2)}</h3><p>${next()}</p><ul>${Array.from({ length: 4 }, () => `<li>${words(5)}</li>`).join("")}</ul></div></div>`,
    () => `<div class="cols" style="column-count:2;font-size:9pt">${paras(12)}</div><hr><p style="font-size:8pt">${words(30)}</p>`,
  ];
}

async function main(): Promise<void> {
  const out = process.argv[2] ? resolve(process.argv[2]) : undefined;
  if (!out) throw new Error("usage: npx tsx bench/column-pages.ts <folder> [--scanned]");
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (scripts/ensure-deps.sh test), or set FOLIO_TEST_CHROMIUM`);
  const scan = process.argv.includes("--scanned");
  mkdirSync(out, { recursive: true });
  const texts = docsProse(250, /[<>&|\\{}]/);
  if (texts.length < 40) throw new Error(`only ${texts.length} paragraphs of prose in docs/`);
  let at = 0;
  const next = () => texts[at++ % texts.length]!;
  const rnd = random(7);
  const kinds = layouts(next, rnd);
  let n = 0;
  for (let round = 0; round < 2; round++) {
    for (const [k, layout] of kinds.entries()) {
      const html = `<!doctype html><html><head><meta charset="utf-8"><style>
@page { size: A4; margin: 18mm 16mm; }
body { font-family: ${FONTS[(k + round) % FONTS.length]}; font-size: ${[10, 11, 10.5, 9.5][(k + round * 2) % 4]}pt; line-height: 1.3; margin: 0; }
h1 { font-size: 20pt; margin: 0 0 4mm; } h2 { font-size: 15pt; margin: 0 0 3mm; } h3 { font-size: 11.5pt; margin: 2mm 0 1mm; }
p { margin: 0 0 2mm; text-align: ${round ? "left" : "justify"}; }
.cols { column-gap: ${[5, 8, 6][(k + round) % 3]}mm; }
.abs { margin: 0 8mm 4mm; font-style: italic; }
table { border-collapse: collapse; margin: 2mm 0; font-size: 0.9em; break-inside: avoid; }
td, th { border: 1px solid #333; padding: 0.6mm 1.5mm; text-align: left; }
</style></head><body><div style="height:260mm;overflow:hidden">${layout(next)}</div></body></html>`;
      const name = `cols_${String(++n).padStart(2, "0")}_layout${k + 1}`;
      const base = join(out, name);
      writeFileSync(`${base}.html`, html);
      await run(CHROMIUM, ["--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer", `--print-to-pdf=${base}.pdf`, `${base}.html`], { timeout: 120_000 });
      await run("pdftoppm", ["-r", "200", "-f", "1", "-l", "1", "-png", "-singlefile", `${base}.pdf`, base], { timeout: 120_000 });
      const { stdout: text } = await run("pdftotext", ["-raw", "-f", "1", "-l", "1", "-enc", "UTF-8", `${base}.pdf`, "-"], { maxBuffer: 16 << 20 });
      writeFileSync(`${base}.gt.txt`, text);
      if (scan) {
        writeFileSync(`${base}_scan.jpg`, await scannedPage(`${base}.png`, 11 + n));
        writeFileSync(`${base}_scan.gt.txt`, text);
      }
    }
  }
  console.log(`${n} pages${scan ? " and their scans" : ""} with their text in ${out}`);
}

await main();
