/**
 * PNG pages from raw pixels, and the raw pixels from pdftoppm's output.
 *
 * pdftoppm's own PNG writer (libpng, zlib level 6 with adaptive row
 * filters) spent about 95% of a page's time compressing: 10 pages of a
 * DOCX took 253 ms to raw pixels and 4,668 ms to PNG on the host
 * (issue 14). The sandbox program therefore has pdftoppm write raw PPM to
 * a pipe and encodes each page itself with Node's zlib, no row filter
 * (filter type 0: on rendered document pages the "sub", "up" and "paeth"
 * filters made the output 5–20% larger, white margins and line gaps being
 * most of a page) at level 4: the first level with lazy matching, which
 * halves a mostly white page against levels 1–3 (38 against 80 KiB for the
 * one-page fixture, pdftoppm: 39 KiB) and costs 17–29 ms a page on the host
 * against pdftoppm's 450–550 ms (docs/benchmarks/conversion-history.md, "Conversion: fast page
 * images"). A page whose pixels are all grey (R = G = B, the usual case for
 * black text) is written as an 8-bit greyscale PNG (colour type 0), a third
 * of the pixels to compress; any coloured pixel keeps the page RGB (colour
 * type 2).
 *
 * A page is encoded a band of rows (about 1 MiB) at a time, from its
 * pixels in memory (a pipe's pages) or straight from the file pdftoppm
 * wrote (a short document's), through band buffers kept from page to page:
 * no page-sized buffer is made for its scanlines or its file (see
 * {@link BAND_BYTES}). Node's asynchronous zlib runs on libuv's thread
 * pool, so pages encode in parallel with each other and with pdftoppm
 * rendering the next ones.
 *
 * This module is bundled into the sandbox program: Node's built-ins only.
 */
import type { FileHandle } from "node:fs/promises";
import { constants, crc32, createDeflate } from "node:zlib";

/** Pixels per metre at `dpi` (pHYs unit 1), rounded as libpng and pdftoppm do: 200 DPI → 7874. */
export function pixelsPerMetre(dpi: number): number {
  return Math.round(dpi / 0.0254);
}

/** A raw image: rows top to bottom, `channels` bytes per pixel (1 grey, 3 RGB), 8 bits each. */
export interface RawImage {
  width: number;
  height: number;
  channels: 1 | 3;
  pixels: Uint8Array;
}

/**
 * A raw image left where pdftoppm wrote it: its rows, as in {@link RawImage},
 * are the `width × height × channels` bytes of `file` from `offset` on.
 */
export interface FileImage {
  width: number;
  height: number;
  channels: 1 | 3;
  file: FileHandle;
  offset: number;
}

/** What {@link encodePage} reads a page's rows from. */
export type PageImage = RawImage | FileImage;

export interface PngOptions {
  /** Written into the pHYs chunk (pixels per metre). */
  dpi: number;
  /** zlib level, 1–9; default {@link DEFAULT_PNG_LEVEL}. */
  level?: number;
}

/** zlib level of the pages (see the module comment). */
export const DEFAULT_PNG_LEVEL = 4;

/**
 * Bytes of one band: the encoder reads, filters and compresses a page a
 * band of rows at a time, through buffers of this size kept from page to
 * page ({@link takeBand}). A whole page's scanlines at once (an A4 page in
 * RGB: 11.6 MB) were fresh memory on every page, paid in page faults: in
 * a sandbox (each fault a round trip through gVisor's sentry under ptrace)
 * that made scanlines and deflate of a colour A4 page 75–145 ms, against
 * 42–47 ms in bands; reading its file whole 35–45 ms, in bands 1–3 ms
 * (docs/benchmarks/conversion-history.md, "Page images in bands").
 */
const BAND_BYTES = 1 << 20;
/** Band buffers kept for reuse: two for each page encoded at once, a few pages at once. */
const MAX_SPARE_BANDS = 8;
const spareBands: Buffer[] = [];
const NO_BYTES = Buffer.alloc(0);

