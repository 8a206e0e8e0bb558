/**
 * The page structure behind `output_format` json and markdown on synthetic
 * pages: words placed as a typesetter would (sizes, baselines, indents),
 * written as tesseract's TSV and read by the layout analysis, so each test
 * states the geometry it relies on. The real engine on rendered pages is
 * covered in engines/tesseract.test.ts and test/output-format.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { PageBlock } from "../../contracts/index.ts";
import { emOf, renderMarkdown, structurePage, type SourceBlock } from "./markdown.ts";
import { analyzePage } from "./page.ts";
import type { GreyImage } from "./rules.ts";

const HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext";
/** Body type: an em of 30 px (11 pt at 200 DPI), lines 36 px apart, paragraphs a line apart. */
const BODY = 30;
const PITCH = 36;

interface Line {
  text: string;
  x: number;
  /** The line's top (the em box's). */
  y: number;
  /** Pixels per em. */
  size?: number;
  /** Tesseract's block and paragraph. */
  block: number;
  par?: number;
  /** Extra space before each word, in ems, by word index (a tab after a marker). */
  gaps?: Record<number, number>;
  /** Width of each character in ems (wider for bold or larger type is given by size). */
  charEms?: number;
  /** Height of each word's box in ems, overriding its letters (an underline, a bullet drawn small). */
  heights?: Record<number, number>;
  /** How far each word's foot stands above the baseline, in ems (a bullet centred on the x-height). */
  raised?: Record<number, number>;
}

/** A word's ink box as a font draws it: ascenders and descenders beyond the x-height by its letters. */
function inkBox(text: string, x: number, y: number, size: number, width: number, height?: number, raised = 0) {
  const baseline = y + (0.72 - raised) * size;
  if (height !== undefined) return { x0: x, y0: Math.round(baseline - height * size), x1: x + width, y1: Math.round(baseline) };
  const up = /[A-Z0-9bdfhijklt]/.test(text);
  const down = /[gjpqy]/.test(text);
  return { x0: x, y0: Math.round(up ? y : baseline - 0.5 * size), x1: x + width, y1: Math.round(baseline + (down ? 0.22 * size : 0)) };
}

/** The lines as tesseract's TSV; each line's number counts within its block. */
function tsv(lines: readonly Line[], page = { width: 1654, height: 2339 }): string {
  const rows = [HEADER, `1\t1\t0\t0\t0\t0\t0\t0\t${page.width}\t${page.height}\t-1\t`];
  const lineNo = new Map<number, number>();
  for (const l of lines) {
    const size = l.size ?? BODY;
    const n = (lineNo.get(l.block) ?? 0) + 1;
    lineNo.set(l.block, n);
    if (n === 1) rows.push(`2\t1\t${l.block}\t0\t0\t0\t0\t0\t1\t1\t-1\t`);
    let x = l.x;
    l.text.split(" ").forEach((word, i) => {
      x += Math.round((l.gaps?.[i] ?? (i === 0 ? 0 : 0.25)) * size);
      const width = Math.round(word.length * (l.charEms ?? 0.5) * size);
      const b = inkBox(word, x, l.y, size, width, l.heights?.[i], l.raised?.[i]);
      rows.push(`5\t1\t${l.block}\t${l.par ?? 1}\t${n}\t${i + 1}\t${b.x0}\t${b.y0}\t${b.x1 - b.x0}\t${b.y1 - b.y0}\t95\t${word}`);
      x += width;
    });
  }
  return rows.join("\n") + "\n";
}

/** Lines of body text, one tesseract paragraph, from the given top. */
function paragraph(block: number, y: number, texts: readonly string[], x = 200): Line[] {
  return texts.map((text, i) => ({ text, x, y: y + i * PITCH, block }));
}

const FILLER = [
  "The harbour board met on Tuesday to review the shipping season and the state of",
  "the quays, which were repaired during the winter after the storms in November and",
  "December. Most members agreed that the new cranes have shortened the time a ship",
  "spends in port by almost a day, and that the warehouse should be extended.",
];

type Ink = { x0: number; y0: number; x1: number; y1: number };

function structure(lines: readonly Line[], ink?: { bold?: (word: string) => boolean; dots?: { x: number; y: number }[]; marks?: Ink[] }): { blocks: PageBlock[]; markdown: string } {
  const page = analyzePage(tsv(lines));
  const blocks = structurePage(page.sources, ink ? paint(page.sources, ink.bold ?? (() => false), ink.dots ?? [], ink.marks ?? []) : undefined);
  return { blocks, markdown: renderMarkdown(blocks) };
}

