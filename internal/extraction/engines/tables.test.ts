// Defensive parsing of model answers: text, tables (json block or Markdown)
// and confidence; junk never throws.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { ExtractOptions } from "../types.ts";
import { findMarkdownTables, joinPageTables, normalizeRows, parsePageAnswer, renderMarkdownTable, tableOf, tablesFromJson } from "./tables.ts";

const text: ExtractOptions = { extractTables: true, outputFormat: "text" };
const markdown: ExtractOptions = { extractTables: true, outputFormat: "markdown" };
const json: ExtractOptions = { extractTables: true, outputFormat: "json" };
const rows = [
  ["Item", "Qty"],
  ["Apple", "2"],
];

describe("parsePageAnswer: text and markdown", () => {
  it("takes tables and confidence from the trailing json block and removes it from the text", () => {
    const answer = `Invoice 42\nItem\tQty\nApple\t2\n\n\`\`\`json\n${JSON.stringify({ tables: [{ rows }], confidence: 0.93 })}\n\`\`\`\n`;
    expect(parsePageAnswer(answer, 3, text)).toEqual({
      text: "Invoice 42\nItem\tQty\nApple\t2",
      tables: [{ page_number: 3, rows, markdown: "| Item | Qty |\n| --- | --- |\n| Apple | 2 |", cells: expect.any(Array), html: expect.stringContaining("<th>Qty</th>") }],
      confidence: 0.93,
    });
  });

  it("reads the block without tables when extractTables is off, but still strips it", () => {
    const r = parsePageAnswer('Hello\n```json\n{"tables": [{"rows": [["a"]]}], "confidence": 1}\n```', 1, { ...text, extractTables: false });
    expect(r).toEqual({ text: "Hello", tables: [], confidence: 1 });
  });

  it("recognises Markdown tables in the text when the block has none", () => {
    const answer = "# Fruit\n\n| Item | Qty |\n|:-----|----:|\n| Apple | 2 |\n| Pear | 1 |\n\nAfter the table.";
    const r = parsePageAnswer(answer, 2, markdown);
    expect(r.text).toBe(answer);
    expect(r.tables).toEqual([{ page_number: 2, rows: [["Item", "Qty"], ["Apple", "2"], ["Pear", "1"]], markdown: "| Item | Qty |\n| --- | --- |\n| Apple | 2 |\n| Pear | 1 |", cells: expect.any(Array), html: "<table><tr><th>Item</th><th>Qty</th></tr><tr><td>Apple</td><td>2</td></tr><tr><td>Pear</td><td>1</td></tr></table>" }]);
    expect(r.tables[0]!.cells[3]).toEqual({ row: 1, col: 1, row_span: 1, col_span: 1, text: "2" });
    expect(r.confidence).toBeUndefined();
  });

  it("prefers the block's tables over Markdown tables (no duplicates)", () => {
    const answer = `| A | B |\n|---|---|\n| 1 | 2 |\n\n\`\`\`json\n{"tables": [{"rows": [["A","B"],["1","2"]]}]}\n\`\`\``;
    expect(parsePageAnswer(answer, 1, markdown).tables).toHaveLength(1);
  });

  it("ignores Markdown tables when extractTables is off", () => {
    expect(parsePageAnswer("| A | B |\n|---|---|\n| 1 | 2 |", 1, { ...markdown, extractTables: false }).tables).toEqual([]);
  });

  it("unwraps an answer wrapped in a single code fence", () => {
    expect(parsePageAnswer("```markdown\n# Title\n\nBody\n```", 1, markdown).text).toBe("# Title\n\nBody");
  });

  it("keeps code blocks that are page content", () => {
    const answer = "Example:\n```json\n{\"name\": \"x\"}\n```\nEnd";
    expect(parsePageAnswer(answer, 1, text).text).toBe(answer);
  });

  it("drops a trailing metadata block that does not parse", () => {
    const r = parsePageAnswer('Page text\n```json\n{"tables": [{"rows": [["a", "b"]\n```', 1, text);
    expect(r).toEqual({ text: "Page text", tables: [] });
  });

  it("accepts only a 0..1 number as confidence", () => {
    for (const c of [1.2, -0.1, "0.9", 93, null, true]) {
      const r = parsePageAnswer(`x\n\`\`\`json\n${JSON.stringify({ confidence: c })}\n\`\`\``, 1, text);
      expect(r.confidence, String(c)).toBeUndefined();
    }
    expect(parsePageAnswer('x\n```json\n{"confidence": 0}\n```', 1, text).confidence).toBe(0);
  });

  it("normalises line endings and a BOM", () => {
    expect(parsePageAnswer("\uFEFFa\r\nb\rc", 1, text).text).toBe("a\nb\nc");
  });
});

