/**
 * The image decoder's child process (index.ts): what it answers against sharp
 * run here on the same bytes, what it refuses, what it is started with, and
 * how it survives its own death. The real child and real sharp throughout;
 * the jail's part needs bubblewrap (skipped, saying so, where it is missing).
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import sharp from "sharp";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { bwrapInstalled, withJfif } from "../../../test/support.ts";
import { useParserJail } from "../jail/index.ts";
import { decodePixels, decoderPid, decodeToPng, fromPixels, imageMetadata, ImageDecodeError, stopDecoder } from "./index.ts";

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/ocr/${name}`, import.meta.url));

/** A colour JPEG of `width` × `height` with a gradient (so that it is not all one value), stating 300 DPI (JFIF and EXIF). */
async function jpeg(width: number, height: number): Promise<Buffer> {
  const px = Buffer.alloc(width * height * 3);
  for (let i = 0; i < px.length; i++) px[i] = (i * 7) % 251;
  return withJfif(await sharp(px, { raw: { width, height, channels: 3 } }).withMetadata({ density: 300 }).jpeg({ quality: 80 }).toBuffer(), 1, 300);
}

/** A PNG with its chunks of `type` left out (chunks: u32 length, type, data, CRC after the 8-byte signature). */
function withoutChunk(png: Buffer, type: string): Buffer {
  const parts = [png.subarray(0, 8)];
  for (let at = 8; at < png.length; ) {
    const end = at + 12 + png.readUInt32BE(at);
    if (png.toString("latin1", at + 4, at + 8) !== type) parts.push(png.subarray(at, end));
    at = end;
  }
  return Buffer.concat(parts);
}

/** The pids of `root` and every process under it. */
function tree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone between the listing and the read
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parent) if (ppid === out[i]) out.push(pid);
  return out;
}

/** The node process that runs the child program (under the jail, below setsid, bwrap and prlimit). */
function decoderNode(): number {
  const root = decoderPid();
  if (root === undefined) throw new Error("no decoder child runs");
  const node = tree(root).find((pid) => {
    try {
      // Under the jail bwrap's command line names the program too: the process wanted is node itself.
      return readlinkSync(`/proc/${pid}/exe`) === readlinkSync(`/proc/self/exe`) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("decoder/child.");
    } catch {
      return false;
    }
  });
  if (node === undefined) throw new Error(`no process under ${root} runs the decoder's program`);
  return node;
}

