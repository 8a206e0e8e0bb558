/**
 * TesseractEngine against the real tesseract CLI on the OCR fixtures
 * (test/fixtures/ocr, made by generate.ts): accuracy as character error rate
 * under thresholds measured on this engine with margin, language mapping,
 * cancellation, and input that must fail cleanly.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { cer } from "../../../test/cer.ts";
import { TABLE_ROWS } from "../../../test/fixtures/ocr/table-rows.ts";
import { TesseractEngine, imageFormat } from "./tesseract.ts";
import { installedLanguages, installedTraineddata, tesseractLanguage } from "./tesseract-languages.ts";
import { builtResidentProgram, ResidentTesseract } from "./tesseract-server.ts";
import { TEXT_OPTIONS as TEXT, folioFailure as failure, liveSignal as live, ocrFixture as fixture, ocrFixturePath, ocrTruth as truth, pngPage as page, expectCerBelow, expectCleanLocalRead, withJfif, TESSERACT_CER } from "../../../test/support.ts";


/**
 * Measured with this engine (tesseract 5.3.0, psm 3 + layout): 0.000 on every clean
 * render, 0.060 on scan.png. The thresholds leave room for other tesseract
 * 5 builds and traineddata versions.
 */
const { clean: CLEAN_CER, scan: SCAN_CER } = TESSERACT_CER;

describe("TesseractEngine on the fixtures", () => {
  const engine = new TesseractEngine();

  it.each([
    ["english.png", "english.txt", undefined],
    ["german.png", "german.txt", "de"],
    ["table.png", "table.txt", "en"],
  ])("reads %s with a character error rate under 0.02 and a confidence in (0, 1]", async (image, text, language) => {
    const r = await engine.extractPage(page(fixture(image)), { ...TEXT, language }, live());
    expectCleanLocalRead(r, text, CLEAN_CER, 0.8);
  });

  it("keeps table rows on one line each and paragraphs apart by a blank line", async () => {
    const table = await engine.extractPage(page(fixture("table.png")), TEXT, live());
    expect(table.text, table.text).toMatch(/^Toner cartridge\s+3\s+68\.90\s+206\.70$/m);
    const english = await engine.extractPage(page(fixture("english.png")), TEXT, live());
    expect(english.text.split(/\n\n/).length, english.text).toBe(3);
  });

  it("reads the degraded scan under 0.12 with a lower confidence than a clean page", async () => {
    const scan = await engine.extractPage(page(fixture("scan.png")), TEXT, live());
    expectCerBelow(scan.text, "scan.txt", SCAN_CER);
    expect(scan.confidence).toBeGreaterThan(0);
    expect(scan.confidence).toBeLessThan(0.9);
  });

  it("answers output_format markdown as GitHub markdown from the layout: the title a heading, the paragraphs, the table as a GFM table, the page number left out", async () => {
    const r = await engine.extractPage(page(fixture("columns.png")), { ...TEXT, outputFormat: "markdown" }, live());
    const parts = r.text.split("\n\n");
    expect(parts[0], r.text).toBe("# Annual Report of the Harbour Board");
    expect(parts.slice(1, 5).every((p) => !p.includes("\n") && !p.startsWith("#")), r.text).toBe(true);
    expect(r.text, r.text).toContain("| Item | Quantity | Unit price | Amount |\n| --- | --- | --- | --- |\n| Printer paper A4 | 12 | 4.50 | 54.00 |");
    expect(r.text, r.text).not.toMatch(/Page 3/);
    expect(r.blocks).toBeUndefined();
  });

  it("answers output_format json with the text as read and the blocks in reading order: heading, paragraphs, the table with its cells, the footer", async () => {
    const image = page(fixture("columns.png"));
    const [plain, json] = await Promise.all([engine.extractPage(image, TEXT, live()), engine.extractPage(image, { ...TEXT, outputFormat: "json" }, live())]);
    expect(json.text).toBe(plain.text);
    expect(plain.blocks).toBeUndefined();
    const blocks = json.blocks!;
    expect(blocks.map((b) => b.type), JSON.stringify(blocks)).toEqual(["heading", "paragraph", "paragraph", "paragraph", "paragraph", "table", "footer"]);
    expect(blocks[0]).toMatchObject({ type: "heading", level: 1, text: "Annual Report of the Harbour Board" });
    expect(blocks[5]!.cells).toEqual(TABLE_ROWS);
    expect(blocks[6]).toMatchObject({ type: "footer", text: "Page 3" });
    for (const b of blocks) expect(b.bbox[2] > b.bbox[0] && b.bbox[3] > b.bbox[1], JSON.stringify(b)).toBe(true);
  });
});

