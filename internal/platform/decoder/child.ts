/**
 * The image decoder's own process (docs/sandbox-parsers.md "Image decoders in a
 * child process"): the only place where sharp (libvips, libpng, libjpeg,
 * libtiff, libwebp, libgif…) reads image bytes a client sent. It is started
 * by `index.ts` with an allow-listed environment (no secret) and, with
 * FOLIO_PARSER_JAIL=bwrap, in the parser jail (no network); it imports
 * nothing of Folio's but `frames.ts` beside it, so that a jail needs to show
 * it only this folder, the package's node_modules and package.json.
 *
 * Protocol, on stdin and stdout, both ways the same frames:
 * `u32 length, JSON header, u32 length, bytes` (lengths big-endian). A
 * request's header is `{ id, op, options }`, its bytes the image; an
 * answer's header `{ id, ok, info }` or `{ id, ok: false, error }`, its bytes
 * the pixels or the PNG. Requests are served concurrently (sharp works in
 * libuv's pool); answers come in the order they finish.
 */
import sharp, { type Metadata } from "sharp";
import { encodeFrame, FrameReader, type Frame } from "./frames.ts";

interface Request {
  id: number;
  op: "pixels" | "png" | "metadata";
  options: {
    /** sharp's limitInputPixels. */
    maxPixels?: number;
    /** failOn "warning" (a damaged image is an error) instead of sharp's default "error". */
    strict?: boolean;
    /** pixels: one grey channel (sharp keeps a grey image's alpha channel: the caller takes the first). */
    grey?: boolean;
    /** pixels: transparency flattened onto white, as three sRGB channels. */
    rgbOnWhite?: boolean;
    /** png: turned clockwise by this many degrees, the corners white. */
    rotate?: number;
    /** png: enlarged by this factor (Lanczos); refused when the result would pass maxOutputPixels. */
    scale?: number;
    maxOutputPixels?: number;
    /** png: zlib level, default sharp's 6. */
    compressionLevel?: number;
  };
}

const reader = new FrameReader();

process.stdin.on("data", (chunk: Buffer) => {
  let frames: Frame[];
  try {
    frames = reader.push(chunk);
  } catch (err) {
    process.stderr.write(`decoder: ${(err as Error).message}\n`);
    process.exit(2);
  }
  for (const frame of frames) void serve(frame.header as Request, frame.body);
});
let serving = 0;
let ended = false;
// The parent closed the pipe (it stops, or replaces this child): nothing more will be asked; what was asked is answered first.
process.stdin.on("end", () => {
  ended = true;
  if (serving === 0) process.exit(0);
});

async function serve(req: Request, image: Buffer): Promise<void> {
  serving++;
  try {
    const { info, data } = await run(req, image);
    answer({ id: req.id, ok: true, info }, data);
  } catch (err) {
    answer({ id: req.id, ok: false, error: String((err as Error)?.message ?? err) }, Buffer.alloc(0));
  } finally {
    serving--;
    // No answer is lost to the exit: Node writes process.stdout to a pipe synchronously on Linux.
    if (ended && serving === 0) process.exit(0);
  }
}

async function run(req: Request, image: Buffer): Promise<{ info: Record<string, unknown>; data: Buffer }> {
  const o = req.options ?? {};
  const input = sharp(image, { pages: 1, ...(o.maxPixels ? { limitInputPixels: o.maxPixels } : {}), ...(o.strict ? { failOn: "warning" as const } : {}) });
  if (req.op === "metadata") {
    const m = await input.metadata();
    return { info: { width: m.width ?? 0, height: m.height ?? 0, density: m.density ?? null, format: m.format ?? null }, data: Buffer.alloc(0) };
  }
  if (req.op === "pixels") {
    const density = statedDpi(image, await input.clone().metadata());
    const shaped = o.grey ? input.greyscale() : o.rgbOnWhite ? input.flatten({ background: "#ffffff" }).toColourspace("srgb") : input;
    const { data, info } = await shaped.raw().toBuffer({ resolveWithObject: true });
    return { info: { width: info.width, height: info.height, channels: info.channels, density }, data };
  }
  if (req.op === "png") {
    const m = await input.metadata();
    let shaped = input;
    if (o.scale && o.scale !== 1) {
      const width = Math.round((m.width ?? 0) * o.scale);
      const height = Math.round((m.height ?? 0) * o.scale);
      if (!width || !height || (o.maxOutputPixels && width * height > o.maxOutputPixels)) throw new Error(`the image enlarged would be larger than ${o.maxOutputPixels} pixels`);
      shaped = shaped.resize(width, height, { kernel: "lanczos3" });
    }
    if (o.rotate) shaped = shaped.rotate(o.rotate, { background: { r: 255, g: 255, b: 255, alpha: 1 } });
    const { data, info } = await shaped.png(o.compressionLevel === undefined ? {} : { compressionLevel: o.compressionLevel }).toBuffer({ resolveWithObject: true });
    return { info: { width: info.width, height: info.height, channels: info.channels, density: m.density ?? null }, data };
  }
  throw new Error(`unknown operation ${String(req.op)}`);
}

