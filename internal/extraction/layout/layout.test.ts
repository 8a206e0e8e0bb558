/**
 * The layout analysis on synthetic pages: word boxes laid out as columns,
 * tables, receipts, headers and footers, written as tesseract's TSV, so each
 * test states the geometry it checks. The real engine on rendered pages is
 * covered in engines/tesseract.test.ts.
 */
import { describe, expect, it } from "vitest";
import { analyzePage } from "./page.ts";
import { estimateSkew, readingOrder } from "./reading-order.ts";
import { acrossColumns, PROSE } from "./testdata.ts";
import { parseTsv, type OcrWord } from "./words.ts";

const HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext";
/** Pixels of a character, of a line and from line to line, at roughly 10 pt and 200 DPI. */
const [CHAR, LINE, LEADING] = [14, 34, 44];

interface Placed {
  text: string;
  x: number;
  y: number;
  block: number;
  line: number;
  conf?: number;
  /** The word box's height; a line's ({@link LINE}) when not given. */
  height?: number;
}

/** A page as tesseract's TSV: words in the order given (tesseract's reading order), blocks and lines as numbered. */
function tsv(words: readonly Placed[], page = { width: 1654, height: 2339 }, blankBlocks: { x: number; y: number; w: number; h: number }[] = []): string {
  const rows = [HEADER, `1\t1\t0\t0\t0\t0\t0\t0\t${page.width}\t${page.height}\t-1\t`];
  let n = 0;
  let block = 0;
  for (const w of words) {
    if (w.block !== block) {
      block = w.block;
      rows.push(`2\t1\t${block}\t0\t0\t0\t0\t0\t1\t1\t-1\t`);
    }
    rows.push(`5\t1\t${w.block}\t1\t${w.line}\t${++n}\t${w.x}\t${w.y}\t${w.text.length * CHAR}\t${w.height ?? LINE}\t${w.conf ?? 95}\t${w.text}`);
  }
  blankBlocks.forEach((b, i) => rows.push(`2\t1\t${900 + i}\t0\t0\t0\t${b.x}\t${b.y}\t${b.w}\t${b.h}\t-1\t`, `5\t1\t${900 + i}\t1\t1\t1\t${b.x}\t${b.y}\t${b.w}\t${b.h}\t95\t `));
  return rows.join("\n") + "\n";
}

/** Words of a line of text starting at x, one space (a character) between words. */
function line(text: string, x: number, y: number, block: number, lineNo: number): Placed[] {
  const out: Placed[] = [];
  let at = x;
  for (const word of text.split(" ")) {
    out.push({ text: word, x: at, y, block, line: lineNo });
    at += (word.length + 1) * CHAR;
  }
  return out;
}

/** A table's words, row i at 300 + i line spacings, each cell's words from x(text, column), one tesseract line per row; empty cells left out. */
function placeRows(rows: readonly (readonly string[])[], x: (text: string, c: number) => number): Placed[] {
  return rows.flatMap((r, i) => r.flatMap((text, c) => (text ? line(text, x(text, c), 300 + i * LEADING, 1, i + 1) : [])));
}

/** A paragraph of `lines` starting at (x, y), one tesseract block. */
function paragraph(lines: readonly string[], x: number, y: number, block: number): Placed[] {
  return lines.flatMap((l, i) => line(l, x, y + i * LEADING, block, i + 1));
}

const LEFT = ["alpha beta gamma delta epsilon zeta", "eta theta iota kappa lambda mu", "nu xi omicron pi rho sigma tau", "upsilon phi chi psi omega end"];
const RIGHT = ["one two three four five six seven", "eight nine ten eleven twelve", "thirteen fourteen fifteen sixteen", "seventeen eighteen nineteen last"];

