/**
 * parsePgm on hand-made headers: what pdftoppm -gray writes, what netpbm
 * also allows (comments), and everything it must refuse rather than misread.
 */
import { describe, expect, it } from "vitest";
import { parsePgm } from "./index.ts";

const pgm = (header: string, pixels: number[]) => Buffer.concat([Buffer.from(header, "latin1"), Buffer.from(pixels)]);

describe("parsePgm", () => {
  it("reads pdftoppm's header and returns the pixels as a view, row by row", () => {
    const bytes = pgm("P5\n3 2\n255\n", [0, 1, 2, 3, 4, 255]);
    const got = parsePgm(bytes);
    expect(got).toMatchObject({ width: 3, height: 2 });
    expect([...got!.pixels]).toEqual([0, 1, 2, 3, 4, 255]);
    expect(got!.pixels.buffer).toBe(bytes.buffer);
  });

  it("allows comments and any whitespace between the header's numbers, and ignores bytes after the pixels", () => {
    const got = parsePgm(pgm("P5 # made by hand\n2\t1 # size\r\n255 ", [7, 8, 9]));
    expect(got).toMatchObject({ width: 2, height: 1 });
    expect([...got!.pixels]).toEqual([7, 8]);
  });

  it.each([
    ["plain (ASCII) PGM", pgm("P2\n1 1\n255\n", [1])],
    ["a colour PPM", pgm("P6\n1 1\n255\n", [1, 2, 3])],
    ["16-bit samples", pgm("P5\n1 1\n65535\n", [0, 1])],
    ["another maxval", pgm("P5\n1 1\n15\n", [1])],
    ["missing pixels", pgm("P5\n2 2\n255\n", [1, 2, 3])],
    ["a zero width", pgm("P5\n0 2\n255\n", [])],
    ["a number too long to be a size", pgm("P5\n123456789 1\n255\n", [1])],
    ["no whitespace after the magic number", pgm("P51 1\n255\n", [1])],
    ["no whitespace before the pixels", pgm("P5\n1 1\n255", [1])],
    ["a header only", Buffer.from("P5")],
    ["a PNG", Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])],
  ])("refuses %s", (_what, bytes) => {
    expect(parsePgm(bytes)).toBeNull();
  });
});
