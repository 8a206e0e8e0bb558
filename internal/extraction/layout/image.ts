/**
 * Page images as 8-bit grey pixels and back: what the image-side steps of
 * the layout (rule removal) work on, and the PGM they hand tesseract.
 */
import { parsePgm } from "../../formats/index.ts";
import type { GreyImage } from "./rules.ts";

/** Decodes any page image an engine accepts (PNG, JPEG, TIFF, GIF, WebP; binary PGM) to grey pixels, a copy the caller may change. */
export async function decodeGrey(bytes: Buffer): Promise<GreyImage> {
  const pgm = parsePgm(bytes);
  if (pgm) return { width: pgm.width, height: pgm.height, pixels: new Uint8Array(pgm.pixels) };
  const sharp = (await import("sharp")).default;
  const { data, info } = await sharp(bytes, { pages: 1 }).greyscale().raw().toBuffer({ resolveWithObject: true });
  // sharp keeps an alpha channel of a grey+alpha PNG: take the grey of every pixel.
  if (info.channels === 1) return { width: info.width, height: info.height, pixels: new Uint8Array(data.buffer, data.byteOffset, data.length) };
  const px = new Uint8Array(info.width * info.height);
  for (let i = 0; i < px.length; i++) px[i] = data[i * info.channels]!;
  return { width: info.width, height: info.height, pixels: px };
}

/** A binary PGM (P5, maxval 255) of the pixels. */
export function encodePgm(img: GreyImage): Buffer {
  return Buffer.concat([Buffer.from(`P5\n${img.width} ${img.height}\n255\n`, "latin1"), Buffer.from(img.pixels.buffer, img.pixels.byteOffset, img.pixels.length)]);
}