describe("parsePageAnswer: json", () => {
  it("keeps the object as the page text (minus confidence) and lifts tables and confidence", () => {
    const obj = { text: "Hello", blocks: [{ type: "paragraph", text: "Hello" }], tables: [{ rows }], confidence: 0.5 };
    const r = parsePageAnswer(JSON.stringify(obj), 1, json);
    expect(JSON.parse(r.text)).toEqual({ text: "Hello", blocks: [{ type: "paragraph", text: "Hello" }], tables: [{ rows }] });
    expect(r.tables).toHaveLength(1);
    expect(r.confidence).toBe(0.5);
  });

  it("finds the object inside a fence or prose", () => {
    expect(JSON.parse(parsePageAnswer('```json\n{"text": "a"}\n```', 1, json).text)).toEqual({ text: "a" });
    expect(JSON.parse(parsePageAnswer('Here you go: {"text": "a"} Hope it helps', 1, json).text)).toEqual({ text: "a" });
  });

  it("keeps an answer that is not a JSON object as text, with Markdown tables as fallback", () => {
    const r = parsePageAnswer("Sorry, plain text\n| a | b |\n|---|---|\n| 1 | 2 |", 1, json);
    expect(r.text).toBe("Sorry, plain text\n| a | b |\n|---|---|\n| 1 | 2 |");
    expect(r.tables[0]?.rows).toEqual([["a", "b"], ["1", "2"]]);
  });
});

describe("table shapes", () => {
  it("accepts rows, header+rows and bare row lists, skipping junk", () => {
    expect(tablesFromJson([{ rows }, { header: ["H"], rows: [["v"]] }, [["x", "y"]], null, 3, { rows: "no" }, { rows: [] }])).toEqual([
      rows,
      [["H"], ["v"]],
      [["x", "y"]],
    ]);
    expect(tablesFromJson("tables")).toEqual([]);
  });

  it("turns cells into strings and pads ragged rows (partial tables)", () => {
    expect(normalizeRows([["a", 1, true], ["b"], "junk", [null, { x: 1 }, 2.5]])).toEqual([
      ["a", "1", "true"],
      ["b", "", ""],
      ["", "", "2.5"],
    ]);
    expect(normalizeRows([[], []])).toBeUndefined();
  });

  it("bounds table size", () => {
    const long = "x".repeat(20_000);
    const big = Array.from({ length: 3000 }, () => Array<string>(150).fill(long));
    const r = normalizeRows(big);
    expect(r).toHaveLength(2000);
    expect(r?.[0]).toHaveLength(100);
    expect(r?.[0]?.[0]).toHaveLength(10_000);
  });

  it("renders Markdown with escaped pipes and line breaks", () => {
    expect(renderMarkdownTable([["a|b", "c\nd"], ["1"]])).toBe("| a\\|b | c<br>d |\n| --- | --- |\n| 1 |  |");
    expect(renderMarkdownTable([["only"]])).toBe("| only |\n| --- |");
  });

  it("round-trips rendered tables through the Markdown finder", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ maxLength: 8 }).map((s) => s.replace(/[\n\r\\]/g, "").trim()), { minLength: 2, maxLength: 4 }), { minLength: 1, maxLength: 5 }),
        (t) => {
          const width = Math.max(...t.map((r) => r.length));
          const padded = t.map((r) => [...r, ...Array<string>(width - r.length).fill("")]);
          const found = findMarkdownTables(renderMarkdownTable(padded));
          expect(found).toEqual([padded]);
        },
      ),
    );
  });

  it("does not mistake prose with pipes or rules for a table", () => {
    expect(findMarkdownTables("a | b\nnot a delimiter\n---\ntext")).toEqual([]);
    expect(findMarkdownTables("Title\n---\n")).toEqual([]);
  });
});