describe("reading order", () => {
  it("reads two columns of prose one after the other, even when tesseract reads their lines across", () => {
    // Tesseract's order here is line by line across both columns (one block per line pair).
    const words = LEFT.flatMap((l, i) => [...line(l, 200, 300 + i * LEADING, i + 1, 1), ...line(RIGHT[i]!, 900, 300 + i * LEADING, i + 1, 2)]);
    const r = analyzePage(tsv(words));
    const text = r.text.replace(/\s+/g, " ");
    // Where tesseract's order runs across the columns, the geometry does not overrule it for prose:
    // both columns are wide, so neither is a table, and the text keeps tesseract's paragraphs.
    expect(text).toContain("alpha beta gamma");
    expect(r.tables).toEqual([]);
    const order = readingOrder(parseTsv(tsv(words)).words);
    expect(order.root?.kind, JSON.stringify(order.root?.kind)).toBe("columns");
  });

  it("keeps tesseract's column order for prose and puts a title above the columns first", () => {
    const words = [...line("Annual Report", 200, 150, 1, 1), ...paragraph(LEFT, 200, 300, 2), ...paragraph(RIGHT, 900, 300, 3)];
    const r = analyzePage(tsv(words));
    expect(r.text.split("\n\n")).toEqual(["Annual Report", LEFT.join("\n"), RIGHT.join("\n")]);
  });

  it("reads a table row by row, cell by cell, when tesseract read it a column at a time, and reports its cells", () => {
    const rows = [
      ["Item", "Qty", "Price"],
      ["Paper", "12", "4.50"],
      ["Toner", "3", "68.90"],
      ["Lamp", "2", "24.95"],
    ];
    const xs = [200, 700, 1000];
    // Tesseract's order: each column is a block of its own, read top to bottom.
    const words = xs.flatMap((x, c) => rows.map((r, i) => ({ text: r[c]!, x, y: 300 + i * LEADING, block: c + 1, line: i + 1 })));
    const r = analyzePage(tsv(words));
    expect(r.text).toBe(rows.map((row) => row.join("\t")).join("\n"));
    expect(r.tables.map((t) => t.rows)).toEqual([rows]);
    expect(r.layout.blocks.map((b) => b.type)).toEqual(["table"]);
  });

  it("reads two lines that share column gaps row by row but reports a table only from three rows on", () => {
    // A form's two lines set with tabs: "gefördert  ☐ Ja  ☐ Nein  oder" over "beeinträchtigt  ☐ Ja  ☐ Nein  Begründung:".
    const rows = [
      ["gefördert", "Ja", "Nein", "oder"],
      ["beeinträchtigt", "Ja", "Nein", "Begründung:"],
    ];
    const xs = [200, 500, 700, 900];
    const place = (rs: string[][]) => xs.flatMap((x, c) => rs.map((r, i) => ({ text: r[c]!, x, y: 300 + i * LEADING, block: c + 1, line: i + 1 })));
    const two = analyzePage(tsv(place(rows)));
    expect(two.text).toBe(rows.map((row) => row.join("\t")).join("\n"));
    expect(two.tables).toEqual([]);
    expect(two.layout.blocks.map((b) => b.type)).toEqual(["text"]);
    const three = [...rows, ["erhalten", "Ja", "Nein", "Betrag:"]];
    expect(analyzePage(tsv(place(three))).tables.map((t) => t.rows)).toEqual([three]);
  });

  it("keeps tesseract's order where narrow columns of prose line up like a table and the page's text reads on that way", () => {
    // Three columns of ten short lines, lines at the same heights: the geometry alone takes them for a table.
    const columns = [0, 1, 2].map((c) => PROSE.slice(c * 10, c * 10 + 10));
    const words = columns.flatMap((lines, c) => paragraph(lines, 150 + c * 480, 300, c + 1));
    const page = tsv(words);
    const geometry = analyzePage(page, { order: "layout" });
    const across = acrossColumns(PROSE, 3);
    expect(geometry.text.split("\n").slice(0, 2)).toEqual([across.slice(0, 3).join("\t"), across.slice(3, 6).join("\t")]);
    const r = analyzePage(page);
    expect(r.text.replace(/\s+/g, " ")).toBe(PROSE.join(" "));
    expect(r.tables).toEqual([]);
    expect(r.orders).toHaveLength(1);
    expect(r.orders[0]!.chosen).toBe("tesseract");
    expect(r.orders[0]!.evidence).toBeGreaterThan(Math.log(20));
  });

  it("keeps the geometry's rows for a table tesseract read a column at a time, where the text gives no strong evidence", () => {
    const rows = [
      ["Blaine", "292", "524", "380"],
      ["Buffalo", "273", "537", "425"],
      ["Detroit", "404", "1,322", "491"],
      ["Houlton", "193", "112", "95"],
      ["Spokane", "253", "428", "310"],
    ];
    const xs = [200, 700, 1000, 1300];
    const words = xs.flatMap((x, c) => rows.map((r, i) => ({ text: r[c]!, x, y: 300 + i * LEADING, block: c + 1, line: i + 1 })));
    const r = analyzePage(tsv(words));
    expect(r.tables.map((t) => t.rows)).toEqual([rows]);
    expect(r.orders.map((d) => d.chosen)).toEqual(["layout"]);
  });

  it("finds a column of right-aligned numbers beside a left-aligned one though their union leaves only a narrow valley", () => {
    // | As          | Rate      | Count   |   "Rate" left-aligned over right-aligned numbers; "Count" left-aligned
    // Each row's gap is wide (over a word height), the valley down the union 0.75 of a line high.
    const rows = [
      ["As", "Rate", "Count"],
      ["Share", "For", "2009"],
      ["One", "263.82", "596.79"],
      ["Logs", "Pages", "-158.95"],
      ["Tables", "396.23", "$3487.74"],
    ];
    const right = 500; // the second column's right edge
    const words = rows.flatMap((r, i) => [
      { text: r[0]!, x: 200, y: 300 + i * LEADING, block: 1, line: i + 1 },
      // Left-aligned text in the second column, numbers right-aligned to `right`.
      { text: r[1]!, x: /\d/.test(r[1]!) ? right - r[1]!.length * CHAR : 380, y: 300 + i * LEADING, block: 1, line: i + 1 },
      // The third column starts 26 px (0.75 of a line) right of the second's right edge in the header, its numbers right-aligned further right.
      { text: r[2]!, x: i === 0 ? right + 26 : right + 26 + 10 * CHAR - r[2]!.length * CHAR, y: 300 + i * LEADING, block: 1, line: i + 1 },
    ]);
    expect(analyzePage(tsv(words)).tables.map((t) => t.rows)).toEqual([rows]);
    // Two lines are no evidence: the narrow valley stays a space.
    expect(analyzePage(tsv(words.filter((w) => w.line <= 2))).tables).toEqual([]);
  });

  it("finds narrow column gaps where tesseract read each column as blocks of its own, and keeps a column's few left-aligned words in the table (dev pages gen_001, gen_014)", () => {
    // | Standard   | Hours      |   Year |   "Hours": left-aligned words or numbers right-aligned to 900;
    // "Year" left-aligned at 927, 27 px (0.8 of a line) right of the Hours column's right edge, its numbers right-aligned to 1260.
    const rows = [
      ["Standard", "Hours", "Year"],
      ["After the", "The", "10.8%"],
      ["One example", "Responses", "2006"],
      ["Request", "11.2%", "43,436"],
      ["When the", "2011", "1992"],
      ["Markdown makes", "$1494.50", "2025"],
    ];
    const x = (text: string, c: number) => (c === 0 ? 166 : c === 1 ? (/\d/.test(text) ? 900 - text.length * CHAR : 631) : /\d/.test(text) ? 1260 - text.length * CHAR : 927);
    // Each column a block of tesseract's, each cell a line of its own (tesseract's lines end at the column gaps).
    const words = [0, 1, 2].flatMap((c) => rows.flatMap((r, i) => line(r[c]!, x(r[c]!, c), 300 + i * LEADING, c + 1, c * 10 + i + 1)));
    expect(analyzePage(tsv(words)).tables.map((t) => t.rows)).toEqual([rows]);
  });

  it("finds the columns of a tight table whose numbers stand closer to the next column's words than a column gap in many rows (dev pages gen_009, gen_014)", () => {
    // | In    | Total  | Total  | Year |   numbers right-aligned; "Of", "Fixed", "Are" left-aligned 24 px (0.7 of a line)
    // right of the numbers before them: three runs across the valley, more than a spanning header's lines set aside.
    const rows = [
      ["In", "Total", "Total", "Year"],
      ["Which", "42,551", "707.55", "13,694"],
      ["That every", "$7149.72", "2017", "$1375.41"],
      ["Body", "2013", "Of", "55.7%"],
      ["Any", "761.59", "Fixed", "1994"],
      ["Only", "2011", "Are", "$6194.53"],
    ];
    const edges = [{ left: 167, right: 0 }, { left: 389, right: 490 }, { left: 514, right: 650 }, { left: 674, right: 800 }];
    const x = (text: string, c: number) => (c === 0 || !/\d/.test(text) ? edges[c]!.left : edges[c]!.right - text.length * CHAR);
    expect(analyzePage(tsv(placeRows(rows, x))).tables.map((t) => t.rows)).toEqual([rows]);
  });

  it("finds the columns under a header cell set over two of them, its text in the first of them", () => {
    // | Region | Sales (EUR)     | Staff |   "Sales (EUR)" spans the 2023 and 2024 columns
    // |        | 2023   | 2024   |       |
    const rows = [
      ["Region", "Sales (EUR)", "", "Staff"],
      ["", "2023", "2024", ""],
      ["North", "12.40", "13.10", "41"],
      ["South", "9.75", "10.20", "37"],
      ["East", "7.05", "8.90", "22"],
    ];
    const xs = [200, 600, 800, 1100];
    // The header centred over its two columns: it starts right of the 2023 column's numbers and ends in the 2024 column.
    const at = (text: string, c: number) => (text === "Sales (EUR)" ? 680 : xs[c]!);
    const words = placeRows(rows, at);
    const found = analyzePage(tsv(words)).tables;
    expect(found.map((t) => t.rows)).toEqual([rows]);
    // The header over the empty header cell, above a column filled below, spans it (docs/structure.md).
    expect(found[0]!.spans).toEqual([{ row: 0, col: 1, rows: 1, cols: 2 }]);
  });

  it("finds no column between a header's word and the right-aligned numbers under it (dev page gen_022)", () => {
    // | GET   |  Year  |   "Year" and "New profile" left-aligned at 420, the numbers right-aligned to 620
    const rows = [
      ["GET", "Year"],
      ["Not", "33.6%"],
      ["Shows at once", "104.39"],
      ["Is", "New profile"],
      ["It has", "111.46"],
      ["Rollups of those", "$3578.41"],
    ];
    const words = rows.flatMap((r, i) => [
      ...line(r[0]!, 167, 300 + i * LEADING, 1, i + 1),
      ...line(r[1]!, /\d/.test(r[1]!) ? 620 - r[1]!.length * CHAR : 420, 300 + i * LEADING, 1, i + 1),
    ]);
    expect(analyzePage(tsv(words)).tables.map((t) => t.rows)).toEqual([rows]);
  });

  it("cuts a tight table's row where the rows above part their columns, and leaves a running header above the table out of it", () => {
    // "Then is read" (a running header), then a table whose number columns are right-aligned (to x 674 and
    // 770): its rows' last two cells stand 40 and 54 px apart, the last row's only 26 (0.75 of a line, under
    // a column gap by itself), as gen_104's last row does.
    const header = line("Then is read", 150, 200, 1, 1);
    const rows = [
      ["For", "92.35", "1990"],
      ["And", "5.20", "220"],
      ["Down", "3.8%", "49.4%"],
    ];
    const right = [0, 674, 770];
    const words = [
      ...header,
      ...rows.flatMap((r, i) => r.map((text, c) => ({ text, x: c === 0 ? 200 : right[c]! - text.length * CHAR, y: 300 + i * LEADING, block: 2, line: i + 1 }))),
    ];
    const r = analyzePage(tsv(words));
    expect(r.tables.map((t) => t.rows), r.text).toEqual([rows]);
    expect(r.text.split("\n")[0]).toBe("Then is read");
  });

  it("keeps a row with one cell filled in its table, but not a heading set under the table with more space above it", () => {
    const rows = [
      ["Region", "Units", "Revenue"],
      ["North", "12", "4,500"],
      ["South", "9", "3,100"],
      ["Subtotal", "", ""],
    ];
    const xs = [200, 600, 900];
    const at = (text: string, c: number, y: number, line: number) => ({ text, x: xs[c]!, y, block: 1, line });
    const table = rows.flatMap((r, i) => r.flatMap((text, c) => (text ? [at(text, c, 300 + i * LEADING, i + 1)] : [])));
    // A heading 2.5 lines below the last row, where the rows are one line apart.
    const heading = line("Shipping season", 200, 300 + 3 * LEADING + 110, 2, 1);
    const r = analyzePage(tsv([...table, ...heading]));
    expect(r.tables.map((t) => t.rows)).toEqual([rows]);
    expect(r.text.split("\n").at(-1)).toBe("Shipping season");
  });

  it("leaves a numbered list set right under a table out of it, at the rows' spacing (dev page gen_001)", () => {
    const rows = [
      ["Region", "Units", "Revenue"],
      ["North", "12", "4,500"],
      ["South", "9", "3,100"],
    ];
    const xs = [200, 600, 900];
    const table = rows.flatMap((r, i) => r.map((text, c) => ({ text, x: xs[c]!, y: 300 + i * LEADING, block: 1, line: i + 1 })));
    const items = ["1. Both request bodies.", "2. Why not a.", "3. Refused before the"];
    const list = items.flatMap((text, i) => line(text, 200, 300 + (3 + i) * LEADING, 2, i + 1));
    const r = analyzePage(tsv([...table, ...list]));
    expect(r.tables.map((t) => t.rows)).toEqual([rows]);
    expect(r.text.split("\n").slice(-3)).toEqual(items);
  });

  it("reads bullets set apart from their items as a list, not as a table of two columns", () => {
    const items = ["Integrate planning with the investment programmes.", "Consider the social effects of public projects.", "Make infrastructure spending efficient.", "Share the public space of the streets."];
    // Tesseract's order: each line its bullet, read as "e" (as tesseract reads a Word list's round bullets), then its text.
    const words = items.flatMap((text, i) => [{ text: "e", x: 220, y: 300 + i * LEADING, block: 1, line: i + 1 }, ...line(text, 320, 300 + i * LEADING, 1, i + 1)]);
    const page = tsv(words);
    const tables: string[] = [];
    const find = (n: import("./reading-order.ts").LayoutNode | null): void => {
      if (!n) return;
      if (n.kind === "table") tables.push("table");
      else if (n.kind !== "leaf") n.children.forEach(find);
    };
    // The geometry alone takes the bullets for a column of a table.
    find(readingOrder(parseTsv(page).words).root);
    expect(tables).toEqual(["table"]);
    const r = analyzePage(page);
    expect(r.tables).toEqual([]);
    expect(r.text.split("\n")).toEqual(items.map((t) => `e ${t}`));
  });

  it("reads a receipt's prices beside their items, not after all of them", () => {
    const items = [
      ["Coffee beans 1kg", "18.90"],
      ["Milk", "1.20"],
      ["Sugar", "2.10"],
      ["Total", "22.20"],
    ];
    const words = [
      ...items.flatMap(([label], i) => line(label!, 60, 200 + i * LEADING, 1, i + 1)),
      ...items.map(([, price], i) => ({ text: price!, x: 520, y: 200 + i * LEADING, block: 2, line: i + 1 })),
    ];
    const r = analyzePage(tsv(words, { width: 640, height: 900 }));
    expect(r.text.split("\n").map((l) => l.replace(/\s+/g, " "))).toEqual(items.map((i) => i.join(" ")));
  });

  it("places a table after the columns above it when tesseract read its first column with the text", () => {
    const table = [
      ["Item", "Qty"],
      ["Paper", "12"],
      ["Toner", "3"],
    ];
    // Tesseract put the table's first column into the left column's block.
    const words = [
      ...paragraph(LEFT, 200, 300, 1),
      ...table.map((r, i) => ({ text: r[0]!, x: 200, y: 600 + i * LEADING, block: 1, line: 10 + i })),
      ...paragraph(RIGHT, 900, 300, 2),
      ...table.map((r, i) => ({ text: r[1]!, x: 1300, y: 600 + i * LEADING, block: 3, line: i + 1 })),
    ];
    const r = analyzePage(tsv(words));
    expect(r.text.split("\n\n")).toEqual([LEFT.join("\n"), RIGHT.join("\n"), table.map((row) => row.join("\t")).join("\n")]);
  });

  it("undoes a small tilt before looking for gaps", () => {
    const slope = 0.02;
    const rows = [
      ["Paper", "12"],
      ["Toner", "3"],
      ["Lamp", "2"],
    ];
    const words: Placed[] = rows.flatMap((r, i) =>
      r.map((text, c) => {
        const x = c === 0 ? 200 : 1400;
        // Each line rises to the right by 2 %: 24 px over the page, more than half a line's gap.
        return { text, x, y: Math.round(300 + i * LEADING + slope * x), block: 1, line: i + 1 };
      }),
    );
    // Three more words per line so the slope can be measured.
    const more: Placed[] = rows.flatMap((_, i) => [400, 600, 800].map((x, k) => ({ text: `w${k}`, x, y: Math.round(300 + i * LEADING + slope * x), block: 1, line: i + 1 })));
    // In tesseract's order: line by line, each line left to right.
    const all = [...words, ...more].sort((a, b) => a.line - b.line || a.x - b.x);
    expect(estimateSkew(parseTsv(tsv(all)).words)).toBeCloseTo(slope, 2);
    const r = analyzePage(tsv(all));
    expect(r.text.split("\n").map((l) => l.split(/\s+/)[0])).toEqual(["Paper", "Toner", "Lamp"]);
  });
});