describe("small text", () => {
  it("reads a page whose words are about 8 pixels high enlarged, with its boxes in the page as sent", async () => {
    const sharp = (await import("sharp")).default;
    // The A4 fixture at a quarter of its size: 50 DPI, words 7–9 pixels high.
    const small = await sharp(fixture("english.png")).resize(414).png().toBuffer();
    const once = execFileSync("tesseract", ["stdin", "stdout", "-l", "eng", "--psm", "3"], { input: small, encoding: "utf8", stdio: ["pipe", "pipe", "ignore"] });
    // One pass of tesseract at that size misreads a good part of it; that is what this case is about.
    expect(cer(once, truth("english.txt"))).toBeGreaterThan(0.15);
    const r = await new TesseractEngine().extractPage(page(small), { ...TEXT, includeLayout: "words" }, live());
    expect(cer(r.text, truth("english.txt"))).toBeLessThan(0.1);
    const { width, height, blocks } = r.layout!;
    expect([width, height]).toEqual([414, 585]);
    const boxes = blocks.flatMap((b) => [b.bbox, ...(b.words ?? []).map((w) => w.bbox)]);
    expect(boxes.length).toBeGreaterThan(20);
    for (const [x0, y0, x1, y1] of boxes) expect(x0 >= 0 && y0 >= 0 && x1 <= width && y1 <= height && x0 < x1 && y0 < y1, `${[x0, y0, x1, y1]}`).toBe(true);
  });
});

describe("output_format markdown on a rendered page with lists", () => {
  const engine = new TesseractEngine();

  it("writes bullets as - items and numbered steps with their numbers, the headings by their size", async () => {
    const r = await engine.extractPage(page(await listPage()), { ...TEXT, outputFormat: "markdown", language: "en" }, live());
    expect(r.text).toBe(
      [
        "# Shipping Guide",
        "Every parcel is weighed twice before it leaves the warehouse, and each one gets a tracking number that the customer can follow.",
        "## Before you send",
        "Check these points:",
        "- the address is complete\n- the parcel is sealed with tape\n- the label shows the weight",
        "Then follow the steps:",
        "1. print the label\n2. fix it on top of the parcel",
      ].join("\n\n"),
    );
  });
});

/** A page drawn by sharp from SVG (DejaVu Sans, as the fixtures): a title, a paragraph, a subheading, a bulleted and a numbered list. */
async function listPage(): Promise<Buffer> {
  const sharp = (await import("sharp")).default;
  const lines: [number, number, number, string, string][] = [
    [80, 120, 44, "bold", "Shipping Guide"],
    [80, 200, 22, "normal", "Every parcel is weighed twice before it leaves the warehouse, and"],
    [80, 232, 22, "normal", "each one gets a tracking number that the customer can follow."],
    [80, 300, 30, "bold", "Before you send"],
    [80, 360, 22, "normal", "Check these points:"],
    [100, 400, 22, "normal", "•"], [130, 400, 22, "normal", "the address is complete"],
    [100, 436, 22, "normal", "•"], [130, 436, 22, "normal", "the parcel is sealed with tape"],
    [100, 472, 22, "normal", "•"], [130, 472, 22, "normal", "the label shows the weight"],
    [80, 530, 22, "normal", "Then follow the steps:"],
    [100, 570, 22, "normal", "1."], [130, 570, 22, "normal", "print the label"],
    [100, 606, 22, "normal", "2."], [130, 606, 22, "normal", "fix it on top of the parcel"],
  ];
  const text = lines.map(([x, y, size, weight, t]) => `<text x="${x}" y="${y}" font-family="DejaVu Sans" font-size="${size}" font-weight="${weight}">${t}</text>`).join("");
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="700"><rect width="100%" height="100%" fill="white"/>${text}</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}

