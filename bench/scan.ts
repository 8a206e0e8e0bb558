/**
 * A "scan" of a rendered page, for the evaluations of pages nothing was fitted
 * to (bench/column-pages.ts, bench/eval-structure.ts): a soft blur, grey paper,
 * grey ink, noise, and JPEG at quality 55 (sharp); with `skewDegrees`, the page
 * turned that much first, its corners white. Seeded: the same page and seed
 * give the same bytes.
 */
import sharp from "sharp";

/** A small deterministic generator (a linear congruential one), so the pages are the same on every machine. */
export function lcg(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

export async function scannedPage(page: Buffer | string, seed: number, skewDegrees = 0): Promise<Buffer> {
  const rnd = lcg(seed);
  const turned = skewDegrees ? await sharp(page).greyscale().rotate(skewDegrees, { background: "#ffffff" }).png().toBuffer() : page;
  const { data, info } = await sharp(turned).greyscale().blur(0.5 + rnd() * 0.5).raw().toBuffer({ resolveWithObject: true });
  const paper = 215 + Math.floor(rnd() * 30);
  const ink = 20 + Math.floor(rnd() * 50);
  for (let i = 0; i < data.length; i++) data[i] = Math.max(0, Math.min(255, Math.round(ink + (data[i]! / 255) * (paper - ink) + (rnd() + rnd() + rnd() - 1.5) * 24)));
  return sharp(data, { raw: { width: info.width, height: info.height, channels: 1 } }).jpeg({ quality: 55 }).toBuffer();
}
