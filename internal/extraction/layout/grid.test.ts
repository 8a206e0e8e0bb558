/**
 * Ruled tables (grid.ts) on synthetic pages: lines drawn into grey pixels,
 * so each test states the geometry it checks, and words placed as tesseract's
 * TSV gives them. The real engine on a rendered ruled page is covered in
 * engines/tesseract.test.ts.
 */
import { describe, expect, it } from "vitest";
import { findPageRules, gridTable, scaleRules } from "./grid.ts";
import { analyzePage } from "./page.ts";
import type { GreyImage } from "./rules.ts";
import type { OcrWord } from "./words.ts";

/** A white A4 page at 200 DPI. */
function page(width = 1654, height = 2339): GreyImage {
  return { width, height, pixels: new Uint8Array(width * height).fill(255) };
}

/** A horizontal line at y from x0 to x1, `thick` pixels, dotted when `dot` (dots of `dot` pixels, gaps as long). */
function hline(img: GreyImage, y: number, x0: number, x1: number, thick = 2, dot = 0): void {
  for (let t = 0; t < thick; t++) for (let x = x0; x <= x1; x++) if (!dot || Math.floor((x - x0) / dot) % 2 === 0) img.pixels[(y + t) * img.width + x] = 0;
}

function vline(img: GreyImage, x: number, y0: number, y1: number, thick = 2, dot = 0): void {
  for (let t = 0; t < thick; t++) for (let y = y0; y <= y1; y++) if (!dot || Math.floor((y - y0) / dot) % 2 === 0) img.pixels[y * img.width + x + t] = 0;
}

/** Ruled cells: horizontal lines at `ys`, vertical ones at `xs`, each the whole grid long. */
function grid(img: GreyImage, xs: number[], ys: number[], dot = 0): void {
  for (const y of ys) hline(img, y, xs[0]!, xs[xs.length - 1]!, 2, dot);
  for (const x of xs) vline(img, x, ys[0]!, ys[ys.length - 1]!, 2, dot);
}

let index = 0;
/** A word as tesseract reports it, centred at (cx, cy); `line`: tesseract's line key. */
function word(text: string, cx: number, cy: number, line = `l${cy}`): OcrWord {
  const w = text.length * 14;
  return { text, x0: cx - w / 2, y0: cy - 17, x1: cx + w / 2, y1: cy + 17, conf: 95, line, paragraph: "p1", index: index++ };
}

const cellText = (t: ReturnType<typeof gridTable>) => t!.rows.map((r) => r.map((c) => (c && c.kind === "leaf" ? c.lines.map((l) => l.words.map((w) => w.text).join(" ")).join(" ") : "")));