describe("options.language", () => {
  const engine = new TesseractEngine();

  it("lists the installed languages as ISO codes, without osd", async () => {
    const langs = await installedLanguages();
    expect(langs).toEqual(expect.arrayContaining(["de", "en"]));
    expect(langs).not.toContain("osd");
    expect([...(await installedTraineddata())]).toEqual(expect.arrayContaining(["deu", "eng"]));
  });

  it.each([
    [undefined, "eng"],
    ["en", "eng"],
    ["de", "deu"],
    ["DE", "deu"],
    ["de-AT", "deu"],
    ["de_CH", "deu"],
    ["deu", "deu"],
    ["eng", "eng"],
    ["en+de", "eng+deu"],
  ])("maps %s to the traineddata %s", async (hint, name) => {
    expect(await tesseractLanguage(hint)).toBe(name);
  });

  it("reads German umlauts and ß with 'de' and with the traineddata name 'deu'", async () => {
    for (const language of ["de", "deu"]) {
      const r = await engine.extractPage(page(fixture("german.png")), { ...TEXT, language }, live());
      expect(r.text).toContain("Größere Änderungen");
      expect(r.text).toContain("Maßnahmen");
    }
  });

  it("refuses a known language that is not installed with a 400 naming the installed ones as ISO codes", async () => {
    const installed = (await installedLanguages()).join(", ");
    const names = await installedTraineddata();
    const missing = Object.entries({ fr: "fra", ja: "jpn", ru: "rus", it: "ita" }).find(([, name]) => !names.has(name))?.[0];
    expect(missing, "this test needs one of fr, ja, ru, it not installed").toBeDefined();
    const err = await failure(engine.extractPage(page(fixture("english.png")), { ...TEXT, language: missing }, live()));
    expect(err).toMatchObject({ code: "invalid_request", param: "options.language" });
    expect(err.message).toBe(`language '${missing}' is not installed; installed: ${installed}`);
  });

  it("refuses an unknown code with a 400 naming the installed languages", async () => {
    for (const language of ["xx", "english", "en+zz", "../../etc/passwd"]) {
      const err = await failure(tesseractLanguage(language));
      expect(err).toMatchObject({ code: "invalid_request", param: "options.language" });
      expect(err.message, err.message).toMatch(/is not an ISO 639-1 code or tesseract language name; installed: .*\bde\b.*\ben\b/);
    }
  });
});

/** pids of this process's children whose command is `comm` (tesseract, or the resident folio-tesseract). */
function tesseractChildren(comm = "tesseract"): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid ..."; comm may contain spaces, so split after the last ')'.
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (name === comm && ppid === process.pid) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** The CLI (a child a reading), and a resident program of a pool of its own (engines/tesseract-server.ts). */
const WAYS = [
  { way: "the tesseract CLI", comm: "tesseract", pool: () => null },
  { way: "a resident program", comm: "folio-tesseract", pool: () => new ResidentTesseract({ program: builtResidentProgram()!, threads: 1, access: {}, maxOutputBytes: 32 * 1024 * 1024 }) },
];

