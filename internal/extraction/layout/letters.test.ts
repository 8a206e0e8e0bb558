/**
 * letterHeight (letters.ts) on the project's fixtures: the height of the
 * letters as the page's pixels show them, at the page's size and smaller.
 */
import { describe, expect, it } from "vitest";
import { ocrFixture as fixture } from "../../../test/support.ts";
import { decodeGrey } from "./image.ts";
import { letterHeight } from "./letters.ts";
import { TINY_LETTER_HEIGHT } from "../engines/tesseract.ts";

async function scaled(name: string, width: number) {
  const sharp = (await import("sharp")).default;
  return decodeGrey(await sharp(fixture(name)).resize(width).png().toBuffer());
}

describe("letterHeight", () => {
  it("follows the page's scale: english.png at 200 DPI, at half and at a quarter of it", async () => {
    const full = letterHeight(await decodeGrey(fixture("english.png")))!;
    const half = letterHeight(await scaled("english.png", 827))!;
    const quarter = letterHeight(await scaled("english.png", 414))!;
    // 11-point type at 200 DPI: capitals and ascenders about 20 pixels.
    expect(full).toBeGreaterThanOrEqual(17);
    expect(full).toBeLessThanOrEqual(25);
    expect(Math.abs(half - full / 2), `${full} → ${half}`).toBeLessThanOrEqual(2);
    expect(Math.abs(quarter - full / 4), `${full} → ${quarter}`).toBeLessThanOrEqual(2);
    // Only the quarter-size page is too small for tesseract (engines/tesseract.ts reads it enlarged at once).
    expect([full, half, quarter].map((h) => h <= TINY_LETTER_HEIGHT)).toEqual([false, false, true]);
  });

  it("answers the same page after page, whatever was measured before it (the tracing's scratch is reused)", async () => {
    const full = await decodeGrey(fixture("english.png"));
    const quarter = await scaled("english.png", 414);
    // A page that is one dark block: a component of every pixel, the stack at its largest.
    const dark = { width: 600, height: 600, pixels: new Uint8Array(600 * 600) };
    const first = [letterHeight(quarter), letterHeight(full)];
    expect(letterHeight(dark)).toBeNull();
    expect([letterHeight(quarter), letterHeight(full), letterHeight(quarter)]).toEqual([first[0], first[1], first[0]]);
  });

  it("says nothing of a page with too few letter-shaped marks: blank, or one solid block", () => {
    const blank = { width: 200, height: 200, pixels: new Uint8Array(200 * 200).fill(255) };
    expect(letterHeight(blank)).toBeNull();
    const block = { width: 200, height: 200, pixels: new Uint8Array(200 * 200).map((_, i) => (i % 200 < 100 ? 0 : 255)) };
    expect(letterHeight(block)).toBeNull();
  });
});
