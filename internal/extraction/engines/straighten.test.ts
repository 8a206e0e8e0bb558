/**
 * Turned and skewed pages (straighten.ts, layout/orientation.ts) against the
 * real tesseract CLI: fixture pages turned and skewed by sharp here read
 * about as well as the upright page, report what was done, and keep their
 * boxes in the page as sent. Upright pages are read as they are.
 */
import { afterAll, describe, expect, it } from "vitest";
import { cer } from "../../../test/cer.ts";
import { TEXT_OPTIONS as TEXT, liveSignal as live, ocrFixture as fixture, ocrTruth as truth, pngPage as page } from "../../../test/support.ts";
import { decodeGrey, encodePgm } from "../layout/image.ts";
import { measureAngles } from "../layout/orientation.ts";
import type { Engine, PageLayout, PageResult } from "../types.ts";
import { acrossTurn, mapLayout, MAX_TRIAL_SIDE, MIN_TRIAL_CHARS, MIN_TRIAL_SIDE, readsUpright, rotateGrey, sidewaysTurn, StraightenedEngine, SURE_UP_VOTE, TRIAL_MARGIN, trialSquare } from "./straighten.ts";
import { TesseractEngine } from "./tesseract.ts";
import { localEngines, shutdownLocalEngines } from "../index.ts";

/** The fixture turned clockwise by `degrees` (any angle; the canvas grows, the corners white), as sharp makes it. */
async function turned(name: string, degrees: number): Promise<Buffer> {
  const sharp = (await import("sharp")).default;
  return sharp(fixture(name)).rotate(degrees, { background: "#ffffff" }).png().toBuffer();
}

const tesseract = new TesseractEngine();
const engine = new StraightenedEngine(tesseract, tesseract);

/** The upright fixture's CER with the straightening engine, read once per fixture for all the tests that compare with it. */
const uprightReads = new Map<string, Promise<number>>();
function uprightCer(name: string, text: string): Promise<number> {
  let r = uprightReads.get(name);
  if (!r) {
    r = engine.extractPage(page(fixture(name)), TEXT, live()).then((u) => cer(u.text, truth(text)));
    uprightReads.set(name, r);
  }
  return r;
}

/** Two readings a test on a loaded 2-core machine: more than the default 30 s. */
const READS = { timeout: 120_000 };

/**
 * How much worse than upright a straightened page may read. Measured (tesseract
 * 5.3.0): CER 0.000 upright and straightened in every case below; the margins
 * leave room for other tesseract builds and for resampling a skewed page.
 */
const TURNED_MARGIN = 0.01;
const SKEWED_MARGIN = 0.03;