async function waitFor(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

afterEach(() => useParserJail("none"));
afterAll(() => stopDecoder());

describe("the image decoder's child process", () => {
  it("decodes grey, as stored and as RGB on white the same pixels sharp decodes here", async () => {
    const png = fixture("english.png");
    const grey = await decodePixels(png, { grey: true });
    const local = await sharp(png, { pages: 1 }).greyscale().raw().toBuffer({ resolveWithObject: true });
    expect([grey.width, grey.height, grey.channels]).toEqual([local.info.width, local.info.height, local.info.channels]);
    expect(grey.data.equals(local.data)).toBe(true);

    const img = await jpeg(120, 80);
    const rgb = await decodePixels(img, { rgbOnWhite: true });
    expect([rgb.width, rgb.height, rgb.channels]).toEqual([120, 80, 3]);
    const asStored = await decodePixels(img);
    expect(asStored.density).toBe(300);
    expect(await imageMetadata(img)).toEqual({ width: 120, height: 80, density: 300 });
  });

  it("states the resolution as tesseract's own reader takes it, in every mode, and none where the image states none", async () => {
    // An RGBA PNG stating 96 DPI (pHYs, 3,780 pixels a metre), as the corpus's scanned tables are: the resolution
    // reaches the resident tesseract whether the pixels come as stored, grey or flattened on white.
    const px = Buffer.alloc(60 * 40 * 4, 200);
    const png = await sharp(px, { raw: { width: 60, height: 40, channels: 4 } }).withMetadata({ density: 96 }).png().toBuffer();
    for (const mode of [{}, { grey: true }, { rgbOnWhite: true }]) expect((await decodePixels(png, mode)).density, JSON.stringify(mode)).toBe(96);
    // The same PNG without its pHYs chunk: sharp still names a density (72, or its EXIF's), leptonica (the CLI) none.
    const unstated = withoutChunk(png, "pHYs");
    expect((await sharp(unstated).metadata()).density).toBeGreaterThan(0);
    expect((await decodePixels(unstated)).density).toBeNull();
    // JPEGs: the JFIF density in inches or centimetres; none when JFIF states an aspect ratio only, or when only
    // EXIF states one (sharp says 72, or EXIF's; leptonica, nothing).
    const plain = await sharp(Buffer.alloc(120 * 80 * 3, 90), { raw: { width: 120, height: 80, channels: 3 } }).jpeg().toBuffer();
    expect((await decodePixels(withJfif(plain, 1, 300), { rgbOnWhite: true })).density).toBe(300);
    expect((await decodePixels(withJfif(plain, 2, 118))).density).toBe(300);
    expect((await decodePixels(withJfif(plain, 0, 1))).density).toBeNull();
    // Fill bytes before the JFIF marker (JPEG allows any number of FF before a marker).
    const jfif = withJfif(plain, 1, 150);
    expect((await decodePixels(Buffer.concat([jfif.subarray(0, 2), Buffer.from([0xff, 0xff]), jfif.subarray(2)]))).density).toBe(150);
    const exifOnly = await sharp(plain).withMetadata({ density: 300 }).jpeg().toBuffer();
    expect((await sharp(exifOnly).metadata()).density).toBe(300);
    expect((await decodePixels(exifOnly)).density).toBeNull();
  });

  it("writes PNGs turned and enlarged, and refuses an enlargement past its bound", async () => {
    const img = await jpeg(120, 80);
    const turned = await decodeToPng(img, { rotate: 90, compressionLevel: 1 });
    expect([turned.width, turned.height]).toEqual([80, 120]);
    expect((await sharp(turned.png).metadata()).format).toBe("png");
    const big = await decodeToPng(img, { scale: 2, maxOutputPixels: 240 * 160 });
    expect([big.width, big.height]).toEqual([240, 160]);
    await expect(decodeToPng(img, { scale: 2, maxOutputPixels: 240 * 160 - 1 })).rejects.toThrow(/larger than 38399 pixels/);
  });

  it("refuses what is not an image, an image over the pixel limit and a truncated one (strict), naming sharp's reason", async () => {
    await expect(decodePixels(Buffer.from("not an image at all"))).rejects.toThrow(ImageDecodeError);
    await expect(decodePixels(Buffer.from("not an image at all"))).rejects.toThrow(/unsupported image format/);
    const img = await jpeg(120, 80);
    await expect(decodePixels(img, { maxPixels: 120 * 80 - 1 })).rejects.toThrow(/pixel limit/);
    await expect(decodePixels(img.subarray(0, img.length >> 1), { strict: true })).rejects.toThrow(ImageDecodeError);
    // The child lives on after its refusals.
    expect((await decodePixels(img)).width).toBe(120);
  });

  it("serves decodes concurrently, each answer to its own caller", async () => {
    const sizes = [[30, 20], [64, 48], [200, 10], [9, 300]] as const;
    const answers = await Promise.all(sizes.map(async ([w, h]) => decodePixels(await jpeg(w, h), { grey: true })));
    expect(answers.map((a) => [a.width, a.height])).toEqual(sizes.map(([w, h]) => [w, h]));
  });

  it("starts with the allow-listed environment: none of this process's secrets", async () => {
    await stopDecoder();
    const canary = `folio-decoder-canary-${process.pid}`;
    process.env.FOLIO_UPSTREAM_API_KEY = canary;
    try {
      await decodePixels(await jpeg(10, 10));
    } finally {
      delete process.env.FOLIO_UPSTREAM_API_KEY;
    }
    const environ = readFileSync(`/proc/${decoderNode()}/environ`, "utf8").split("\0").filter(Boolean);
    expect(environ.filter((e) => e.includes(canary) || (process.env.DATABASE_URL && e.includes(process.env.DATABASE_URL)))).toEqual([]);
    expect(environ.map((e) => e.slice(0, e.indexOf("=")))).toContain("PATH");
  });

  it("sends the decodes of a child that dies to a new one; blames the image only when its second child dies too", async () => {
    // A 40-megapixel PNG: long enough to decode that a kill lands while the child works on it.
    const big = await sharp(Buffer.alloc(6400 * 6400, 200), { raw: { width: 6400, height: 6400, channels: 1 } }).png({ compressionLevel: 1 }).toBuffer();
    await decodePixels(await jpeg(10, 10));
    const first = decoderPid()!;
    const once = decodePixels(big, { grey: true });
    process.kill(first, "SIGKILL");
    const survived = await once;
    expect([survived.width, survived.height]).toEqual([6400, 6400]);
    expect(decoderPid()).not.toBe(first);

    const twice = decodePixels(big, { grey: true });
    const second = decoderPid()!;
    process.kill(second, "SIGKILL");
    await waitFor("a third child", () => decoderPid() !== undefined && decoderPid() !== second);
    process.kill(decoderPid()!, "SIGKILL");
    await expect(twice).rejects.toThrow(/decoder stopped while decoding this image/);
    // And the next decode has a child again.
    expect((await decodePixels(await jpeg(10, 10))).width).toBe(10);
  }, 60_000);

  it("settles an aborted decode at once with the signal's reason", async () => {
    const ac = new AbortController();
    const pending = decodePixels(await jpeg(2000, 2000), { signal: ac.signal });
    ac.abort(new Error("the caller gave up"));
    await expect(pending).rejects.toThrow("the caller gave up");
  });

  it("fromPixels runs sharp here on raw pixels only", async () => {
    // Black left column, white right: turned clockwise, black on top.
    const out = await fromPixels(new Uint8Array([0, 255, 0, 255]), { width: 2, height: 2, channels: 1 }).rotate(90).greyscale().raw().toBuffer();
    expect([...out]).toEqual([0, 0, 255, 255]);
  });
});

describe.skipIf(!bwrapInstalled)("the image decoder in the parser jail (bubblewrap)", () => {
  it("runs in a network namespace of its own and decodes as outside it", async () => {
    useParserJail("bwrap");
    const img = await jpeg(64, 48);
    const jailedGrey = await decodePixels(img, { grey: true });
    const node = decoderNode();
    expect(readlinkSync(`/proc/${node}/ns/net`)).not.toBe(readlinkSync("/proc/self/ns/net"));
    useParserJail("none");
    const bare = await decodePixels(img, { grey: true });
    // The process's jail changed: a new child, outside the jail.
    expect(readlinkSync(`/proc/${decoderNode()}/ns/net`)).toBe(readlinkSync("/proc/self/ns/net"));
    expect(jailedGrey.data.equals(bare.data)).toBe(true);
  });
});