describe("ruled tables: the grid of lines", () => {
  it("finds a 3 × 3 grid's rows and columns", () => {
    const img = page();
    grid(img, [200, 600, 1000, 1400], [300, 380, 460, 540]);
    const grids = findPageRules(img).grids;
    expect(grids).toHaveLength(1);
    expect(grids[0]!.ys.length - 1).toBe(3);
    expect(grids[0]!.xs.length - 1).toBe(3);
    expect(grids[0]!.open.flat().some(Boolean)).toBe(false);
    // The outer lines' centres, and where the lines end, as one edge each.
    expect(grids[0]!.box).toEqual({ x0: 200, y0: 300, x1: 1401, y1: 541 });
  });

  it("finds a dotted grid as a solid one", () => {
    const img = page();
    grid(img, [200, 700, 1200], [300, 400, 500], 3);
    const grids = findPageRules(img).grids;
    expect(grids.map((g) => [g.ys.length - 1, g.xs.length - 1])).toEqual([[2, 2]]);
  });

  it("joins the cells of a row whose line between them is missing (a heading spanning columns)", () => {
    const img = page();
    const [xs, ys] = [[200, 700, 1200], [300, 380, 460, 540]];
    for (const y of ys) hline(img, y, 200, 1200);
    vline(img, 200, 300, 540);
    vline(img, 1200, 300, 540);
    vline(img, 700, 380, 540); // not in the first row
    const [g] = findPageRules(img).grids;
    expect(g!.open.map((r) => r[1])).toEqual([true, false, false]);
    const t = gridTable(g!, [word("Quarterly", 700, 340), word("Region", 450, 420), word("Sales", 950, 420), word("North", 450, 500), word("12", 950, 500)]);
    expect(cellText(t)).toEqual([
      ["Quarterly", ""],
      ["Region", "Sales"],
      ["North", "12"],
    ]);
    expect(xs.length).toBe(3);
  });

  it("keeps a header over two columns merged where a letter's stem of its text stands at the missing line (gen_016's 'Seconds')", () => {
    const img = page();
    const ys = [975, 1028, 1079, 1130];
    for (const y of ys) hline(img, y, 157, 667);
    vline(img, 157, 975, 1130);
    vline(img, 667, 975, 1130);
    vline(img, 488, 975, 1130);
    vline(img, 577, 1028, 1130); // not in the header row
    // A "d" 2 px left of where the line would be: a 22-px stem, its bowl beside it; an "l" further right.
    vline(img, 573, 992, 1013, 3);
    for (let y = 1000; y <= 1013; y++) for (const x of [560, 561, 570, 571]) img.pixels[y * img.width + x] = 0;
    vline(img, 600, 992, 1013, 3);
    const [g] = findPageRules(img).grids;
    expect(g!.open.map((r) => r[2])).toEqual([true, false, false]);
    // A line a scan broke into pieces still parts the cells where its pieces reach the row's ends.
    const scan = page();
    for (const y of ys) hline(scan, y, 157, 667);
    for (const x of [157, 488, 667]) vline(scan, x, 975, 1130);
    for (const [y0, y1] of [[975, 1000], [1016, 1079], [1079, 1100], [1108, 1130]] as const) vline(scan, 577, y0, y1);
    expect(findPageRules(scan).grids[0]!.open.map((r) => r[2])).toEqual([false, false, false]);
  });

  it("says the spans of merged cells: a group header over two columns, a label down two rows", () => {
    // | Region | Sales (2 cols)  |      row 0: the line at x 1000 stops under it
    // |        | Q1     | Q2     |
    // | North  | 12     | 14     |      rows 2–3: the line at y 540 stops at x 600, so "North" spans them
    // |        | 13     | 15     |
    const img = page();
    hline(img, 300, 200, 1400);
    hline(img, 380, 600, 1400); // under the group header only
    hline(img, 460, 200, 1400);
    hline(img, 540, 600, 1400); // not under "North"
    hline(img, 620, 200, 1400);
    vline(img, 200, 300, 620);
    vline(img, 1400, 300, 620);
    vline(img, 600, 300, 620);
    vline(img, 1000, 380, 620); // not in the group header's row
    const [g] = findPageRules(img).grids;
    const t = gridTable(g!, [
      word("Region", 400, 380),
      word("Sales", 1000, 340),
      word("Q1", 800, 420),
      word("Q2", 1200, 420),
      word("North", 400, 540),
      word("12", 800, 500),
      word("14", 1200, 500),
      word("13", 800, 580),
      word("15", 1200, 580),
    ]);
    expect(cellText(t)).toEqual([
      ["Region", "Sales", ""],
      ["", "Q1", "Q2"],
      ["North", "12", "14"],
      ["", "13", "15"],
    ]);
    expect(t!.spans).toEqual([
      { row: 0, col: 0, rows: 2, cols: 1 },
      { row: 0, col: 1, rows: 1, cols: 2 },
      { row: 2, col: 0, rows: 2, cols: 1 },
    ]);
  });

  it("parts two tables set one right under the other, sharing a border, by the column lines that end at it and start below it", () => {
    const img = page();
    // Above: 3 columns (x 200, 600, 1000, 1400), rows at 300, 380, 460. Below: 2 columns (x 200, 800, 1400), rows at 460, 540, 620.
    for (const y of [300, 380, 460, 540, 620]) hline(img, y, 200, 1400);
    vline(img, 200, 300, 620);
    vline(img, 1400, 300, 620);
    for (const x of [600, 1000]) vline(img, x, 300, 460);
    vline(img, 800, 460, 620);
    const grids = findPageRules(img).grids;
    expect(grids.map((g) => ({ ys: g.ys, columns: g.xs.length - 1, open: g.open.flat().some(Boolean) }))).toEqual([
      { ys: [300, 381, 461], columns: 3, open: false },
      { ys: [461, 541, 621], columns: 2, open: false },
    ]);
  });

  it("takes no span from a line a scan broke in one row only (the merge would not be a rectangle)", () => {
    const img = page();
    for (const y of [300, 380, 460]) hline(img, y, 200, 1400);
    vline(img, 200, 300, 460);
    vline(img, 1400, 300, 460);
    vline(img, 600, 300, 460);
    vline(img, 1000, 300, 380); // missing in the second row only: columns 1 and 2 of row 1 merge…
    hline(img, 380, 200, 1400);
    const [g] = findPageRules(img).grids;
    const t = gridTable(g!, [word("a", 400, 340), word("b", 800, 340), word("c", 1200, 340), word("d", 400, 420), word("e", 800, 420)]);
    // …which is a rectangle (one row, two columns), so it is a span; nothing reaches across rows.
    expect(t!.spans).toEqual([{ row: 1, col: 1, rows: 1, cols: 2 }]);
  });

  it("finds a grid a scan tilted by up to 1.2°, its rules grey and broken, with the same rows, columns and no spans", () => {
    for (const degrees of [0.6, 1.2]) {
      const img = page();
      const t = Math.tan((degrees * Math.PI) / 180);
      const xs = [200, 600, 1000, 1400];
      const ys = [300, 380, 460, 540, 620];
      // Paper at 235 with a scan's noise (±12), rules at 150 (a scan's blur), a gap of 5 pixels every 90 (a scan's dropouts).
      let seed = 7;
      for (let i = 0; i < img.pixels.length; i++) img.pixels[i] = 223 + ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 24) % 25;
      const put = (x: number, y: number) => {
        const [a, b] = [Math.round(x - (y - 300) * t), Math.round(y + (x - 200) * t)];
        if ((a + b) % 90 >= 5) img.pixels[b * img.width + a] = 150;
      };
      for (const y of ys) for (let x = 200; x <= 1400; x += 0.5) for (const k of [0, 1]) put(x, y + k);
      for (const x of xs) for (let y = 300; y <= 620; y += 0.5) for (const k of [0, 1]) put(x + k, y);
      // Text, darker than the rules, inside the cells.
      for (const [x, y] of [[250, 330], [650, 410], [1050, 490]] as const) for (let k = 0; k < 20; k++) hline(img, y + k, x, x + 120, 1);
      const grids = findPageRules(img).grids;
      expect(grids.map((g) => [g.ys.length - 1, g.xs.length - 1]), `${degrees}°`).toEqual([[4, 3]]);
      expect(grids[0]!.joined.flat().some(Boolean), `${degrees}°`).toBe(false);
      expect(grids[0]!.open.flat().some(Boolean), `${degrees}°`).toBe(false);
    }
  });

  it("takes a row's own separator, too short to be a line by itself, as a column edge (a form's row of one text line)", () => {
    // Two rows "Name | …" ruled at x 600 over both (160 px), then a row 70 px high split at x 900 only, as in a
    // LibreOffice form: the 70-px separator is under the length of a line (1/15 of the page's width, 110 px).
    const img = page();
    for (const y of [300, 380, 460, 530]) hline(img, y, 200, 1400);
    vline(img, 200, 300, 530);
    vline(img, 1400, 300, 530);
    vline(img, 600, 300, 460);
    vline(img, 900, 460, 530);
    // Letters in that row: stems as tall as text gets in it (two thirds of the row), not separators.
    for (const x of [300, 340, 1000, 1040]) vline(img, x, 472, 518, 3);
    const [g] = findPageRules(img).grids;
    expect(g!.xs).toEqual([200, 601, 901, 1401]);
    expect(g!.open.map((r) => r.slice(1, 3))).toEqual([
      [false, true],
      [false, true],
      [true, false],
    ]);
    const t = gridTable(g!, [word("Name", 400, 340), word("Acme", 1000, 340), word("Address", 400, 420), word("Linz", 1000, 420), word("Assets", 400, 495), word("Turnover", 1100, 495)]);
    expect(cellText(t)).toEqual([
      ["Name", "Acme", ""],
      ["Address", "Linz", ""],
      ["Assets", "", "Turnover"],
    ]);
  });

  it("finds a table of one-line rows, all of whose vertical lines are too short to be lines by themselves", () => {
    // Two rows of 39 px (a Word table at 200 DPI): its verticals, 78 px, are under a line's 110 px.
    const img = page();
    grid(img, [184, 627, 1071, 1516], [1574, 1613, 1652]);
    // Letters in the rows: stems two thirds of a row high, not separators.
    for (const x of [250, 300, 700, 1200]) vline(img, x, 1582, 1606, 3);
    const rules = findPageRules(img);
    expect(rules.grids.map((g) => ({ xs: g.xs, ys: g.ys, open: g.open.flat().some(Boolean) }))).toEqual([{ xs: [184, 628, 1072, 1517], ys: [1575, 1614, 1653], open: false }]);
    expect(rules.blanks).toEqual([]);
    const t = gridTable(rules.grids[0]!, [word("Row", 300, 1594), word("Col", 800, 1594), word("Row", 300, 1633), word("Col", 1200, 1633)]);
    expect(cellText(t)).toEqual([
      ["Row", "Col", ""],
      ["Row", "", "Col"],
    ]);
  });

  it("sees no table of short lines in a text box, nor in a form's stacked lines to fill in", () => {
    const img = page();
    // A text box: two horizontal lines, its sides 58 px, nothing between them.
    grid(img, [875, 1393], [476, 534]);
    // Lines to fill in, one under the other at one extent, a label's letters between them.
    for (const y of [800, 860, 920]) hline(img, y, 600, 1200);
    for (const y of [815, 875]) for (const x of [620, 660, 700]) vline(img, x, y, y + 30, 3);
    const rules = findPageRules(img);
    expect(rules.grids).toEqual([]);
    expect(rules.blanks).toHaveLength(5);
  });

  it("sees no table in a box around a paragraph, an underline, a pair of rules or a lone vertical rule", () => {
    const img = page();
    grid(img, [200, 1400], [300, 700]); // one cell
    hline(img, 900, 200, 800); // an underline
    hline(img, 1000, 200, 1400);
    hline(img, 1100, 200, 1400); // two rules, no verticals
    vline(img, 300, 1250, 1400); // a rule down the margin, meeting nothing
    expect(findPageRules(img).grids).toEqual([]);
  });

  it("looks at no image too small to hold a ruled table", () => {
    const img = page(400, 300);
    grid(img, [20, 150, 300], [20, 100, 180]);
    expect(findPageRules(img).grids).toEqual([]);
  });

  it("ends a table ruled only between its columns where its lines end, and splits its unruled rows by their lines of text", () => {
    const img = page();
    hline(img, 300, 200, 1400);
    hline(img, 380, 200, 1400);
    hline(img, 700, 200, 1400);
    vline(img, 800, 300, 700); // the only vertical: between the two columns
    const [g] = findPageRules(img).grids;
    expect(g!.xs).toEqual([200, 801, 1400]);
    const words = [word("Part", 500, 340), word("Table", 1100, 340)];
    for (const [i, y] of [440, 500, 560, 620].entries()) words.push(word(String(i + 1), 500, y), word(`13${"AB"[i % 2]}`, 1100, y));
    expect(cellText(gridTable(g!, words))).toEqual([
      ["Part", "Table"],
      ["1", "13A"],
      ["2", "13B"],
      ["3", "13A"],
      ["4", "13B"],
    ]);
  });

  it("keeps a cell's wrapped lines in one row when the next column has one line", () => {
    const img = page();
    grid(img, [200, 800, 1400], [300, 500, 580]);
    const [g] = findPageRules(img).grids;
    const t = gridTable(g!, [word("Subject:", 500, 330), word("Appointment", 500, 370), word("Replacement", 500, 410), word("Lifting", 500, 450), word("Lifting", 1100, 330), word("Taal", 500, 540), word("N", 1100, 540)]);
    expect(cellText(t)).toEqual([
      ["Subject: Appointment Replacement Lifting", "Lifting"],
      ["Taal", "N"],
    ]);
  });

  it("is no table when fewer than two cells hold words, and scales with an enlarged page", () => {
    const img = page();
    grid(img, [200, 800, 1400], [300, 400, 500]);
    const [g] = findPageRules(img).grids;
    expect(gridTable(g!, [word("alone", 500, 350)])).toBeNull();
    expect(scaleRules({ grids: [g!], blanks: [] }, 2).grids[0]!.xs).toEqual(g!.xs.map((x) => x * 2));
  });
});