describe("pages turned by a quarter turn or more", READS, () => {
  it.each([90, 180, 270] as const)("reads english.png turned %i° as well as upright and reports that rotation", async (degrees) => {
    const base = await uprightCer("english.png", "english.txt");
    const r = await engine.extractPage(page(await turned("english.png", degrees)), TEXT, live());
    const rate = cer(r.text, truth("english.txt"));
    expect(rate, `CER ${rate.toFixed(4)} against ${base.toFixed(4)} upright:\n${r.text}`).toBeLessThanOrEqual(base + TURNED_MARGIN);
    expect({ rotation: r.rotation, skew: r.skewDegrees }).toEqual({ rotation: degrees, skew: 0 });
  });

  // Turned 90° clockwise, this clean page is read by tesseract's own layout analysis (it finds the vertical lines);
  // upside down and turned 270° it is lost: what the tests turn is really turned.
  it.each([180, 270] as const)("is lost to the engine alone turned %i°", async (degrees) => {
    const alone = await tesseract.extractPage(page(await turned("english.png", degrees)), TEXT, live());
    expect(cer(alone.text, truth("english.txt")), alone.text).toBeGreaterThan(0.5);
  });

  it("reads a PDF page (binary PGM, as the edge renders PDFs for local engines) turned 180° upright", async () => {
    const grey = await rotateGrey(await decodeGrey(fixture("english.png")), 180);
    const r = await engine.extractPage({ pageNumber: 3, image: encodePgm(grey), mimeType: "image/x-portable-graymap" }, TEXT, live());
    expect(r.rotation).toBe(180);
    expect(cer(r.text, truth("english.txt")), r.text).toBeLessThan(0.02);
  });

  it("keeps the layout's boxes in the page as sent: a word's box on the page turned 90° is its upright box turned", async () => {
    const words = { ...TEXT, includeLayout: "words" as const };
    const upright = await engine.extractPage(page(fixture("columns.png")), words, live());
    const r = await engine.extractPage(page(await turned("columns.png", 90)), words, live());
    const box = (res: PageResult, word: string) => res.layout!.blocks.flatMap((b) => b.words ?? []).find((w) => w.text === word)?.bbox;
    const before = box(upright, "Harbour")!;
    const after = box(r, "Harbour")!;
    expect(before, JSON.stringify(upright.layout!.blocks.map((b) => b.text))).toBeDefined();
    const H = upright.layout!.height;
    // Turned 90° clockwise: (x, y) of the upright page lands at (H − y, x).
    const expected = [H - before[3], before[0], H - before[1], before[2]];
    for (let i = 0; i < 4; i++) expect(Math.abs(after[i]! - expected[i]!), `${JSON.stringify(after)} against ${JSON.stringify(expected)}`).toBeLessThanOrEqual(2);
    expect({ width: r.layout!.width, height: r.layout!.height, rotation: r.layout!.rotation }).toEqual({ width: H, height: upright.layout!.width, rotation: 90 });
  });

  it("keeps output_format json's block boxes in the page as sent too, without the layout asked for: the title's box on the page turned 90° is its upright box turned", async () => {
    const json = { ...TEXT, outputFormat: "json" as const };
    const upright = await engine.extractPage(page(fixture("columns.png")), json, live());
    const r = await engine.extractPage(page(await turned("columns.png", 90)), json, live());
    const before = upright.blocks?.[0]?.bbox;
    const after = r.blocks?.[0]?.bbox;
    expect({ upright: upright.blocks?.[0]?.type, turned: r.blocks?.[0]?.type, layout: r.layout }).toEqual({ upright: "heading", turned: "heading", layout: undefined });
    const H = (await decodeGrey(fixture("columns.png"))).height;
    const expected = [H - before![3], before![0], H - before![1], before![2]];
    for (let i = 0; i < 4; i++) expect(Math.abs(after![i]! - expected[i]!), `${JSON.stringify(after)} against ${JSON.stringify(expected)}`).toBeLessThanOrEqual(3);
  });
});

describe("every local model, as the extraction service runs them (localEngines)", { timeout: 240_000 }, () => {
  const engines = localEngines();
  afterAll(() => shutdownLocalEngines());

  it.each([...engines.keys()])("%s reads english.png turned 270° as well as upright and reports the rotation", async (model) => {
    const e = engines.get(model)!;
    const upright = await e.extractPage(page(fixture("english.png")), TEXT, live());
    const r = await e.extractPage(page(await turned("english.png", 270)), TEXT, live());
    const base = cer(upright.text, truth("english.txt"));
    const rate = cer(r.text, truth("english.txt"));
    expect(rate, `CER ${rate.toFixed(4)} against ${base.toFixed(4)} upright:\n${r.text}`).toBeLessThanOrEqual(base + TURNED_MARGIN);
    expect({ rotation: r.rotation, upright: upright.rotation }).toEqual({ rotation: 270, upright: 0 });
  });

  // The reading as sent is dropped as soon as the skew is found; an unhandled rejection of it would fail this file.
  it.each([...engines.keys()])("%s reads english.png skewed 4° as well as upright and reports the skew", async (model) => {
    const e = engines.get(model)!;
    const upright = await e.extractPage(page(fixture("english.png")), TEXT, live());
    const r = await e.extractPage(page(await turned("english.png", 4)), TEXT, live());
    const rate = cer(r.text, truth("english.txt"));
    expect(rate, r.text).toBeLessThanOrEqual(cer(upright.text, truth("english.txt")) + TURNED_MARGIN);
    expect(r.rotation).toBe(0);
    expect(Math.abs(r.skewDegrees! - 4)).toBeLessThanOrEqual(0.5);
  });
});

