/**
 * The sandbox program's PNG encoder and PNM splitter: valid PNGs (checked by
 * decoding them with sharp/libvips, an independent decoder), 200 DPI in the
 * pHYs chunk, grey pages as colour type 0 and coloured ones as colour type
 * 2, pixels that survive the round trip, and pdftoppm's multi-page PPM
 * stream cut into pages whatever the chunk boundaries.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32, deflateSync } from "node:zlib";
import sharp from "sharp";
import { afterAll, describe, expect, it } from "vitest";
import { PnmSplitter, encodePage, pixelsPerMetre, pnmsOfFile, type RawImage } from "./png.ts";
import { pngInfo } from "./testdocs.ts";

const work = mkdtempSync(join(tmpdir(), "folio-png-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A page-like RGB image: white, a grey gradient band, and (when `colour`) one red block. */
function page(width: number, height: number, colour: boolean): RawImage {
  const pixels = Buffer.alloc(width * height * 3, 255);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 3;
      if (y > height / 4 && y < height / 2) pixels.fill((x * 7 + y * 3) & 255, at, at + 3);
      if (colour && y > (3 * height) / 4 && x < width / 3) pixels.set([200, 30, 40], at);
    }
  }
  return { width, height, channels: 3, pixels };
}

/** The chunk types in file order, each chunk's CRC checked. */
function chunks(png: Buffer): string[] {
  const types: string[] = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString("latin1", at + 4, at + 8);
    expect(png.readUInt32BE(at + 8 + length), `CRC of ${type}`).toBe(crc32(png.subarray(at + 4, at + 8 + length)));
    types.push(type);
    at += 12 + length;
  }
  return types;
}

/** The R channel of an RGB image (what a grey page's single channel must equal). */
const red = (image: RawImage) => Buffer.from(image.pixels.filter((_, i) => i % 3 === 0));