describe("ruled tables in the page's reading", () => {
  const HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext";
  const tsv = (words: { text: string; x: number; y: number; block: number; line: number }[]) =>
    [HEADER, "1\t1\t0\t0\t0\t0\t0\t0\t1654\t2339\t-1\t", ...words.map((w, i) => `5\t1\t${w.block}\t1\t${w.line}\t${i + 1}\t${w.x}\t${w.y}\t${w.text.length * 14}\t34\t95\t${w.text}`)].join("\n") + "\n";

  it("reads a grid's words as its cells, in the table's place, the rest as paragraphs", () => {
    const img = page();
    grid(img, [200, 800, 1400], [500, 580, 660]);
    const rules = findPageRules(img);
    // Tesseract read the table a column at a time, between two paragraphs.
    const read = analyzePage(
      tsv([
        { text: "Before", x: 200, y: 300, block: 1, line: 1 },
        { text: "Name", x: 300, y: 523, block: 2, line: 1 },
        { text: "Alice", x: 300, y: 603, block: 2, line: 2 },
        { text: "Score", x: 900, y: 523, block: 3, line: 1 },
        { text: "17", x: 900, y: 603, block: 3, line: 2 },
        { text: "After", x: 200, y: 900, block: 4, line: 1 },
      ]),
      { rules },
    );
    // Each cell's box is its words' ("17": at (900, 603), two letters of 14 px, 34 high).
    expect(read.tables[0]!.boxes[1]![1]).toEqual([900, 603, 928, 637]);
    expect(read.tables.map((t) => t.rows)).toEqual([
      [
        ["Name", "Score"],
        ["Alice", "17"],
      ],
    ]);
    expect(read.text).toBe("Before\n\nName\tScore\nAlice\t17\n\nAfter");
    expect(read.layout.blocks.map((b) => b.type)).toEqual(["text", "table", "text"]);
  });
});