/**
 * The page's pixels: every word's box filled with upright stems (3 px wide,
 * 5 px for bold words: an em of 30 px) three stem widths apart, and round
 * dots (bullets tesseract did not read) at the given centres.
 */
function paint(sources: readonly SourceBlock[], bold: (word: string) => boolean, dots: readonly { x: number; y: number }[], marks: readonly Ink[] = []): GreyImage {
  const width = 1654;
  const height = 2339;
  const pixels = new Uint8Array(width * height).fill(255);
  for (const w of sources.flatMap((s) => s.words)) {
    const stem = bold(w.text) ? 5 : 3;
    for (let y = w.y0; y < w.y1; y++) for (let x = w.x0; x < w.x1; x++) if ((x - w.x0) % (3 * stem) < stem) pixels[y * width + x] = 0;
  }
  for (const d of dots) for (let y = d.y - 4; y <= d.y + 4; y++) for (let x = d.x - 4; x <= d.x + 4; x++) if ((x - d.x) ** 2 + (y - d.y) ** 2 <= 16) pixels[y * width + x] = 0;
  // Marks drawn as stems, like words: digits and the like tesseract did not read.
  for (const m of marks) for (let y = m.y0; y < m.y1; y++) for (let x = m.x0; x < m.x1; x++) if ((x - m.x0) % 9 < 3) pixels[y * width + x] = 0;
  return { width, height, pixels };
}

describe("emOf", () => {
  it("measures the same size for words with and without ascenders and descenders", () => {
    const size = 40;
    const ems = ["Harbour", "quay", "new", "the", "gypsy"].map((w) => emOf({ text: w, ...inkBox(w, 0, 0, size, 100) }));
    for (const em of ems) expect(em, ems.join(", ")).toBeGreaterThan(size * 0.9);
    for (const em of ems) expect(em, ems.join(", ")).toBeLessThan(size * 1.1);
  });

  it("has no size for a word without a letter or digit", () => {
    expect(emOf({ text: "—", y0: 0, y1: 10 })).toBeNaN();
  });
});

