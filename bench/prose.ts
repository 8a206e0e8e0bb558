/**
 * What the generated corpora are written from (bench/structure-corpus.ts,
 * bench/column-pages.ts): paragraphs of this project's own docs, so no
 * corpus text is reused, and a small seeded generator, so the same seed
 * writes the same documents on every machine.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const DOCS = fileURLToPath(new URL("../docs", import.meta.url));

/**
 * Paragraphs of plain prose from docs/*.md: no code, tables, headings or
 * list items; markup taken out; at least `minChars` long, starting with a
 * capital and holding none of `unwanted`.
 */
export function docsProse(minChars: number, unwanted: RegExp): string[] {
  const out: string[] = [];
  for (const f of readdirSync(DOCS).filter((f) => f.endsWith(".md")).sort()) {
    const text = readFileSync(join(DOCS, f), "utf8").replace(/```[\s\S]*?```/g, "");
    for (const block of text.split(/\n\s*\n/)) {
      if (/^\s*([#|>*-]|\d+\.)/.test(block)) continue;
      const p = block
        .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
        .replace(/[`*_]/g, "")
        .replace(/\s+/g, " ")
        .trim();
      if (p.length > minChars && !unwanted.test(p) && /^[A-Z]/.test(p)) out.push(p);
    }
  }
  return out;
}

/** mulberry32: small, seeded, the same everywhere (the tests' generator). */
export { seeded as mulberry32 } from "../test/support.ts";
