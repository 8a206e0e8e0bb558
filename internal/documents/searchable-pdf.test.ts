/**
 * The searchable PDF builder on made-up pages and words, read back with
 * poppler (pdfinfo, pdftotext -bbox) as a viewer would: page sizes, where
 * each word's text lies, turned pages and moved CropBoxes, image pages and
 * the fallback for a PDF pdf-lib cannot open, and the WinAnsi limit.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PDFDocument, concatTransformationMatrix, degrees } from "pdf-lib";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSearchablePdf, canCopyPdfPages, compactPageImage, winAnsiText, type SearchablePage } from "./searchable-pdf.ts";

const run = promisify(execFile);
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "folio-searchable-unit-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Seen {
  pages: { width: number; height: number; words: { text: string; box: number[] }[] }[];
}

/** pdftotext -bbox of the CropBox: each page's size and words with [xMin, yMin, xMax, yMax] in points of the page as shown (top left origin). */
async function read(pdf: Buffer): Promise<Seen> {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(path, pdf);
  const html = (await run("pdftotext", ["-bbox", "-cropbox", path, "-"])).stdout;
  return {
    pages: html
      .split("<page ")
      .slice(1)
      .map((p) => {
        const [, w, h] = /width="([\d.]+)" height="([\d.]+)"/.exec(p)!;
        const words = [...p.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)].map((m) => ({
          text: m[5]!,
          box: m.slice(1, 5).map(Number),
        }));
        return { width: Number(w), height: Number(h), words };
      }),
  };
}

/** A white page image of `width` × `height` pixels, PNG, stating `density` DPI when given. */
async function blank(width: number, height: number, density?: number, format: "png" | "tiff" | "jpeg" = "png"): Promise<Buffer> {
  const img = sharp({ create: { width, height, channels: 3, background: "#ffffff" } });
  const withDensity = density ? img.withMetadata({ density }) : img;
  return withDensity.toFormat(format).toBuffer();
}

/** Two lines of words, boxes in pixels; the second line starts left of the first's end. */
const twoLines: SearchablePage["words"] = [
  { text: "Hello", bbox: [100, 100, 300, 150] },
  { text: "world", bbox: [340, 100, 560, 150] },
  { text: "again", bbox: [100, 200, 320, 250] },
];

/** Expects each word where its box says, scaled by `scale` points per pixel (±2 pt: glyph heights are Helvetica's, not the box's). */
function expectAt(seen: Seen["pages"][number], words: SearchablePage["words"], scale: number): void {
  expect(seen.words.map((w) => w.text)).toEqual(words.map((w) => w.text));
  words.forEach((w, i) => {
    const got = seen.words[i]!.box;
    const want = w.bbox.map((v) => v * scale);
    // Along the line the box is exact; across it poppler reports the font's own ascent and descent.
    expect(Math.abs(got[0]! - want[0]!), `${w.text}: ${String(got)} vs ${String(want)}`).toBeLessThan(2);
    expect(Math.abs(got[2]! - want[2]!), `${w.text}: ${String(got)} vs ${String(want)}`).toBeLessThan(4);
    const mid = (got[1]! + got[3]!) / 2;
    expect(mid, `${w.text}: ${String(got)} vs ${String(want)}`).toBeGreaterThan(want[1]!);
    expect(mid, `${w.text}: ${String(got)} vs ${String(want)}`).toBeLessThan(want[3]!);
  });
}

describe("image pages", () => {
  it("a PNG stating 100 DPI is a page of its size at 100 DPI, each word over its box", async () => {
    const pdf = await buildSearchablePdf({ kind: "image", document: Buffer.alloc(0), pages: [{ pageNumber: 1, width: 800, height: 400, image: await blank(800, 400, 100), words: twoLines }] });
    const seen = await read(pdf);
    expect(seen.pages.map((p) => [p.width, p.height])).toEqual([[576, 288]]);
    expectAt(seen.pages[0]!, twoLines, 72 / 100);
  });

  it("an image without a resolution is taken at 200 DPI; a TIFF is embedded as PNG", async () => {
    const tiff = await blank(800, 400, undefined, "tiff");
    const pdf = await buildSearchablePdf({ kind: "image", document: tiff, pages: [{ pageNumber: 1, width: 800, height: 400, image: tiff, words: twoLines }] });
    const seen = await read(pdf);
    // sharp writes TIFFs at 72 DPI unless told otherwise; a PNG without pHYs has none.
    const density = (await sharp(tiff).metadata()).density ?? 200;
    expect(seen.pages.map((p) => [p.width, p.height])).toEqual([[(800 * 72) / density, (400 * 72) / density]]);
    const png = await sharp({ create: { width: 800, height: 400, channels: 3, background: "#fff" } }).png().toBuffer();
    const fromPng = await read(await buildSearchablePdf({ kind: "image", document: png, pages: [{ pageNumber: 1, width: 800, height: 400, image: png, words: twoLines }] }));
    expect(fromPng.pages.map((p) => [p.width, p.height])).toEqual([[288, 144]]);
  });

  it("rendered pages (an office document's) use the resolution given", async () => {
    const png = await blank(800, 400, 72);
    const seen = await read(await buildSearchablePdf({ kind: "office", document: Buffer.alloc(0), pages: [{ pageNumber: 2, width: 800, height: 400, image: png, dpi: 200, words: twoLines }] }));
    expect(seen.pages.map((p) => [p.width, p.height])).toEqual([[288, 144]]);
    expectAt(seen.pages[0]!, twoLines, 72 / 200);
  });

  it("a page found turned 90° clockwise gets its words running down the image", async () => {
    // On the image, "Hello world" runs top to bottom in a column at the right.
    const words: SearchablePage["words"] = [
      { text: "Hello", bbox: [600, 100, 650, 300] },
      { text: "world", bbox: [600, 340, 650, 560] },
    ];
    const png = await blank(800, 800, 72);
    const seen = await read(await buildSearchablePdf({ kind: "image", document: png, pages: [{ pageNumber: 1, width: 800, height: 800, image: png, rotation: 90, words }] }));
    expect(seen.pages[0]!.words.map((w) => w.text)).toEqual(["Hello", "world"]);
    for (const [i, w] of words.entries()) {
      const got = seen.pages[0]!.words[i]!.box;
      expect(Math.abs(got[1]! - w.bbox[1]), String(got)).toBeLessThan(2);
      expect(Math.abs(got[3]! - w.bbox[3]), String(got)).toBeLessThan(4);
    }
  });
});