describe("skewed pages", READS, () => {
  it.each([
    ["columns.png", "columns.txt", 6],
    ["columns.png", "columns.txt", -6],
    ["english.png", "english.txt", 12],
  ] as const)("reads %s (truth %s) skewed %i° about as well as upright and reports the skew", async (name, text, degrees) => {
    const base = await uprightCer(name, text);
    const r = await engine.extractPage(page(await turned(name, degrees)), TEXT, live());
    const rate = cer(r.text, truth(text));
    expect(rate, `CER ${rate.toFixed(4)} against ${base.toFixed(4)} upright:\n${r.text}`).toBeLessThanOrEqual(base + SKEWED_MARGIN);
    expect(r.rotation).toBe(0);
    expect(Math.abs(r.skewDegrees! - degrees), `skew found ${r.skewDegrees}`).toBeLessThanOrEqual(0.5);
  });
});

describe("upright pages", READS, () => {
  it("are read as sent: rotation 0, no skew, the engine's own reading", async () => {
    const r = await engine.extractPage(page(fixture("columns.png")), { ...TEXT, includeLayout: "blocks" }, live());
    const alone = await tesseract.extractPage(page(fixture("columns.png")), { ...TEXT, includeLayout: "blocks" }, live());
    expect({ rotation: r.rotation, skew: r.skewDegrees, layoutRotation: r.layout?.rotation, layoutSkew: r.layout?.skew_degrees }).toEqual({ rotation: 0, skew: 0, layoutRotation: 0, layoutSkew: 0 });
    expect(r.text).toBe(alone.text);
    expect(r.layout!.blocks).toEqual(alone.layout!.blocks);
  });

  it("an image the check cannot decode (BMP) still goes to the engine as it is", async () => {
    const seen: string[] = [];
    const inner: Engine = {
      id: "test/inner",
      extractPage: async (p) => {
        seen.push(p.mimeType);
        return { text: "read", tables: [], usage: { promptTokens: 0, completionTokens: 0, reportedCostCents: null } };
      },
    };
    const bmp = Buffer.concat([Buffer.from("BM"), Buffer.alloc(64)]);
    const r = await new StraightenedEngine(inner, tesseract).extractPage({ pageNumber: 1, image: bmp, mimeType: "image/bmp" }, TEXT, live());
    expect({ text: r.text, rotation: r.rotation, skew: r.skewDegrees, seen }).toEqual({ text: "read", rotation: 0, skew: 0, seen: ["image/bmp"] });
  });
});