describe("blanks: lines to fill in", () => {
  const HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext";
  /** Tesseract's TSV of lines of words, each word at its x, one tesseract line per row of `lines`. */
  const tsv = (lines: { y: number; words: [string, number][] }[]) => {
    const rows = [HEADER, "1\t1\t0\t0\t0\t0\t0\t0\t1654\t2339\t-1\t"];
    let n = 0;
    lines.forEach((l, i) => l.words.forEach(([text, x]) => rows.push(`5\t1\t1\t1\t${i + 1}\t${++n}\t${x}\t${l.y}\t${text.length * 14}\t34\t95\t${text}`)));
    return rows.join("\n") + "\n";
  };
  /** A sentence's words from x, a character's width apart. */
  const words = (text: string, x: number): [string, number][] => {
    let at = x;
    return text.split(" ").map((w) => {
      const placed: [string, number] = [w, at];
      at += (w.length + 1) * 14;
      return placed;
    });
  };

  it("reads a form's sentences with lines to fill in as sentences, where the words alone look like a table", () => {
    const img = page();
    // "… Konto Nr. ________ bei der" over "(Name der Bank) ________ (BLZ) ______ erfolgen." over
    // "Ort und Datum ________ Unterschrift": the blanks' gaps line up.
    const lines = [
      { y: 500, words: [...words("Die Zuschussüberweisung soll auf das Konto Nr.", 200), ...words("bei der", 1180)] },
      { y: 544, words: [...words("(Name der Bank)", 200), ...words("(BLZ)", 730), ...words("erfolgen.", 1030)] },
      { y: 588, words: [...words("Ort und Datum", 200), ...words("Unterschrift", 1030)] },
    ];
    hline(img, 530, 880, 1150);
    hline(img, 574, 440, 700);
    hline(img, 574, 830, 1000);
    hline(img, 618, 420, 1000);
    const rules = findPageRules(img);
    expect(rules.grids).toEqual([]);
    expect(rules.blanks).toHaveLength(4);
    // Without the blanks, the gaps they fill are a table's column gap.
    expect(analyzePage(tsv(lines)).tables).toHaveLength(1);
    const read = analyzePage(tsv(lines), { rules });
    expect(read.tables).toEqual([]);
    expect(read.text).toBe("Die Zuschussüberweisung soll auf das Konto Nr. bei der\n(Name der Bank) (BLZ) erfolgen.\nOrt und Datum Unterschrift");
  });

  it("keeps a table whose header row is underlined: the rule runs under the words, not only between them", () => {
    const img = page();
    const lines = [
      { y: 500, words: [["Item", 200], ["Quantity", 700], ["Price", 1100]] as [string, number][] },
      { y: 560, words: [["Toner", 200], ["3", 700], ["12.00", 1100]] as [string, number][] },
      { y: 604, words: [["Paper", 200], ["10", 700], ["4.50", 1100]] as [string, number][] },
    ];
    hline(img, 540, 200, 1200);
    const rules = findPageRules(img);
    expect(rules.blanks).toHaveLength(1);
    expect(analyzePage(tsv(lines), { rules }).tables.map((t) => t.rows)).toEqual([
      [
        ["Item", "Quantity", "Price"],
        ["Toner", "3", "12.00"],
        ["Paper", "10", "4.50"],
      ],
    ]);
  });
});