describe("layout blocks", () => {
  it("marks a page number at the foot as a footer and a running title at the top as a header", () => {
    const words = [...line("Harbour Board Quarterly", 600, 60, 1, 1), ...paragraph(LEFT, 200, 400, 2), ...paragraph(RIGHT, 200, 700, 3), ...line("Page 3", 780, 2250, 4, 1)];
    const r = analyzePage(tsv(words));
    expect(r.layout.blocks.map((b) => [b.type, b.text])).toEqual([
      ["header", "Harbour Board Quarterly"],
      ["text", LEFT.join("\n")],
      ["text", RIGHT.join("\n")],
      ["footer", "Page 3"],
    ]);
    expect(r.layout.width).toBe(1654);
    expect(r.layout.height).toBe(2339);
  });

  it("does not take a title set larger than the text at the top of a page for a running header", () => {
    const title = line("Harbour Board Quarterly", 200, 60, 1, 1).map((w) => ({ ...w, height: 2 * LINE }));
    const r = analyzePage(tsv([...title, ...paragraph(LEFT, 200, 400, 2), ...paragraph(RIGHT, 200, 700, 3)]));
    expect(r.layout.blocks.map((b) => b.type)).toEqual(["text", "text", "text"]);
  });

  it("reports a picture tesseract left without text as a figure, where it stands on the page", () => {
    const words = [...paragraph(LEFT, 200, 300, 1), ...paragraph(RIGHT, 200, 1200, 2)];
    const r = analyzePage(tsv(words, undefined, [{ x: 200, y: 600, w: 800, h: 500 }]));
    expect(r.layout.blocks.map((b) => b.type)).toEqual(["text", "figure", "text"]);
    expect(r.layout.blocks[1]).toEqual({ type: "figure", bbox: [200, 600, 1000, 1100], text: "" });
  });

  it("gives every word with its box and confidence when asked, and none otherwise", () => {
    const words = line("Hello world", 100, 100, 1, 1).map((w, i) => ({ ...w, conf: i === 0 ? 91.5 : 40 }));
    const plain = analyzePage(tsv(words));
    expect(plain.layout.blocks[0]!.words).toBeUndefined();
    const r = analyzePage(tsv(words), { words: true });
    expect(r.layout.blocks[0]!.words).toEqual([
      { text: "Hello", bbox: [100, 100, 170, 134], confidence: 0.915 },
      { text: "world", bbox: [184, 100, 254, 134], confidence: 0.4 },
    ]);
    expect(r.confidence).toBeCloseTo((91.5 + 40) / 200, 10);
  });

  it("gives empty text, no tables and no confidence for a blank page", () => {
    const r = analyzePage(`${HEADER}\n1\t1\t0\t0\t0\t0\t0\t0\t100\t100\t-1\t\n`);
    expect(r).toEqual({ text: "", tables: [], layout: { width: 100, height: 100, blocks: [] }, sources: [], wordCount: 0, lineHeight: 1, orders: [] });
  });

  it("does not report a line with wide spaces as a table", () => {
    const words = [...line("Name:", 200, 300, 1, 1), ...line("Jane Doe", 700, 300, 1, 1)] as Placed[];
    const r = analyzePage(tsv(words));
    expect(r.tables).toEqual([]);
    expect(r.text.replace(/\s+/g, " ")).toBe("Name: Jane Doe");
  });
});

describe("parseTsv", () => {
  it("reads words with their boxes, lines, paragraphs and tesseract's order", () => {
    const page = parseTsv(tsv(line("Hello world", 10, 20, 1, 1)));
    expect(page.words.map((w: OcrWord) => [w.text, w.x0, w.y0, w.x1, w.y1, w.line, w.paragraph, w.index])).toEqual([
      ["Hello", 10, 20, 80, 54, "1.1.1.1", "1.1.1", 0],
      ["world", 94, 20, 164, 54, "1.1.1.1", "1.1.1", 1],
    ]);
    expect([page.width, page.height]).toEqual([1654, 2339]);
  });
});