/**
 * The resolution an image states, as tesseract's own image reader
 * (leptonica) takes it, so that the resident program reads a page as the CLI
 * does (engines/tesseract-server.ts): a PNG's pHYs in pixels per metre, a
 * JPEG's JFIF density in inches or centimetres (not its EXIF's), a TIFF's
 * resolution with its unit; null when none is stated. sharp says 72 then (a
 * PNG without pHYs, a JFIF density that is an aspect ratio only), which
 * tesseract would believe: told nothing, it estimates the resolution from
 * the text, as the CLI does.
 * With 72 or with no resolution where the CLI had 96, the corpus's
 * `scribe_table_07` read 1,430 edits instead of 1,066 (docs/benchmarks.md).
 */
function statedDpi(image: Buffer, m: Metadata): number | null {
  if (m.format === "png") return pngStatedDpi(image);
  if (m.format === "jpeg") return jfifStatedDpi(image);
  if (m.format === "tiff" && m.resolutionUnit && m.density) return Math.round(m.density);
  return null;
}

/**
 * A JPEG's JFIF density in dots per inch, when its unit is the inch (1) or
 * the centimetre (2); leptonica reads no other (sharp also takes an EXIF
 * resolution, which the CLI never sees).
 */
function jfifStatedDpi(jpeg: Buffer): number | null {
  // After SOI (FF D8), segments: FF, marker, u16 length (itself included), data; the image data starts at SOS (FF DA).
  for (let at = 2; at + 4 <= jpeg.length && jpeg[at] === 0xff; ) {
    const marker = jpeg[at + 1]!;
    // Fill bytes: a marker may be preceded by any number of FF.
    if (marker === 0xff) {
      at++;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) return null;
    const length = jpeg.readUInt16BE(at + 2);
    // APP0 "JFIF\0": version (2 bytes), units, X density (u16), Y density.
    if (marker === 0xe0 && length >= 14 && at + 16 <= jpeg.length && jpeg.toString("latin1", at + 4, at + 9) === "JFIF\0") {
      const units = jpeg[at + 11];
      const x = jpeg.readUInt16BE(at + 12);
      if (!x) return null;
      return units === 1 ? x : units === 2 ? Math.round(x * 2.54) : null;
    }
    at += 2 + length;
  }
  return null;
}

/** A PNG's pHYs chunk in dots per inch (leptonica's rounding), when it is in metres; it comes before the first IDAT. */
function pngStatedDpi(png: Buffer): number | null {
  // After the 8-byte signature, chunks: u32 length, 4-byte type, data, u32 CRC.
  for (let at = 8; at + 8 <= png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString("latin1", at + 4, at + 8);
    if (type === "IDAT" || type === "IEND") return null;
    if (type === "pHYs") {
      if (length < 9 || at + 17 > png.length) return null;
      const perMetre = png.readUInt32BE(at + 8);
      // Unit 1 is the metre; 0 states an aspect ratio only.
      return png[at + 16] === 1 && perMetre > 0 ? Math.round(perMetre / 39.37) : null;
    }
    at += 12 + length;
  }
  return null;
}

function answer(header: Record<string, unknown>, body: Buffer): void {
  for (const part of encodeFrame(header, body)) process.stdout.write(part);
}
