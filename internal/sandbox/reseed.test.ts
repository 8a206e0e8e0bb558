/**
 * reseedMathRandom: the generator a restored sandbox program draws from
 * after its hand-in is a function of the host's seed alone.
 */
import { afterEach, describe, expect, it } from "vitest";
import { reseedMathRandom } from "./reseed.ts";

const original = Math.random;
afterEach(() => {
  Math.random = original;
});

function draws(seed: Buffer, n = 1000): number[] {
  reseedMathRandom(seed);
  return Array.from({ length: n }, () => Math.random());
}

describe("reseedMathRandom", () => {
  it("gives the same sequence for the same seed and another one for another seed", () => {
    const a = Buffer.alloc(32, 1);
    const b = Buffer.from(a);
    b[31] = 2;
    b[0] = 7;
    expect(draws(a)).toEqual(draws(Buffer.from(a)));
    const [first, second] = [draws(a, 50), draws(b, 50)];
    expect(first.filter((x, i) => x === second[i])).toEqual([]);
  });

  it("draws in [0, 1), spread over the interval", () => {
    const values = draws(Buffer.from("0123456789abcdef0123456789abcdef"), 10_000);
    expect(values.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = values.reduce((s, x) => s + x, 0) / values.length;
    expect(mean).toBeGreaterThan(0.48);
    expect(mean).toBeLessThan(0.52);
    expect(new Set(values).size).toBe(values.length);
  });

  it("leaves the all-zero state and refuses a short seed", () => {
    expect(new Set(draws(Buffer.alloc(16), 100)).size).toBe(100);
    expect(() => reseedMathRandom(Buffer.alloc(8))).toThrow(/at least 16 bytes/);
  });
});