describe("pages whose profiles mislead (the trial readings decide)", READS, () => {
  // table.png, a dense table: its columns make sharper peaks than its rows, so the profiles call it
  // turned in every orientation (checked below); the trial readings find its real turn.
  it.each([0, 90, 180, 270] as const)("reads table.png turned %i° about as well as upright and reports that rotation", async (degrees) => {
    const r = await engine.extractPage(page(await turned("table.png", degrees)), TEXT, live());
    const base = await uprightCer("table.png", "table.txt");
    const rate = cer(r.text, truth("table.txt"));
    expect(rate, `CER ${rate.toFixed(4)} against ${base.toFixed(4)} upright:\n${r.text}`).toBeLessThanOrEqual(base + TURNED_MARGIN);
    expect({ rotation: r.rotation, skew: r.skewDegrees }).toEqual({ rotation: degrees, skew: 0 });
  });

  it("where the profiles alone call table.png upright, sideways and upside down in the wrong turns", async () => {
    const turns = [];
    for (const degrees of [0, 90, 180, 270]) turns.push(measureAngles(await decodeGrey(await turned("table.png", degrees)))!.turn);
    expect(turns.filter((t, i) => t !== [0, 90, 180, 270][i]).length, JSON.stringify(turns)).toBeGreaterThanOrEqual(3);
  });

  it("never reads a trial of a page the profiles find upright and sure of it", async () => {
    let asked = 0;
    const counting = { trial: (p: Parameters<TesseractEngine["trial"]>[0], l: string | undefined, s: AbortSignal) => (asked++, tesseract.trial(p, l, s)) };
    const e = new StraightenedEngine(tesseract, counting);
    expect((await e.plan(page(fixture("columns.png")), live())).how).toEqual({ rotation: 0, skewDegrees: 0 });
    expect(asked).toBe(0);
    expect((await e.plan(page(await turned("columns.png", 180)), live())).how).toEqual({ rotation: 180, skewDegrees: 0 });
    expect(asked).toBe(2);
  });

  it("lets tesseract's confident reading of the page as sent settle a turn the profiles cannot tell, and reads the trials when it is not confident", READS, async () => {
    // Capitals only: no ascenders or descenders, so the profiles find lines across the page but cannot say which way is up.
    const words = "INVOICE TOTAL AMOUNT DUE PAYMENT RECEIVED BALANCE CARRIED FORWARD ACCOUNT NUMBER REFERENCE ORDER DATE SHIPPED VIA CUSTOMER".split(" ");
    const lines = Array.from({ length: 14 }, (_, i) => [...words.slice(i % 5), ...words.slice(0, i % 5)].join(" "));
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="1400"><rect width="100%" height="100%" fill="white"/>${lines
      .map((l, i) => `<text x="60" y="${100 + i * 85}" font-family="DejaVu Sans" font-size="34">${l}</text>`)
      .join("")}</svg>`;
    const sharp = (await import("sharp")).default;
    const upright = await sharp(Buffer.from(svg)).png().toBuffer();
    const upsideDown = await sharp(upright).rotate(180).png().toBuffer();
    for (const img of [upright, upsideDown]) {
      const m = measureAngles(await decodeGrey(img))!;
      expect({ turn: m.turn, unsure: m.upVote < SURE_UP_VOTE }).toEqual({ turn: 0, unsure: true });
    }
    let asked = 0;
    const counting = { trial: (p: Parameters<TesseractEngine["trial"]>[0], l: string | undefined, s: AbortSignal) => (asked++, tesseract.trial(p, l, s)) };
    const e = new StraightenedEngine(tesseract, counting, () => true);
    const read = (img: Buffer) => tesseract.extractPage(page(img), TEXT, live());
    const asSent = await read(upright);
    expect(readsUpright(asSent), `confidence ${asSent.confidence}`).toBe(true);
    expect((await e.plan(page(upright), live(), undefined, Promise.resolve(asSent))).how).toEqual({ rotation: 0, skewDegrees: 0 });
    expect(asked).toBe(0);
    const flipped = await read(upsideDown);
    expect(readsUpright(flipped), `confidence ${flipped.confidence}`).toBe(false);
    expect((await e.plan(page(upsideDown), live(), undefined, Promise.resolve(flipped))).how).toEqual({ rotation: 180, skewDegrees: 0 });
    expect(asked).toBe(2);
    // Without the reading (engines whose confidence says nothing of the turn), the upright page is tried too.
    expect((await new StraightenedEngine(tesseract, counting).plan(page(upright), live())).how).toEqual({ rotation: 0, skewDegrees: 0 });
    expect(asked).toBe(4);
  });

  it("a trial reading of columns.png's square: upright it reads across with confidence and finds no skew, skewed 4° finds 4°, turned 90° it reads down", async () => {
    const square = async (degrees: number) => {
      const grey = trialSquare(await decodeGrey(await turned("columns.png", degrees)));
      return tesseract.trial({ pageNumber: 1, image: encodePgm(grey), mimeType: "image/x-portable-graymap" }, undefined, live());
    };
    const [upright, skewed, sideways, upsideDown] = await Promise.all([square(0), square(4), square(90), square(180)]);
    expect(upright.across, JSON.stringify(upright)).toBeGreaterThan(80);
    expect(upright.skewDegrees).toBe(0);
    expect(Math.abs(skewed.skewDegrees! - 4), JSON.stringify(skewed)).toBeLessThanOrEqual(0.5);
    expect(sideways.down, JSON.stringify(sideways)).toBeGreaterThan(sideways.across + TRIAL_MARGIN);
    expect(upsideDown.across, JSON.stringify(upsideDown)).toBeLessThan(upright.across - TRIAL_MARGIN);
    expect(acrossTurn(upsideDown, upright)).toEqual({ rotation: 180, skewDegrees: upright.skewDegrees });
  });
});

describe("acrossTurn and sidewaysTurn (what the trial readings decide)", () => {
  const reading = (across: number, down: number, chars = 500, skewDegrees: number | null = 0) => ({ across, down, chars, skewDegrees });
  it("upright when the square reads across as sent, upside down when it reads across turned 180°, with that reading's skew", () => {
    expect(acrossTurn(reading(85, 3, 500, 2.5), reading(22, 4, 500, 2.4))).toEqual({ rotation: 0, skewDegrees: 2.5 });
    expect(acrossTurn(reading(20, 4, 500, 2), reading(88, 3, 500, -1.5))).toEqual({ rotation: 180, skewDegrees: -1.5 });
  });

  it.each([
    ["its lines run down as sent", reading(4, 88), reading(4, 21)],
    ["its lines run down turned 180°", reading(4, 23), reading(3, 86)],
    ["neither reading found text", reading(0, 0, 0, null), reading(0, 0, 5, null)],
  ] as const)("asks for the sideways readings when %s", (_why, asSent, flipped) => {
    expect(acrossTurn(asSent, flipped)).toBe("sideways");
  });

  it.each([
    ["the other turn wins by less than the margin", reading(60, 3), reading(60 + TRIAL_MARGIN - 1, 3), { rotation: 0, skewDegrees: 0 }],
    ["the winner read too few characters", reading(10, 3, 500), reading(90, 3, MIN_TRIAL_CHARS - 1), { rotation: 0, skewDegrees: 0 }],
  ] as const)("leaves the page as sent when %s", (_why, asSent, flipped, expected) => {
    expect(acrossTurn(asSent, flipped)).toEqual(expected);
  });

  it("turns a sideways page by the quarter that reads across, with its skew", () => {
    const asSent = reading(5, 80);
    expect(sidewaysTurn(asSent, reading(88, 2, 400, 1.5), reading(21, 3))).toEqual({ rotation: 270, skewDegrees: 1.5 });
    expect(sidewaysTurn(asSent, reading(20, 3), reading(86, 2, 400, -2))).toEqual({ rotation: 90, skewDegrees: -2 });
  });

  it.each([
    ["the two quarters read alike", reading(5, 80), reading(70, 2), reading(70 - TRIAL_MARGIN + 1, 2)],
    ["the quarter reads no better than the page as sent", reading(70, 30), reading(80, 2), reading(10, 2)],
    ["the quarter read too little", reading(5, 80), reading(90, 2, MIN_TRIAL_CHARS - 1), reading(10, 2)],
  ] as const)("leaves a page as sent when %s", (_why, asSent, clockwise, anticlockwise) => {
    expect(sidewaysTurn(asSent, clockwise, anticlockwise).rotation).toBe(0);
  });
});

describe("trialSquare", () => {
  const page = (ink: (x: number, y: number) => boolean, width = 1400, height = 2000) => {
    const pixels = new Uint8Array(width * height).fill(255);
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) if (ink(x, y)) pixels[y * width + x] = 0;
    return { width, height, pixels };
  };

  it("is centred on the page's ink: text at the top of a page is read where it is", () => {
    const img = page((x, y) => y >= 200 && y < 400 && x >= 100 && x < 1300 && y % 40 === 0);
    const sq = trialSquare(img);
    expect({ width: sq.width, height: sq.height }).toEqual({ width: 700, height: 700 });
    // The ink's rows lie 200–400: a square centred on row ~300 is clamped to the page's top.
    let inkRows = 0;
    for (let y = 0; y < 700; y++) if (sq.pixels.subarray(y * 700, y * 700 + 700).includes(0)) inkRows++;
    expect(inkRows).toBe(5);
  });

  it("is the page's middle when it has no ink", () => {
    const sq = trialSquare(page(() => false));
    expect({ width: sq.width, height: sq.height, white: sq.pixels.every((v) => v === 255) }).toEqual({ width: 700, height: 700, white: true });
  });

  it("is half the shorter side, from MIN_TRIAL_SIDE (at most 0.7 of a small image's side, as before) to MAX_TRIAL_SIDE", () => {
    const side = (width: number, height: number) => trialSquare(page(() => false, width, height)).width;
    expect([side(1000, 1400), side(400, 800), side(3000, 4000)]).toEqual([MIN_TRIAL_SIDE, 280, MAX_TRIAL_SIDE]);
  });
});

describe("measureAngles (the cheap check)", () => {
  it.each([0, 90, 180, 270] as const)("finds english.png turned %i° turned by that much", async (degrees) => {
    const m = measureAngles(await decodeGrey(await turned("english.png", degrees)))!;
    expect({ turn: m.turn, skew: m.skewDegrees }).toEqual({ turn: degrees, skew: 0 });
  });

  it.each([4, -4, 15, -15])("finds the skew of columns.png turned %i° within 0.3°", async (degrees) => {
    const m = measureAngles(await decodeGrey(await turned("columns.png", degrees)))!;
    expect(m.turn).toBe(0);
    expect(Math.abs(m.skewDegrees - degrees), `found ${m.skewDegrees}`).toBeLessThanOrEqual(0.3);
  });

  it("is not misled by a solid dark band (a slide's title band), whatever its edge's slope", async () => {
    for (const slope of [0, 0.08]) {
      const img = await decodeGrey(await turned("english.png", 0));
      // A band over the top third, its lower edge falling by `slope` across the page: more ink than all the text.
      for (let x = 0; x < img.width; x++) for (let y = 0; y < img.height / 3 + slope * x; y++) img.pixels[y * img.width + x] = 40;
      const m = measureAngles(img)!;
      expect({ slope, turn: m.turn % 180, skew: Math.abs(m.skewDegrees) <= 0.3 }).toEqual({ slope, turn: 0, skew: true });
    }
  });

  it("finds nothing on a blank page", () => {
    expect(measureAngles({ width: 100, height: 100, pixels: new Uint8Array(100 * 100).fill(255) })).toBeNull();
  });
});

describe("mapLayout", () => {
  const layout: PageLayout = { width: 300, height: 200, blocks: [{ type: "text", bbox: [10, 20, 110, 40], text: "a", words: [{ text: "a", bbox: [10, 20, 30, 40], confidence: 0.9 }] }] };
  it.each([
    [90, [160, 10, 180, 110], 200, 300],
    [180, [190, 160, 290, 180], 300, 200],
    [270, [20, 190, 40, 290], 200, 300],
  ] as const)("maps boxes read on the page turned back from %i° into the page as sent", (rotation, bbox, width, height) => {
    const m = mapLayout(layout, { rotation, skewDegrees: 0 }, { width, height });
    expect(m.blocks[0]!.bbox).toEqual(bbox);
    expect({ width: m.width, height: m.height }).toEqual({ width, height });
    expect(m.blocks[0]!.words![0]!.bbox[0]).toBe(rotation === 180 ? 270 : rotation === 90 ? 160 : 20);
  });
});
