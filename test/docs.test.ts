/**
 * What the docs say that can be checked against the code (issue 46, "Docs
 * that are true"): every `docs/…` file a source file or a doc names exists,
 * and every section it cites by title (`docs/ocr.md "Searchable PDF"`) is a
 * heading of that file; every `FOLIO_…` variable a doc lists is read
 * somewhere in the code. (That every route a doc names is one the edge
 * serves is checked against its OpenAPI document in
 * internal/edge/routes/platform.test.ts.)
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The project's own files: its folders walked (nothing generated, installed or built), and the files at its top. */
const FOLDERS = ["bench", "cmd", "deploy", "docs", "internal", "proto", "scripts", "test", "web/playground/src"];
const tracked = [
  ...readdirSync(ROOT).filter((f) => statSync(join(ROOT, f)).isFile()),
  ...FOLDERS.flatMap((d) => readdirSync(join(ROOT, d), { recursive: true, encoding: "utf8" }).map((f) => `${d}/${f}`)),
].filter((f) => !f.includes("node_modules/") && !f.includes("/fixtures/") && statSync(join(ROOT, f)).isFile());
const read = (f: string) => readFileSync(join(ROOT, f), "utf8");
const docs = tracked.filter((f) => /^(docs\/.*|README)\.md$/.test(f) || /^docs\/.*\.md$/.test(f));
const code = tracked.filter((f) => /\.(ts|js|mjs|sh|yaml|yml|json|proto|tpl)$/.test(f) || f === "Makefile" || /Dockerfile/.test(f));
const citing = [...docs, ...code.filter((f) => /\.(ts|proto)$/.test(f))];

/** What a markdown file's sections are called: its headings, and the bold labels that open a paragraph or a list item ("- **Fair.** …"); lower case, markup taken out. */
function headings(file: string): string[] {
  const lines = read(file).split("\n");
  const titles = lines.filter((l) => /^#{1,6}\s/.test(l)).map((l) => l.replace(/^#+\s*/, ""));
  const labels = lines.flatMap((l) => /^(?:[-*]\s+)?\*\*([^*]+?)\.?\*\*/.exec(l)?.[1] ?? []);
  return [...titles, ...labels].map((t) => t.replace(/[`*_]/g, "").toLowerCase().trim());
}

describe("docs that are true", () => {
  it("names only docs files that exist, and cites only sections those files have", () => {
    const missing: string[] = [];
    for (const f of citing) {
      const text = read(f);
      // Cited as `docs/ocr.md "Searchable PDF"`, `docs/ocr.md ("Pages")` or, in the API's descriptions, `(docs/ocr.md, Searchable PDF)`.
      for (const m of text.matchAll(/\bdocs\/([\w./-]+\.md)(?:(?:\s+|\s*\(\s*)"([^"\n]{3,80})"|, ([A-Z][\w ,'-]{2,60}?)\))?/g)) {
        const doc = `docs/${m[1]!}`;
        if (!existsSync(join(ROOT, doc))) {
          missing.push(`${f}: ${doc} does not exist`);
          continue;
        }
        const section = (m[2] ?? m[3])?.replace(/[`*_]/g, "").toLowerCase().trim();
        // A quoted text after a doc's name is a section title when it reads like one (no sentence inside).
        if (section && !/[.;:]\s/.test(section) && !headings(doc).some((h) => h.includes(section) || section.includes(h))) {
          missing.push(`${f}: ${doc} has no section "${m[2] ?? m[3]}"`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("lists only FOLIO_ variables the code reads", () => {
    const source = code.map(read).join("\n");
    const unread: string[] = [];
    for (const f of docs) {
      for (const m of read(f).matchAll(/`(FOLIO_[A-Z0-9_]+)`/g)) {
        const name = m[1]!;
        // A variable is read where the code names it outside the docs.
        if (!source.includes(name)) unread.push(`${f}: ${name}`);
      }
    }
    expect([...new Set(unread)]).toEqual([]);
  });
});
