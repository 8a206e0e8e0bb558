import { describe, expect, it } from "vitest";
import { DEFAULT_SECONDS, EstimateBook, MIN_SAMPLES, WINDOW } from "./estimates.ts";

describe("EstimateBook", () => {
  it("answers the default table until enough conversions of a format were seen", () => {
    const book = new EstimateBook();
    for (let i = 0; i < MIN_SAMPLES - 1; i++) book.record("DOCX", 2000);
    expect(book.estimate("DOCX")).toEqual({ format: "DOCX", costCents: 1, seconds: DEFAULT_SECONDS.DOCX, basis: "default", samples: 0 });
  });

  it("then the median of what was observed, per format", () => {
    const book = new EstimateBook();
    for (const ms of [1000, 9000, 2000, 3000, 2500]) book.record("PPTX", ms);
    expect(book.estimate("PPTX")).toMatchObject({ seconds: 2.5, basis: "observed", samples: 5 });
    expect(book.estimate("DOCX").basis).toBe("default");
  });

  it("keeps only the last WINDOW samples", () => {
    const book = new EstimateBook();
    for (let i = 0; i < WINDOW; i++) book.record("TXT", 100_000);
    for (let i = 0; i < WINDOW; i++) book.record("TXT", 1000);
    expect(book.estimate("TXT")).toMatchObject({ seconds: 1, samples: WINDOW });
  });

  it("prices the estimated time with the pricing rule: minutes × 0.278 cents + 5%, rounded up, at least 1 cent", () => {
    const book = new EstimateBook();
    // 10 minutes: 2.78 cents + 0.139 = 2.919 → 3 cents.
    for (let i = 0; i < MIN_SAMPLES; i++) book.record("DOC", 600_000);
    expect(book.estimate("DOC").costCents).toBe(3);
  });
});