/** A buffer of at least `bytes`: a kept band when one is large enough, else a new one. */
function takeBand(bytes: number): Buffer {
  return bytes <= BAND_BYTES ? (spareBands.pop() ?? Buffer.allocUnsafe(BAND_BYTES)) : Buffer.allocUnsafe(bytes);
}

function giveBack(band: Buffer): void {
  if (band.length === BAND_BYTES && spareBands.length < MAX_SPARE_BANDS) spareBands.push(band);
}

function checkSize({ width, height }: PageImage): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new RangeError(`bad image size ${width}×${height}`);
}

/**
 * Reads the raw rows `y`…`y + count - 1` of `image`: a view of its pixels,
 * or for a {@link FileImage} the bytes read from its file into `into`.
 */
async function rawRows(image: PageImage, y: number, count: number, into: Buffer): Promise<Uint8Array> {
  const stride = image.width * image.channels;
  if ("pixels" in image) return image.pixels.subarray(y * stride, (y + count) * stride);
  const bytes = count * stride;
  const { bytesRead } = await image.file.read(into, 0, bytes, image.offset + y * stride);
  if (bytesRead !== bytes) throw new RangeError(`the page's file ends inside row ${y + Math.floor(bytesRead / stride)} of ${image.height}`);
  return into.subarray(0, bytes);
}

/** Rows of `stride` bytes in one band of at most {@link BAND_BYTES} (at least one row). */
const bandRows = (stride: number) => Math.max(1, Math.floor(BAND_BYTES / stride));

/** True when every pixel of an RGB image is grey (R = G = B); a one-channel image is. Stops at the first coloured pixel. */
async function allGrey(image: PageImage, raw: Buffer): Promise<boolean> {
  if (image.channels === 1) return true;
  const per = bandRows(image.width * 3);
  for (let y = 0; y < image.height; y += per) {
    const rows = await rawRows(image, y, Math.min(per, image.height - y), raw);
    for (let j = 0; j < rows.length; j += 3) {
      const r = rows[j]!;
      if (r !== rows[j + 1] || r !== rows[j + 2]) return false;
    }
  }
  return true;
}

/**
 * The zlib stream (PNG's IDAT data) of `image`'s scanlines, each row
 * prefixed by its filter type (0), with one channel when `grey` (an RGB
 * image's R), built and compressed a band at a time. The bytes are those
 * of one deflate over all the scanlines: zlib's output does not depend on
 * how its input is cut when nothing is flushed in between.
 */
async function deflateScanlines(image: PageImage, grey: boolean, level: number, raw: Buffer): Promise<Buffer> {
  const { width, height, channels } = image;
  const outChannels = grey ? 1 : channels;
  const line = width * outChannels + 1;
  const per = Math.min(bandRows(width * channels), bandRows(line));
  const band = takeBand(per * line);
  const zlib = createDeflate({ level, strategy: constants.Z_DEFAULT_STRATEGY });
  const parts: Buffer[] = [];
  zlib.on("data", (part: Buffer) => parts.push(part));
  const ended = new Promise<void>((resolve, reject) => {
    zlib.once("end", resolve);
    zlib.once("error", reject);
  });
  try {
    for (let y = 0; y < height; y += per) {
      const count = Math.min(per, height - y);
      const rows = await rawRows(image, y, count, raw);
      const stride = width * channels;
      for (let i = 0, to = 0; i < count; i++) {
        band[to++] = 0;
        if (grey && channels === 3) {
          for (let j = i * stride, rowEnd = j + stride; j < rowEnd; j += 3) band[to++] = rows[j]!;
        } else {
          band.set(rows.subarray(i * stride, (i + 1) * stride), to);
          to += stride;
        }
      }
      // The band is filled again only once zlib has taken all of it.
      await new Promise<void>((resolve, reject) => zlib.write(band.subarray(0, count * line), (err) => (err ? reject(err) : resolve())));
    }
    zlib.end();
    await ended;
  } catch (err) {
    zlib.destroy();
    throw err;
  } finally {
    giveBack(band);
  }
  return Buffer.concat(parts);
}

/**
 * Encodes a page as an 8-bit PNG with a pHYs chunk for `options.dpi`:
 * greyscale (colour type 0) when all its pixels are grey, otherwise as it
 * is (colour type 2 for RGB). Non-interlaced, filter type 0 on every row.
 * Exact: a page becomes grey only when nothing is lost.
 */