describe("a PDF's own pages", () => {
  /** A text-free PDF of `n` A5 pages (420 × 595 pt), each shaped by `shape`. */
  async function pdfOf(n: number, shape: (page: ReturnType<PDFDocument["addPage"]>, i: number) => void = () => {}): Promise<Buffer> {
    const doc = await PDFDocument.create();
    for (let i = 0; i < n; i++) shape(doc.addPage([420, 595]), i);
    return Buffer.from(await doc.save());
  }
  /** The page as pdftoppm renders it at 200 DPI: its CropBox in pixels, sides swapped for a quarter turn. */
  const px = (pt: number) => Math.round((pt * 200) / 72);

  it("keeps the selected pages, in the order given, with their own sizes; words over their boxes", async () => {
    const document = await pdfOf(3, (p, i) => p.setSize(420 + i * 10, 595));
    const pages: SearchablePage[] = [3, 1].map((n) => ({ pageNumber: n, width: px(420 + (n - 1) * 10), height: px(595), words: twoLines }));
    const seen = await read(await buildSearchablePdf({ kind: "pdf", document, pages }));
    expect(seen.pages.map((p) => [p.width, p.height])).toEqual([
      [440, 595],
      [420, 595],
    ]);
    expectAt(seen.pages[0]!, twoLines, 440 / px(440));
  });

  it.each([90, 180, 270])("a page turned %i° behind a CropBox away from the origin: words where the rendered image had them", async (turn) => {
    const document = await pdfOf(1, (p) => {
      p.setMediaBox(0, 0, 600, 800);
      p.setCropBox(50, 30, 420, 595);
      p.setRotation(degrees(turn));
    });
    const quarter = turn % 180 !== 0;
    const [w, h] = quarter ? [595, 420] : [420, 595];
    const seen = await read(await buildSearchablePdf({ kind: "pdf", document, pages: [{ pageNumber: 1, width: px(w), height: px(h), words: twoLines }] }));
    // poppler states the CropBox's size before the turn, and the words' boxes on the page as shown.
    expect([seen.pages[0]!.width, seen.pages[0]!.height]).toEqual([420, 595]);
    expectAt(seen.pages[0]!, twoLines, w / px(w));
  });

  it("a page whose content leaves its transformation changed still gets its words in place", async () => {
    const document = await pdfOf(1, (p) => p.pushOperators(concatTransformationMatrix(3, 0, 0, 3, 40, 40)));
    const seen = await read(await buildSearchablePdf({ kind: "pdf", document, pages: [{ pageNumber: 1, width: px(420), height: px(595), words: twoLines }] }));
    expectAt(seen.pages[0]!, twoLines, 420 / px(420));
  });

  it("a PDF pdf-lib cannot open is rebuilt from its rendered page images at the resolution given", async () => {
    const broken = Buffer.from("%PDF-1.7\nnot really\n");
    expect(await canCopyPdfPages(broken, 1)).toBe(false);
    expect(await canCopyPdfPages(await pdfOf(1), 1)).toBe(true);
    // pdf-lib finding other pages than poppler counted: image pages too.
    expect(await canCopyPdfPages(await pdfOf(2), 3)).toBe(false);
    // A rendered page arrives as grey PGM: kept as PNG.
    const pgm = Buffer.concat([Buffer.from("P5\n800 400\n255\n"), Buffer.alloc(800 * 400, 255)]);
    const kept = await compactPageImage(pgm);
    expect((await sharp(kept).metadata()).format).toBe("png");
    const seen = await read(await buildSearchablePdf({ kind: "pdf", document: broken, pages: [{ pageNumber: 4, width: 800, height: 400, image: kept, dpi: 200, words: twoLines }] }));
    expect(seen.pages.map((p) => [p.width, p.height])).toEqual([[288, 144]]);
    expectAt(seen.pages[0]!, twoLines, 72 / 200);
  });
});

describe("the text layer's characters", () => {
  it("spells out compatibility forms and replaces what WinAnsi cannot encode with ?", () => {
    const latin = new Set([..."acefgilm?é"].map((c) => c.codePointAt(0)!));
    expect(winAnsiText("ﬁle", latin)).toBe("file");
    expect(winAnsiText("café", latin)).toBe("café");
    expect(winAnsiText("Ωmega", latin)).toBe("?mega");
  });

  it("a Greek word reads as question marks, one per letter, the PDF still valid", async () => {
    const png = await blank(800, 400, 200);
    const words = [{ text: "Λόγος", bbox: [100, 100, 300, 150] as const }];
    const seen = await read(await buildSearchablePdf({ kind: "image", document: png, pages: [{ pageNumber: 1, width: 800, height: 400, image: png, words }] }));
    expect(seen.pages[0]!.words.map((w) => w.text)).toEqual(["?????"]);
  });
});