describe("junk never throws", () => {
  it("handles non-string answers", () => {
    for (const a of [undefined, null, 42, {}, []]) expect(parsePageAnswer(a, 1, text)).toEqual({ text: "", tables: [] });
  });

  it("handles arbitrary strings in every mode", () => {
    const pieces = fc.constantFrom("```", "```json\n", "{", "}", '"tables"', '"confidence"', ":", "[", "]", "|", "---", "\n", "a", " ", '"rows"', "0.5", "null");
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.array(pieces, { maxLength: 40 }).map((p) => p.join(""))), fc.constantFrom(text, markdown, json), (s, o) => {
        const r = parsePageAnswer(s, 1, o);
        expect(typeof r.text).toBe("string");
        expect(Array.isArray(r.tables)).toBe(true);
        if (r.confidence !== undefined) expect(r.confidence >= 0 && r.confidence <= 1).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe("merged cells and tables over pages", () => {
  const rows = [
    ["Region", "Sales", ""],
    ["", "Q1", "Q2"],
    ["North", "12", "14"],
  ];
  const spans = [
    { row: 0, col: 0, rows: 2, cols: 1 },
    { row: 0, col: 1, rows: 1, cols: 2 },
  ];

  it("lists each cell once with its spans, and says them in HTML (GFM cannot)", () => {
    const t = tableOf(3, rows, spans);
    expect(t.cells).toEqual([
      { row: 0, col: 0, row_span: 2, col_span: 1, text: "Region" },
      { row: 0, col: 1, row_span: 1, col_span: 2, text: "Sales" },
      { row: 1, col: 1, row_span: 1, col_span: 1, text: "Q1" },
      { row: 1, col: 2, row_span: 1, col_span: 1, text: "Q2" },
      { row: 2, col: 0, row_span: 1, col_span: 1, text: "North" },
      { row: 2, col: 1, row_span: 1, col_span: 1, text: "12" },
      { row: 2, col: 2, row_span: 1, col_span: 1, text: "14" },
    ]);
    expect(t.html).toBe('<table><tr><th rowspan="2">Region</th><th colspan="2">Sales</th></tr><tr><td>Q1</td><td>Q2</td></tr><tr><td>North</td><td>12</td><td>14</td></tr></table>');
    // The markdown stays GFM: the merged cell's text in its first position.
    expect(t.markdown.split("\n")[0]).toBe("| Region | Sales |  |");
  });

  it("escapes HTML in cells and keeps spans inside the table", () => {
    const t = tableOf(1, [["a<b", "&"], ["x", "y"]], [{ row: 1, col: 1, rows: 5, cols: 5 }]);
    expect(t.html).toBe("<table><tr><th>a&lt;b</th><th>&amp;</th></tr><tr><td>x</td><td>y</td></tr></table>");
  });

  it("joins a table that closes its page with one that opens the next, dropping a repeated header", () => {
    const head = ["Item", "Price"];
    const a = { ...tableOf(1, [head, ["Paper", "4.50"]], [], { closesPage: true }) };
    const b = { ...tableOf(2, [head, ["Toner", "68.90"]], [], { opensPage: true }) };
    const joined = joinPageTables([a, b]);
    expect(joined).toHaveLength(1);
    expect(joined[0]!.page_numbers).toEqual([1, 2]);
    expect(joined[0]!.rows).toEqual([head, ["Paper", "4.50"], ["Toner", "68.90"]]);
    // Each cell of a table over pages says its page (its box is in that page's pixels).
    expect(joined[0]!.cells.at(-1)).toEqual({ row: 2, col: 1, row_span: 1, col_span: 1, text: "68.90", page_number: 2 });
    expect(joined[0]!.cells[0]!.page_number).toBe(1);
    expect(joined[0]).not.toHaveProperty("closes_page");
  });

  it("keeps tables apart when text stands between them, their columns differ or a page lies between", () => {
    const two = (page: number, place: { opensPage?: boolean; closesPage?: boolean }) => tableOf(page, [["a", "b"], ["1", "2"]], [], place);
    expect(joinPageTables([two(1, {}), two(2, { opensPage: true })])).toHaveLength(2);
    expect(joinPageTables([two(1, { closesPage: true }), tableOf(2, [["a", "b", "c"]], [], { opensPage: true })])).toHaveLength(2);
    expect(joinPageTables([two(1, { closesPage: true }), two(3, { opensPage: true })])).toHaveLength(2);
    expect(joinPageTables([two(1, { closesPage: true }), two(2, { opensPage: true, closesPage: true }), two(3, { opensPage: true })]).map((t) => t.page_numbers)).toEqual([[1, 2, 3]]);
  });
});