export async function encodePage(image: PageImage, options: PngOptions): Promise<{ png: Buffer; grey: boolean }> {
  checkSize(image);
  const { width, height, channels } = image;
  if ("pixels" in image && image.pixels.length < width * height * channels) {
    throw new RangeError(`${image.pixels.length} bytes of pixels for a ${width}×${height}×${channels} image`);
  }
  // Where a file's rows are read into (pixels in memory are read in place).
  const raw = "file" in image ? takeBand(bandRows(width * channels) * width * channels) : NO_BYTES;
  let grey: boolean;
  let compressed: Buffer;
  try {
    grey = await allGrey(image, raw);
    compressed = await deflateScanlines(image, grey, options.level ?? DEFAULT_PNG_LEVEL, raw);
  } finally {
    giveBack(raw);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = grey ? 0 : 2; // colour type: grey or RGB
  ihdr[10] = 0; // compression: deflate
  ihdr[11] = 0; // filter method 0
  ihdr[12] = 0; // no interlace
  const phys = Buffer.alloc(9);
  const ppm = pixelsPerMetre(options.dpi);
  phys.writeUInt32BE(ppm, 0);
  phys.writeUInt32BE(ppm, 4);
  phys[8] = 1; // unit: metre
  const png = Buffer.concat([SIGNATURE, chunk("IHDR", ihdr), chunk("pHYs", phys), chunk("IDAT", compressed), chunk("IEND", new Uint8Array(0))]);
  return { png, grey };
}

/** One PNG chunk: length, type, data, CRC of type + data. */
function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, "latin1");
  out.set(data, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A frame header larger than this is not a PNM header. */
const MAX_HEADER_BYTES = 256;

/**
 * Splits a stream of binary PNM images (pdftoppm writing several pages to
 * stdout: P6 for colour, P5 for `-gray`; maxval 255) into images. Feed it
 * chunks with {@link push}; each complete image is returned once its last
 * byte arrived. The pixel buffer of an image is allocated once its header
 * is read, and refused when it would exceed `maxImageBytes`.
 */
export class PnmSplitter {
  private header = Buffer.alloc(0);
  private current: { width: number; height: number; channels: 1 | 3; pixels: Buffer; filled: number } | undefined;
  /** Pixel buffers given back with {@link release}, reused for pages of the same size. */
  private spare: Buffer[] = [];

  constructor(private readonly maxImageBytes: number) {}

  /**
   * Gives an image's pixel buffer back once it is no longer used, for the
   * next page of the same size: fresh memory is paid for in page faults, and
   * under gVisor's ptrace platform every fault is a round trip through the
   * sandbox kernel.
   */
  release(pixels: Uint8Array): void {
    if (Buffer.isBuffer(pixels) && this.spare.length < 4) this.spare.push(pixels);
  }

  /** The images completed by `data`, in stream order. Throws on anything that is not a PNM stream. */
  push(data: Buffer): RawImage[] {
    const done: RawImage[] = [];
    let at = 0;
    while (at < data.length) {
      if (this.current) {
        const cur = this.current;
        const take = Math.min(cur.pixels.length - cur.filled, data.length - at);
        data.copy(cur.pixels, cur.filled, at, at + take);
        cur.filled += take;
        at += take;
        if (cur.filled === cur.pixels.length) {
          done.push({ width: cur.width, height: cur.height, channels: cur.channels, pixels: cur.pixels });
          this.current = undefined;
        }
        continue;
      }
      // Header bytes: accumulate until the whole header (four fields and one whitespace byte) is there.
      const take = Math.min(MAX_HEADER_BYTES - this.header.length, data.length - at);
      const before = this.header.length;
      this.header = Buffer.concat([this.header, data.subarray(at, at + take)]);
      const parsed = parsePnmHeader(this.header);
      if (parsed === "more") {
        if (this.header.length >= MAX_HEADER_BYTES) throw new Error("pdftoppm wrote something that is not a PNM image");
        at += take;
        continue;
      }
      const { width, height, channels, headerBytes } = parsed;
      const bytes = width * height * channels;
      if (bytes > this.maxImageBytes) throw new Error(`a page of ${width}×${height} pixels is larger than ${this.maxImageBytes} bytes`);
      const reused = this.spare.findIndex((b) => b.length === bytes);
      const pixels = reused >= 0 ? this.spare.splice(reused, 1)[0]! : Buffer.allocUnsafe(bytes);
      this.current = { width, height, channels, pixels, filled: 0 };
      at += headerBytes - before;
      this.header = Buffer.alloc(0);
    }
    return done;
  }

  /** True between images (the stream may end here). */
  get atBoundary(): boolean {
    return this.current === undefined && this.header.length === 0;
  }
}

/**
 * The binary PNM images of a file pdftoppm wrote (P6, or P5 for `-gray`;
 * maxval 255), in order, left in the file: only the headers are read.
 * Throws on anything else, on a truncated image, and on one larger than
 * `maxImageBytes`.
 */
export async function pnmsOfFile(file: FileHandle, maxImageBytes: number): Promise<FileImage[]> {
  const { size: fileBytes } = await file.stat();
  const images: FileImage[] = [];
  const header = Buffer.alloc(MAX_HEADER_BYTES);
  for (let at = 0; at < fileBytes; ) {
    const { bytesRead } = await file.read(header, 0, MAX_HEADER_BYTES, at);
    const parsed = parsePnmHeader(header.subarray(0, bytesRead));
    if (parsed === "more") throw new Error("pdftoppm wrote a truncated PNM header");
    const { width, height, channels, headerBytes } = parsed;
    const size = width * height * channels;
    if (size > maxImageBytes) throw new Error(`a page of ${width}×${height} pixels is larger than ${maxImageBytes} bytes`);
    const end = at + headerBytes + size;
    if (end > fileBytes) throw new Error(`pdftoppm wrote ${fileBytes - at - headerBytes} bytes of pixels for a ${width}×${height} page (${size} expected)`);
    images.push({ width, height, channels, file, offset: at + headerBytes });
    at = end;
  }
  return images;
}

/** "more" until `bytes` hold a whole P5/P6 header with maxval 255; throws when they cannot become one. */
function parsePnmHeader(bytes: Buffer): { width: number; height: number; channels: 1 | 3; headerBytes: number } | "more" {
  if (bytes.length < 2) return "more";
  if (bytes[0] !== 0x50 || (bytes[1] !== 0x35 && bytes[1] !== 0x36)) throw new Error("pdftoppm wrote something that is not a PNM image");
  const channels = bytes[1] === 0x35 ? 1 : 3;
  const isSpace = (b: number | undefined) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d || b === 0x0b || b === 0x0c;
  const numbers: number[] = [];
  let at = 2;
  while (numbers.length < 3) {
    if (at >= bytes.length) return "more";
    if (isSpace(bytes[at])) {
      at++;
      continue;
    }
    if (bytes[at] === 0x23) {
      while (at < bytes.length && bytes[at] !== 0x0a && bytes[at] !== 0x0d) at++;
      continue;
    }
    const start = at;
    let n = 0;
    while (at < bytes.length && bytes[at]! >= 0x30 && bytes[at]! <= 0x39) {
      n = n * 10 + (bytes[at]! - 0x30);
      at++;
      if (at - start > 9) throw new Error("pdftoppm wrote a PNM header with an impossible number");
    }
    if (at === start) throw new Error("pdftoppm wrote a malformed PNM header");
    if (at >= bytes.length) return "more"; // the number may go on
    numbers.push(n);
  }
  // Exactly one whitespace byte ends the header.
  if (at >= bytes.length) return "more";
  if (!isSpace(bytes[at])) throw new Error("pdftoppm wrote a malformed PNM header");
  const [width, height, maxval] = numbers as [number, number, number];
  if (maxval !== 255) throw new Error(`pdftoppm wrote a PNM image with maxval ${maxval}`);
  if (width < 1 || height < 1) throw new Error("pdftoppm wrote an empty page");
  return { width, height, channels, headerBytes: at + 1 };
}