describe("headings", () => {
  it("makes type 1.6 times the body's size a level-1 heading and 1.3 times a level-2 heading, the body paragraphs", () => {
    const { blocks, markdown } = structure([
      { text: "Annual Report", x: 200, y: 300, size: BODY * 1.6, block: 1 },
      ...paragraph(2, 400, FILLER),
      { text: "Shipping season", x: 200, y: 600, size: BODY * 1.3, block: 3 },
      ...paragraph(4, 680, FILLER),
    ]);
    expect(blocks.map((b) => [b.type, b.level]), markdown).toEqual([
      ["heading", 1],
      ["paragraph", undefined],
      ["heading", 2],
      ["paragraph", undefined],
    ]);
    expect(markdown).toBe(`# Annual Report\n\n${FILLER.join(" ")}\n\n## Shipping season\n\n${FILLER.join(" ")}`);
  });

  it("cuts a heading off the paragraph tesseract read it with", () => {
    const { markdown } = structure([
      { text: "Shipping season", x: 200, y: 300, size: BODY * 1.3, block: 1 },
      ...paragraph(1, 300 + 1.3 * PITCH, FILLER),
    ]);
    expect(markdown).toBe(`## Shipping season\n\n${FILLER.join(" ")}`);
  });

  it("takes no formula or stray glyph set large for a heading: a heading is words", () => {
    const { blocks } = structure([
      { text: "x + 1.96y/var (x)", x: 200, y: 300, size: BODY * 1.6, block: 1 },
      ...paragraph(2, 400, FILLER),
      { text: "Be", x: 200, y: 600, size: BODY * 1.6, block: 3 },
      ...paragraph(4, 700, FILLER),
      { text: "2.3 Results", x: 200, y: 900, size: BODY * 1.6, block: 5 },
      ...paragraph(6, 1000, FILLER),
    ]);
    expect(blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph", "paragraph", "paragraph", "heading", "paragraph"]);
  });

  it("keeps a line of body size as text however short it is", () => {
    const { blocks } = structure([{ text: "Introduction", x: 200, y: 300, block: 1 }, ...paragraph(2, 380, FILLER)]);
    expect(blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph"]);
  });

  it("does not take a word made tall by an underline or strike through it for a heading: it is no wider", () => {
    const { blocks } = structure([{ text: "underline", x: 200, y: 300, block: 1, heights: { 0: 1.0 } }, ...paragraph(2, 380, FILLER)]);
    expect(blocks[0]!.type, JSON.stringify(blocks[0])).toBe("paragraph");
  });

  it("reads large type that fills most of the page as body text, not headings (a form's labels beside its small print)", () => {
    const { blocks } = structure([...paragraph(1, 300, FILLER.slice(0, 1)), ...FILLER.map((text, i) => ({ text, x: 200, y: 400 + i * 60, size: BODY * 1.4, block: 2 + i }))]);
    expect(blocks.filter((b) => b.type === "heading"), JSON.stringify(blocks)).toEqual([]);
  });

  it("makes a large title in the page's top margin a heading, while a small running header stays out of the flow", () => {
    const { blocks, markdown } = structure([
      { text: "Harbour Board", x: 200, y: 100, size: BODY * 1.6, block: 1 },
      ...paragraph(2, 400, FILLER),
      ...paragraph(3, 1200, FILLER),
    ]);
    expect(blocks[0]).toMatchObject({ type: "heading", level: 1, text: "Harbour Board" });
    expect(markdown.startsWith("# Harbour Board\n\n"), markdown).toBe(true);

    const small = structure([{ text: "Harbour Board minutes", x: 200, y: 100, block: 1 }, ...paragraph(2, 400, FILLER), ...paragraph(3, 1200, FILLER)]);
    expect(small.blocks[0]).toMatchObject({ type: "header", text: "Harbour Board minutes" });
    expect(small.markdown, small.markdown).not.toContain("minutes");
  });
});

describe("bold headings (from the page's pixels)", () => {
  const page = (title: string, y = 600): Line[] => [...paragraph(1, 300, FILLER), { text: title, x: 200, y, block: 2 }, ...paragraph(3, y + 80, FILLER)];
  const BOLD = new Set(["III.", "Roadside", "Results", "The", "board", "agreed", "that", "cranes", "help."]);
  const bold = (w: string) => BOLD.has(w);

  it("makes a short bold line of body size standing apart a heading, the numbered one with its number", () => {
    const { blocks, markdown } = structure(page("III. Roadside Results"), { bold });
    expect(blocks.map((b) => b.type), markdown).toEqual(["paragraph", "heading", "paragraph"]);
    expect(blocks[1]).toMatchObject({ type: "heading", level: 3, text: "III. Roadside Results" });
  });

  it("keeps the same line in regular weight, or without the pixels, a paragraph", () => {
    expect(structure(page("III. Roadside Results"), {}).blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph", "paragraph"]);
    expect(structure(page("Roadside Results")).blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph", "paragraph"]);
  });

  it("keeps a bold sentence a paragraph", () => {
    const { blocks } = structure(page("The board agreed that cranes help."), { bold });
    expect(blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph", "paragraph"]);
  });

  it("keeps a bold line inside a run of lines (no space above or below it) body text", () => {
    const lines = [...paragraph(1, 300, FILLER.slice(0, 2)), { text: "Roadside Results", x: 200, y: 300 + 2 * PITCH, block: 2 }, ...paragraph(3, 300 + 3 * PITCH, FILLER.slice(2))];
    const { blocks } = structure(lines, { bold });
    expect(blocks.filter((b) => b.type === "heading")).toEqual([]);
  });
});

describe("paragraphs", () => {
  it("joins a paragraph's lines with a space and puts a blank line between paragraphs", () => {
    const { markdown } = structure([...paragraph(1, 300, FILLER.slice(0, 2)), ...paragraph(2, 500, FILLER.slice(2))]);
    expect(markdown).toBe(`${FILLER.slice(0, 2).join(" ")}\n\n${FILLER.slice(2).join(" ")}`);
  });

  it("starts a new paragraph where the space above a line is well over the page's leading, inside one tesseract paragraph", () => {
    const lines = [...paragraph(1, 300, FILLER), ...paragraph(1, 300 + 4 * PITCH + 40, FILLER)];
    const { blocks } = structure(lines);
    expect(blocks.map((b) => b.text)).toEqual([FILLER.join(" "), FILLER.join(" ")]);
  });
});

describe("lists", () => {
  it("reads bullets with a hanging indent as list items, a wrapped item's lines in one item", () => {
    const { blocks, markdown } = structure([
      { text: "Before you send a parcel check these points:", x: 200, y: 300, block: 1 },
      { text: "• the address is complete and written in capitals", x: 240, y: 300 + PITCH * 1.5, block: 2, gaps: { 1: 1 } },
      { text: "• the parcel is sealed with tape on every side and its", x: 240, y: 300 + PITCH * 2.5, block: 2, gaps: { 1: 1 } },
      { text: "label shows the weight", x: 240 + 45, y: 300 + PITCH * 3.5, block: 2 },
      { text: "Then take it to the counter.", x: 200, y: 300 + PITCH * 5, block: 3 },
    ]);
    expect(blocks.map((b) => b.type), markdown).toEqual(["paragraph", "list_item", "list_item", "paragraph"]);
    expect(blocks[2]).toMatchObject({ text: "the parcel is sealed with tape on every side and its label shows the weight", ordered: false, depth: 0, marker: "•" });
    expect(markdown).toBe(
      "Before you send a parcel check these points:\n\n- the address is complete and written in capitals\n- the parcel is sealed with tape on every side and its label shows the weight\n\nThen take it to the counter.",
    );
  });

  it("keeps the numbers of a numbered list and nests a marker that sits further right", () => {
    const { blocks, markdown } = structure([
      { text: "1. Print the label", x: 240, y: 300, block: 1, gaps: { 1: 1 } },
      { text: "a) in colour", x: 300, y: 300 + PITCH, block: 1, gaps: { 1: 1 } },
      { text: "2) Fix it on top", x: 240, y: 300 + 2 * PITCH, block: 1, gaps: { 1: 1 } },
    ]);
    expect(blocks.map((b) => [b.type, b.ordered, b.depth, b.marker])).toEqual([
      ["list_item", true, 0, "1."],
      ["list_item", true, 1, "a)"],
      ["list_item", true, 0, "2)"],
    ]);
    expect(markdown).toBe("1. Print the label\n    - a) in colour\n2) Fix it on top");
  });

  it("takes a small round blob tesseract read as 'e', set apart by a tab, for a bullet, but not the word 'e' in a sentence", () => {
    const { blocks } = structure([
      { text: "e the address is complete", x: 240, y: 300, block: 1, gaps: { 1: 1.4 }, heights: { 0: 0.35 } },
      { text: "e the parcel is sealed", x: 240, y: 300 + PITCH, block: 1, gaps: { 1: 1.4 }, heights: { 0: 0.35 } },
    ]);
    expect(blocks.map((b) => [b.type, b.text])).toEqual([
      ["list_item", "the address is complete"],
      ["list_item", "the parcel is sealed"],
    ]);
    const prose = structure([{ text: "e depois o navio partiu para o norte", x: 200, y: 300, block: 1 }]);
    expect(prose.blocks.map((b) => b.type)).toEqual(["paragraph"]);
  });

  it("takes such a blob for a bullet nearer its text (a tab, under an em) when its foot stands clear of the baseline, as a bullet's does and a letter's never", () => {
    const item = (text: string, y: number, raised: number) => ({ text, x: 240, y, block: 1, par: y, gaps: { 1: 0.9 }, heights: { 0: 0.37 }, raised: { 0: raised } });
    const bullets = structure([item("e the address is complete", 300, 0.2), item("¢ the parcel is sealed", 300 + 2 * PITCH, 0.2)]);
    expect(bullets.blocks.map((b) => [b.type, b.text])).toEqual([
      ["list_item", "the address is complete"],
      ["list_item", "the parcel is sealed"],
    ]);
    // The same gap with the blob on the baseline: a letter (Portuguese "e") after a wide space, not a bullet.
    const letters = structure([item("e the address is complete", 300, 0), item("e the parcel is sealed", 300 + 2 * PITCH, 0)]);
    expect(letters.blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph"]);
  });

  it("starts a new item at a line at the items' text indent where ink stands in the bullet's place (a bullet tesseract did not read)", () => {
    const lines: Line[] = [
      { text: "• the address is complete", x: 240, y: 300, block: 1, gaps: { 1: 1 } },
      { text: "the parcel is sealed", x: 240 + 45, y: 300 + PITCH, block: 1 },
      { text: "with tape", x: 240 + 45, y: 300 + 2 * PITCH, block: 1 },
    ];
    const dot = { x: 245, y: 300 + PITCH + 14 };
    expect(structure(lines, { dots: [dot] }).blocks.map((b) => [b.type, b.text])).toEqual([
      ["list_item", "the address is complete"],
      ["list_item", "the parcel is sealed with tape"],
    ]);
    expect(structure(lines, {}).blocks.map((b) => [b.type, b.text])).toEqual([["list_item", "the address is complete the parcel is sealed with tape"]]);
  });

  it("finds a list whose every bullet tesseract dropped by the dots left of its lines, and no list without them", () => {
    const lines: Line[] = ["As required by law", "In response to a court order", "To identify a suspect"].map((text, i) => ({ text, x: 285, y: 300 + i * PITCH, block: 1 + i }));
    const dots = lines.map((l) => ({ x: 245, y: l.y + 14 }));
    expect(structure(lines, { dots }).markdown).toBe("- As required by law\n- In response to a court order\n- To identify a suspect");
    expect(structure(lines, {}).blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph", "paragraph"]);
  });

  it("finds a numbered list whose every number tesseract dropped by the digits left of its lines, counting from 1; not without them, nor from a wider mark", () => {
    const lines: Line[] = ["Management endpoints are fuzzed", "The answer carries the text", "Rendering a page"].map((text, i) => ({ text, x: 285, y: 300 + i * PITCH, block: 1 + i }));
    // A digit and its dot: 0.8 em wide, 0.7 em tall, standing on the line's baseline (y + 0.72 em).
    const number = (l: Line, width = 24): Ink => ({ x0: 230, y0: Math.round(l.y + 0.02 * BODY), x1: 230 + width, y1: Math.round(l.y + 0.72 * BODY) });
    expect(structure(lines, { marks: lines.map((l) => number(l)) }).markdown).toBe("1. Management endpoints are fuzzed\n2. The answer carries the text\n3. Rendering a page");
    expect(structure(lines, {}).blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph", "paragraph"]);
    // Two ems of ink is a word of a column to the left, not a number.
    expect(structure(lines, { marks: lines.map((l) => ({ ...number(l, 60), x0: 210, x1: 270 })) }).blocks.map((b) => b.type)).toEqual(["paragraph", "paragraph", "paragraph"]);
  });

  it("does not take a number that starts a wrapped line of a paragraph for a list item", () => {
    const { blocks } = structure([
      { text: "The board counted the ships that called in the year and found", x: 200, y: 300, block: 1 },
      { text: "12. more than the year before, most of them from the north.", x: 200, y: 300 + PITCH, block: 1 },
    ]);
    expect(blocks.map((b) => b.type)).toEqual(["paragraph"]);
  });
});

describe("tables, headers, footers and figures", () => {
  const table: SourceBlock = {
    block: { type: "table", bbox: [200, 300, 1400, 420], text: "Item\tPrice\nPipe | elbow\t4.50" },
    words: [],
    rows: [
      ["Item", "Price"],
      ["Pipe | elbow", "4.50"],
    ],
  };
  const footer: SourceBlock = { block: { type: "footer", bbox: [800, 2200, 900, 2230], text: "Page 3" }, words: [] };
  const figure: SourceBlock = { block: { type: "figure", bbox: [200, 500, 800, 900], text: "" }, words: [] };

  it("writes a table as a GFM table, its first row the header and | escaped in cells; json keeps the cells", () => {
    const blocks = structurePage([table]);
    expect(blocks).toEqual([{ type: "table", text: table.block.text, bbox: table.block.bbox, cells: table.rows, table_cells: expect.any(Array) }]);
    expect(blocks[0]!.table_cells![0]).toEqual({ row: 0, col: 0, row_span: 1, col_span: 1, text: table.rows![0]![0] });
    expect(renderMarkdown(blocks)).toBe("| Item | Price |\n| --- | --- |\n| Pipe \\| elbow | 4.50 |");
  });

  it("keeps footers and figures as blocks of their own and leaves them out of the markdown", () => {
    const blocks = structurePage([table, figure, footer]);
    expect(blocks.map((b) => b.type)).toEqual(["table", "figure", "footer"]);
    expect(renderMarkdown(blocks)).not.toMatch(/Page 3/);
  });
});

describe("renderMarkdown", () => {
  it("escapes text that markdown would read as markup: a leading #, a leading number with a dot, emphasis and HTML", () => {
    const p = (text: string): PageBlock => ({ type: "paragraph", text, bbox: [0, 0, 1, 1] });
    expect(renderMarkdown([p("# 5 on the list"), p("1. is not a list here"), p("a *starred* word and <b>bold</b>"), p("- dash"), p("snake_case stays")])).toBe(
      "\\# 5 on the list\n\n1\\. is not a list here\n\na \\*starred\\* word and \\<b>bold\\</b>\n\n\\- dash\n\nsnake_case stays",
    );
  });
});