describe("encodePage", () => {
  it("200 DPI is 7874 pixels per metre, as libpng writes it", () => {
    expect(pixelsPerMetre(200)).toBe(7874);
  });

  it("writes an all-grey RGB page as an 8-bit greyscale PNG whose pixels decode unchanged, with pHYs = 7874 px/m", async () => {
    const rgb = page(301, 97, false);
    const { png, grey } = await encodePage(rgb, { dpi: 200 });
    expect(grey).toBe(true);
    expect(chunks(png)).toEqual(["IHDR", "pHYs", "IDAT", "IEND"]);
    expect(png[8 + 8 + 9], "colour type").toBe(0);
    expect(pngInfo(png)).toEqual({ width: 301, height: 97, phys: { x: 7874, y: 7874, unit: 1 } });
    const meta = await sharp(png).metadata();
    expect(meta).toMatchObject({ format: "png", width: 301, height: 97, channels: 1, space: "b-w", depth: "uchar" });
    expect(meta.density, "DPI libvips reads from pHYs").toBeCloseTo(200, 0);
    // sharp would turn the output into sRGB; kept grey, the bytes are the decoded pixels.
    const { data, info } = await sharp(png).toColourspace("b-w").raw().toBuffer({ resolveWithObject: true });
    expect(info).toMatchObject({ width: 301, height: 97, channels: 1 });
    expect(Buffer.compare(data, red(rgb))).toBe(0);
  });

  it.each([
    ["in the first row", 0, 5],
    ["in the last pixel", 79, 119],
  ])("keeps a page with one coloured pixel (%s) RGB (colour type 2), pixels unchanged", async (_where, y, x) => {
    const rgb = page(120, 80, false);
    rgb.pixels.set([10, 200, 10], (y * 120 + x) * 3);
    const { png, grey } = await encodePage(rgb, { dpi: 200 });
    expect(grey).toBe(false);
    expect(png[8 + 8 + 9], "colour type").toBe(2);
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect(info).toMatchObject({ width: 120, height: 80, channels: 3 });
    expect(Buffer.compare(data, Buffer.from(rgb.pixels))).toBe(0);
    expect(pngInfo(png).phys).toEqual({ x: 7874, y: 7874, unit: 1 });
  });

  it("writes a PGM page (one channel) as greyscale", async () => {
    const pixels = Buffer.from(Array.from({ length: 64 * 16 }, (_, i) => i & 255));
    const { png, grey } = await encodePage({ width: 64, height: 16, channels: 1, pixels }, { dpi: 200 });
    expect(grey).toBe(true);
    expect(Buffer.compare(await sharp(png).toColourspace("b-w").raw().toBuffer(), pixels)).toBe(0);
  });

  it("writes a coloured page sharp decodes to the same pixels (a real page's size)", async () => {
    const rgb = page(1654, 2339, true);
    const { png, grey } = await encodePage(rgb, { dpi: 200 });
    expect(grey).toBe(false);
    expect(Buffer.compare(await sharp(png).raw().toBuffer(), Buffer.from(rgb.pixels))).toBe(0);
  });

  it("makes PNGs that libmagic identifies as 8-bit greyscale of the right size", async () => {
    const { png } = await encodePage(page(200, 100, false), { dpi: 200 });
    const file = join(work, "grey.png");
    writeFileSync(file, png);
    // `file` (libmagic) parses the IHDR on its own.
    expect(execFileSync("file", ["-b", file], { encoding: "utf8" })).toMatch(/PNG image data, 200 x 100, 8-bit grayscale, non-interlaced/);
  });

  it("refuses pixel buffers smaller than the image", async () => {
    await expect(encodePage({ width: 10, height: 10, channels: 3, pixels: new Uint8Array(299) }, { dpi: 200 })).rejects.toThrow(/bytes of pixels/);
    await expect(encodePage({ width: 0, height: 10, channels: 1, pixels: new Uint8Array(0) }, { dpi: 200 })).rejects.toThrow(/bad image size/);
  });

  /** The IDAT data of a PNG (one IDAT chunk, as encodePage writes). */
  const idat = (png: Buffer) => {
    for (let at = 8; at < png.length; ) {
      const length = png.readUInt32BE(at);
      if (png.toString("latin1", at + 4, at + 8) === "IDAT") return png.subarray(at + 8, at + 8 + length);
      at += 12 + length;
    }
    throw new Error("no IDAT");
  };

  /** Every row prefixed by filter type 0, in one buffer: what one deflate over the whole page compresses. */
  const wholeScanlines = (pixels: Uint8Array, width: number, height: number, channels: number) => {
    const rows = Buffer.alloc((width * channels + 1) * height);
    for (let y = 0; y < height; y++) rows.set(pixels.subarray(y * width * channels, (y + 1) * width * channels), y * (width * channels + 1) + 1);
    return rows;
  };

  it.each([
    ["coloured", true],
    ["grey", false],
  ])("compresses a real-size %s page a band at a time to the bytes of one deflate over all its scanlines", async (_kind, colour) => {
    const rgb = page(1654, 2339, colour);
    const { png, grey } = await encodePage(rgb, { dpi: 200 });
    expect(grey).toBe(!colour);
    const pixels = colour ? rgb.pixels : red(rgb);
    const expected = deflateSync(wholeScanlines(pixels, 1654, 2339, colour ? 3 : 1), { level: 4 });
    expect(Buffer.compare(idat(png), expected)).toBe(0);
  });

  it("encodes a page from pdftoppm's file (read a band at a time) to the same PNG as from memory, and refuses a file that ends inside it", async () => {
    const rgb = page(1654, 900, true);
    const file = join(work, "page.ppm");
    writeFileSync(file, Buffer.concat([Buffer.from("P6\n1654 900\n255\n"), rgb.pixels]));
    const handle = await open(file, "r");
    try {
      const [image, ...more] = await pnmsOfFile(handle, 1 << 24);
      expect(more).toEqual([]);
      expect(Buffer.compare((await encodePage(image!, { dpi: 200 })).png, (await encodePage(rgb, { dpi: 200 })).png)).toBe(0);
      await expect(encodePage({ ...image!, height: 901 }, { dpi: 200 })).rejects.toThrow(/the page's file ends inside row 900 of 901/);
    } finally {
      await handle.close();
    }
  });
});

const ppm = (image: RawImage, header = `P6\n${image.width} ${image.height}\n255\n`) => Buffer.concat([Buffer.from(header, "latin1"), image.pixels]);

/** Three pages as pdftoppm writes them one after another: RGB, RGB with a comment in its header, and a 5×2 grey one. */
function threePages(): { stream: Buffer; check: (images: RawImage[], label?: string) => void } {
  const a = page(33, 21, true);
  const b = page(17, 40, false);
  const stream = Buffer.concat([ppm(a), ppm(b, `P6 # comment\n17 40 255\n`), Buffer.from("P5\n5 2\n255\n"), Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])]);
  const check = (images: RawImage[], label?: string) => {
    expect(images.map((i) => [i.width, i.height, i.channels]), label).toEqual([
      [33, 21, 3],
      [17, 40, 3],
      [5, 2, 1],
    ]);
    expect(Buffer.compare(Buffer.from(images[0]!.pixels), Buffer.from(a.pixels))).toBe(0);
    expect(Buffer.compare(Buffer.from(images[1]!.pixels), Buffer.from(b.pixels))).toBe(0);
    expect([...images[2]!.pixels]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  };
  return { stream, check };
}

