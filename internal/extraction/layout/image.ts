/**
 * Page images as 8-bit grey pixels and back: what the image-side steps of
 * the layout (rule removal) work on, and the PGM they hand tesseract.
 */
import { parsePgm } from "../../formats/index.ts";
import { decodePixels } from "../../platform/decoder/index.ts";
import type { GreyImage } from "./rules.ts";

/**
 * A page's grey pixels by its image, while the image lives: a page is looked
 * at by several steps (the straightening check, auto's pass without ruling
 * lines, the structure of markdown and json), and each decode of an image
 * is a round trip to the decoder's child process.
 */
const decoded = new WeakMap<Buffer, Promise<GreyImage>>();

/**
 * Decodes any page image an engine accepts (PNG, JPEG, TIFF, GIF, WebP; binary
 * PGM) to grey pixels, a copy the caller may change. Formats other than PGM
 * are decoded by the decoder's child process (platform/decoder), never here.
 */
export async function decodeGrey(bytes: Buffer): Promise<GreyImage> {
  const g = await viewGrey(bytes);
  return { width: g.width, height: g.height, pixels: new Uint8Array(g.pixels) };
}

/**
 * {@link decodeGrey} without the copy, for readers that never change the
 * pixels: a PGM's are the image's own bytes, another format's are shared by
 * every caller of the same image. A page's copies cost more than their
 * memcpy: each is a fresh 4 MB allocation (page faults, and the collector
 * runs for external memory), several per page in a long job.
 */
export async function viewGrey(bytes: Buffer): Promise<GreyImage> {
  const pgm = parsePgm(bytes);
  if (pgm) return { width: pgm.width, height: pgm.height, pixels: pgm.pixels };
  let grey = decoded.get(bytes);
  if (!grey) {
    grey = decodePixels(bytes, { grey: true }).then(({ width, height, channels, data }) => {
      // sharp keeps an alpha channel of a grey+alpha PNG: take the grey of every pixel.
      if (channels === 1) return { width, height, pixels: new Uint8Array(data.buffer, data.byteOffset, data.length) };
      const px = new Uint8Array(width * height);
      for (let i = 0; i < px.length; i++) px[i] = data[i * channels]!;
      return { width, height, pixels: px };
    });
    decoded.set(bytes, grey);
    // A failure is not kept: the next step may be asked after the decoder's restart.
    grey.catch(() => decoded.delete(bytes));
  }
  return grey;
}

/** A binary PGM (P5, maxval 255) of the pixels. */
export function encodePgm(img: GreyImage): Buffer {
  return Buffer.concat([Buffer.from(`P5\n${img.width} ${img.height}\n255\n`, "latin1"), Buffer.from(img.pixels.buffer, img.pixels.byteOffset, img.pixels.length)]);
}