describe.each(WAYS)("cancellation, reading with $way", ({ comm, pool }) => {
  it("kills the tesseract process when the signal aborts and rejects with the signal's reason", async () => {
    const resident = pool();
    const engine = new TesseractEngine({ resident });
    await installedLanguages(); // so the only child below is the OCR run
    const before = new Set(tesseractChildren(comm));
    const ac = new AbortController();
    const running = engine.extractPage(page(fixture("english.png")), TEXT, ac.signal);
    const settled = running.then(
      () => "resolved",
      (e: unknown) => e,
    );
    let pids: number[] = [];
    for (let i = 0; i < 500 && pids.length === 0; i++) {
      pids = tesseractChildren(comm).filter((p) => !before.has(p));
      if (pids.length === 0) await new Promise((r) => setTimeout(r, 5));
    }
    expect(pids, `a ${comm} child should be running`).toHaveLength(1);
    const reason = new Error("client went away");
    const abortedAt = Date.now();
    ac.abort(reason);
    expect(await settled).toBe(reason);
    // Bounds with room for a loaded machine (two cores shared with other suites): a second was missed by 0.2–1.8 s there.
    expect(Date.now() - abortedAt).toBeLessThan(3000);
    await expect.poll(() => existsSync(`/proc/${pids[0]}`), { timeout: 3000, message: `process ${pids[0]} should be gone` }).toBe(false);
    expect(resident?.size ?? 0).toBe(0);
  });

  it("does not start tesseract when the signal is already aborted", async () => {
    const resident = pool();
    const before = tesseractChildren(comm);
    const reason = new Error("already cancelled");
    await expect(new TesseractEngine({ resident }).extractPage(page(fixture("english.png")), TEXT, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(tesseractChildren(comm)).toEqual(before);
    expect(resident?.size ?? 0).toBe(0);
  });

  it("kills a run that outlives the engine's own time limit with a timeout error", async () => {
    const resident = pool();
    const before = tesseractChildren(comm);
    const err = await failure(new TesseractEngine({ timeoutMs: 50, resident }).extractPage(page(fixture("english.png")), TEXT, live()));
    expect(err.code).toBe("timeout");
    await expect.poll(() => tesseractChildren(comm), { timeout: 1000 }).toEqual(before);
    expect(resident?.size ?? 0).toBe(0);
  });
});

describe("input tesseract cannot read", () => {
  const engine = new TesseractEngine();

  it("refuses bytes that are not an image before tesseract sees them (it would read them as a list of file names)", async () => {
    for (const junk of [Buffer.from("junk bytes, not an image"), Buffer.from(ocrFixturePath("english.png") + "\n"), Buffer.alloc(0)]) {
      const err = await failure(engine.extractPage(page(junk, 3), TEXT, live()));
      expect(err).toMatchObject({ code: "invalid_request", extra: { page_number: 3 } });
      expect(err.message).toMatch(/page 3 is not an image/);
    }
  });

  it("turns a truncated PNG into a 400, not a crash", async () => {
    const err = await failure(engine.extractPage(page(fixture("english.png").subarray(0, 20_000)), TEXT, live()));
    expect(err).toMatchObject({ code: "invalid_request", extra: { page_number: 1 } });
    expect(err.message).toMatch(/damaged or truncated/);
  });

  it("reports a missing tesseract as service_unavailable", async () => {
    const err = await failure(new TesseractEngine({ command: "/nonexistent/tesseract" }).extractPage(page(fixture("english.png")), TEXT, live()));
    expect(err.code).toBe("service_unavailable");
  });

  it("recognises image signatures", () => {
    expect(imageFormat(fixture("english.png"))).toBe("png");
    expect(imageFormat(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe("jpeg");
    expect(imageFormat(Buffer.from("II*\0"))).toBe("tiff");
    expect(imageFormat(Buffer.from("GIF89a"))).toBe("gif");
    expect(imageFormat(Buffer.from("RIFF\0\0\0\0WEBPVP8 "))).toBe("webp");
    expect(imageFormat(Buffer.from("%PDF-1.4"))).toBeUndefined();
  });
});

describe("layout on a page with known columns and a table (columns.png)", () => {
  const engine = new TesseractEngine();

  it("reads the title, the left column, the right column, the table row by row and the page number, in that order", async () => {
    const r = await engine.extractPage(page(fixture("columns.png")), TEXT, live());
    expectCerBelow(r.text, "columns.txt", CLEAN_CER);
  });

  it("returns the table's cells with extract_tables, and none without", async () => {
    const r = await engine.extractPage(page(fixture("columns.png")), { ...TEXT, extractTables: true }, live());
    expect(r.tables.map((t) => t.rows)).toEqual([TABLE_ROWS]);
    expect(r.tables[0]!.markdown).toContain("| Printer paper A4 | 12 | 4.50 | 54.00 |");
    expect((await engine.extractPage(page(fixture("columns.png")), TEXT, live())).tables).toEqual([]);
  });

  it("gives the blocks in reading order with their types and boxes, and the words when asked", async () => {
    const r = await engine.extractPage(page(fixture("columns.png")), { ...TEXT, includeLayout: "words" }, live());
    const layout = r.layout!;
    expect([layout.width, layout.height]).toEqual([1654, 2339]);
    const types = layout.blocks.map((b) => b.type);
    expect(types, JSON.stringify(layout.blocks.map((b) => [b.type, b.bbox, b.text.slice(0, 30)]))).toEqual(["text", "text", "text", "text", "text", "table", "footer"]);
    const [title, left1, left2, right1, right2, table, footer] = layout.blocks;
    expect(title!.text).toBe("Annual Report of the Harbour Board");
    // The left column's blocks stand left of the right column's, and all of them above the table.
    for (const l of [left1!, left2!]) for (const rgt of [right1!, right2!]) expect(l.bbox[2]).toBeLessThan(rgt.bbox[0]);
    for (const b of [left1!, left2!, right1!, right2!]) expect(b.bbox[3]).toBeLessThan(table!.bbox[1]);
    expect(footer!.text).toBe("Page 3");
    expect(footer!.bbox[1]).toBeGreaterThan(0.9 * layout.height);
    const words = layout.blocks.flatMap((b) => b.words ?? []);
    expect(words.length).toBeGreaterThan(150);
    for (const w of words) {
      expect(w.confidence).toBeGreaterThanOrEqual(0);
      expect(w.confidence).toBeLessThanOrEqual(1);
      expect(w.bbox[0]).toBeLessThan(w.bbox[2]);
      expect(w.bbox[1]).toBeLessThan(w.bbox[3]);
      expect(w.bbox[2]).toBeLessThanOrEqual(layout.width);
      expect(w.bbox[3]).toBeLessThanOrEqual(layout.height);
    }
    const blocksOnly = await engine.extractPage(page(fixture("columns.png")), { ...TEXT, includeLayout: "blocks" }, live());
    expect(blocksOnly.layout!.blocks.every((b) => b.words === undefined)).toBe(true);
    expect((await engine.extractPage(page(fixture("columns.png")), TEXT, live())).layout).toBeUndefined();
  });
});

describe("the language without options.language", () => {
  const engine = new TesseractEngine();

  it("finds that a page is German and reads its umlauts and ß", async () => {
    const r = await engine.extractPage(page(fixture("german.png")), TEXT, live());
    expectCerBelow(r.text, "german.txt", CLEAN_CER);
    expect(r.text).toContain("Größere Änderungen");
  });

  it("reads an English page in English", async () => {
    const r = await engine.extractPage(page(fixture("english.png")), TEXT, live());
    expect(cer(r.text, truth("english.txt"))).toBeLessThan(CLEAN_CER);
  });
});

describe("the resident program reads as the CLI whatever resolution an image states", () => {
  const cli = new TesseractEngine({ resident: null });
  const resident = new TesseractEngine({ resident: WAYS[1]!.pool() });

  // The CLI's reader (leptonica) takes a PNG's pHYs and a JPEG's JFIF density in inches; an image that states none
  // leaves tesseract to estimate it from the text. The resident program is told the same (decoder/child.ts statedDpi).
  it.each([
    ["an RGBA PNG stating 96 DPI (pHYs), as the corpus's scanned tables", async (png: Buffer) => sharp(png).ensureAlpha().withMetadata({ density: 96 }).png().toBuffer()],
    ["a JPEG whose JFIF density is an aspect ratio only", async (png: Buffer) => withJfif(await sharp(png).jpeg({ quality: 90 }).toBuffer(), 0, 1)],
    ["a JPEG stating 100 DPI in JFIF", async (png: Buffer) => withJfif(await sharp(png).jpeg({ quality: 90 }).toBuffer(), 1, 100)],
    ["a JPEG stating 100 DPI in EXIF only, which the CLI does not read", async (png: Buffer) => sharp(png).withMetadata({ density: 100 }).jpeg({ quality: 90 }).toBuffer()],
  ])("%s", async (_what, make) => {
    const image = await make(fixture("scan.png"));
    const [a, b] = await Promise.all([cli.extractPage(page(image), TEXT, live()), resident.extractPage(page(image), TEXT, live())]);
    expect(b.text).toBe(a.text);
    expect(b.confidence).toBe(a.confidence);
  });
});