describe("PnmSplitter", () => {
  it("cuts a stream of pages into images whatever the chunk sizes", () => {
    const { stream, check } = threePages();
    for (const size of [1, 2, 7, 64, 4096, stream.length]) {
      const splitter = new PnmSplitter(1 << 20);
      const images: RawImage[] = [];
      for (let at = 0; at < stream.length; at += size) images.push(...splitter.push(stream.subarray(at, at + size)));
      check(images, `chunks of ${size}`);
      expect(splitter.atBoundary).toBe(true);
    }
  });

  it("reuses a released pixel buffer for the next page of the same size", () => {
    const splitter = new PnmSplitter(1 << 20);
    const [first] = splitter.push(ppm(page(10, 10, false)));
    splitter.release(first!.pixels);
    const second = page(10, 10, true);
    const [next] = splitter.push(ppm(second));
    expect(next!.pixels).toBe(first!.pixels);
    expect(Buffer.compare(Buffer.from(next!.pixels), Buffer.from(second.pixels))).toBe(0);
  });

  it("reports a stream cut inside a page as not at a boundary", () => {
    const splitter = new PnmSplitter(1 << 20);
    expect(splitter.push(ppm(page(10, 10, false)).subarray(0, 100))).toEqual([]);
    expect(splitter.atBoundary).toBe(false);
  });

  it.each([
    ["not a PNM", Buffer.from("%PDF-1.7\n")],
    ["another maxval", Buffer.from("P6\n2 2\n65535\n")],
    ["a page over the size limit", Buffer.from("P6\n100000 100000\n255\n")],
    ["an endless header", Buffer.from(`P6 ${"#".repeat(400)}`)],
  ])("refuses %s", (_what, bytes) => {
    expect(() => new PnmSplitter(64 * 1024 * 1024).push(bytes)).toThrow();
  });
});

describe("pnmsOfFile", () => {
  /** The images of `bytes` written to a file, and the file's bytes to compare their rows with. */
  async function imagesOf(bytes: Buffer, maxImageBytes = 1 << 20) {
    const file = join(work, "pages.ppm");
    writeFileSync(file, bytes);
    const handle = await open(file, "r");
    try {
      return await pnmsOfFile(handle, maxImageBytes);
    } finally {
      await handle.close();
    }
  }

  it("finds every page of a file pdftoppm wrote, where its rows are in the file", async () => {
    const { stream, check } = threePages();
    const images = await imagesOf(stream);
    check(images.map((i) => ({ width: i.width, height: i.height, channels: i.channels, pixels: stream.subarray(i.offset, i.offset + i.width * i.height * i.channels) })));
    expect(await imagesOf(Buffer.alloc(0))).toEqual([]);
  });

  it.each([
    ["a page cut short", Buffer.concat([Buffer.from("P6\n10 10\n255\n"), Buffer.alloc(299)]), /299 bytes of pixels for a 10×10 page \(300 expected\)/],
    ["a header cut short", Buffer.from("P6\n10 1"), /truncated PNM header/],
    ["not a PNM", Buffer.from("%PDF-1.7\n"), /not a PNM image/],
    ["a page over the size limit", Buffer.from("P6\n100000 100000\n255\n"), /larger than/],
  ])("refuses %s", async (_what, bytes, message) => {
    await expect(imagesOf(bytes, 64 * 1024 * 1024)).rejects.toThrow(message);
  });
});

