/**
 * Rule removal on synthetic grey images: rules go, letters stay.
 */
import { describe, expect, it } from "vitest";
import { otsuThreshold, removeRules, type GreyImage } from "./rules.ts";

function blank(width: number, height: number): GreyImage {
  return { width, height, pixels: new Uint8Array(width * height).fill(250) };
}

function fill(img: GreyImage, x0: number, y0: number, x1: number, y1: number, value = 10): void {
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) img.pixels[y * img.width + x] = value;
}

function darkIn(img: GreyImage, x0: number, y0: number, x1: number, y1: number): number {
  let n = 0;
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) if (img.pixels[y * img.width + x]! < 128) n++;
  return n;
}

/** Blocks shaped like a line of letters: 18 px wide, 30 px tall, 6 px apart. */
function word(img: GreyImage, x: number, y: number, letters: number): void {
  for (let i = 0; i < letters; i++) fill(img, x + i * 24, y, x + i * 24 + 18, y + 30);
}

describe("removeRules", () => {
  it("paints a solid horizontal rule, a dotted one and a vertical one white, and leaves letters alone", () => {
    const img = blank(1200, 900);
    fill(img, 50, 100, 1150, 103); // a solid rule, 3 px thick
    for (let x = 50; x < 1150; x += 4) fill(img, x, 300, x + 2, 302); // dots every 4 px
    word(img, 100, 500, 30); // a line of "letters" 714 px long
    const letters = darkIn(img, 100, 500, 820, 530);
    fill(img, 600, 400, 602, 880); // a vertical rule through the line's gap between two letters
    const painted = removeRules(img);
    expect(darkIn(img, 50, 100, 1150, 103), "solid rule").toBe(0);
    expect(darkIn(img, 50, 300, 1150, 302), "dotted rule").toBe(0);
    expect(darkIn(img, 600, 400, 602, 880), "vertical rule").toBe(0);
    // Where the vertical rule crosses the line, at most a pixel column of the letters beside it goes with it.
    expect(darkIn(img, 100, 500, 820, 530), "letters").toBeGreaterThanOrEqual(letters - 2 * 30);
    expect(painted).toBeGreaterThan(3300 + 1000 + 900);
  });

  it("keeps a long run that has ink above and below it (the middle of a line of letters touching each other)", () => {
    const img = blank(1200, 400);
    fill(img, 100, 100, 1000, 130); // one long dark bar 30 px tall: letters touching, not a rule
    const before = darkIn(img, 0, 0, 1200, 400);
    removeRules(img);
    expect(darkIn(img, 0, 0, 1200, 400)).toBe(before);
  });

  it("finds nothing on a page without rules", () => {
    const img = blank(800, 600);
    for (let line = 0; line < 10; line++) word(img, 40, 40 + line * 50, 25);
    expect(removeRules(img)).toBe(0);
  });
});

describe("otsuThreshold", () => {
  it("splits dark ink from a light page", () => {
    const img = blank(100, 100);
    fill(img, 0, 0, 30, 100, 20);
    const t = otsuThreshold(img.pixels);
    expect(t).toBeGreaterThanOrEqual(20);
    expect(t).toBeLessThan(250);
  });
});
