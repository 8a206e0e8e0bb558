import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_PAGES_TEXT, formatPages, isSelected, parsePages, planPages, selectedCount, type PageSelection } from "./pages.ts";

function selection(text: string): PageSelection {
  const parsed = parsePages(text);
  if (!parsed.ok) throw new Error(`${JSON.stringify(text)} did not parse: ${parsed.problem}`);
  return parsed.selection;
}

function problem(text: string): string {
  const parsed = parsePages(text);
  if (parsed.ok) throw new Error(`${JSON.stringify(text)} parsed as ${formatPages(parsed.selection)}`);
  return parsed.problem;
}

describe("parsePages", () => {
  it.each([
    ["1-20,25", "1-20,25"],
    ["3", "3"],
    ["5-", "5-"],
    [" 1 - 3 , 7 ,9- ", "1-3,7,9-"],
    ["25,1-3", "1-3,25"],
    ["1-3,4-6,7", "1-7"],
    ["4,3,2,1", "1-4"],
    ["2-2", "2"],
    ["007", "7"],
    ["3,5-", "3,5-"],
    ["4,5-", "4-"],
  ])("reads %j as %j (document order, touching ranges merged)", (text, canonical) => {
    expect(formatPages(selection(text))).toBe(canonical);
  });

  it("round-trips its canonical text", () => {
    for (const text of ["1-20,25", "5-", "1,3,5-9,11-"]) expect(formatPages(selection(formatPages(selection(text))))).toBe(text);
  });

  it.each([
    ["", /empty/],
    ["   ", /empty/],
    ["1,,2", /empty item between commas/],
    ["0", /numbered from 1/],
    ["0-3", /numbered from 1/],
    ["5-3", /"5-3" runs backwards; write 3-5/],
    ["1-10,5", /page 5 is asked for twice \("1-10" and "5"\)/],
    ["3,3", /page 3 is asked for twice/],
    ["2-,7", /page 7 is asked for twice \("2-" and "7"\)/],
    ["a", /"a" is not a page or a range/],
    ["-5", /"-5" is not a page or a range/],
    ["1.5", /not a page or a range/],
    ["1-2-3", /not a page or a range/],
    ["+3", /not a page or a range/],
    ["1234567890", /not a page or a range/],
    ["1;2", /not a page or a range/],
  ])("refuses %j, naming the problem", (text, why) => {
    expect(problem(text)).toMatch(why);
  });

  it("refuses a text longer than the limit", () => {
    expect(problem("1,".repeat(MAX_PAGES_TEXT) + "1")).toMatch(/longer than/);
  });
});

describe("selectedCount and isSelected", () => {
  it("counts a closed selection and leaves an open one to the document", () => {
    expect(selectedCount(selection("1-20,25"))).toBe(21);
    expect(selectedCount(selection("1-20,25-"))).toBeUndefined();
    expect([1, 20, 21, 25, 99].map((n) => isSelected(selection("1-20,25-"), n))).toEqual([true, true, false, true, true]);
  });
});

describe("planPages", () => {
  it("without a selection: every page, or over the limit naming it and the option", () => {
    expect(planPages(3, undefined, 100)).toEqual({ ok: true, pages: [1, 2, 3] });
    const over = planPages(134, undefined, 100);
    expect(over).toMatchObject({ ok: false, problem: "over_limit" });
    expect(over.ok || over.message).toBe('the document has 134 pages; at most 100 are processed per request: choose which with the "pages" option of /v1/ocr and /v1/convert (for example "pages": "1-100")');
  });

  it("with a selection: its pages in document order, an open range to the end", () => {
    expect(planPages(30, selection("25,1-3"), 100)).toEqual({ ok: true, pages: [1, 2, 3, 25] });
    expect(planPages(134, selection("130-"), 100)).toEqual({ ok: true, pages: [130, 131, 132, 133, 134] });
    expect(planPages(134, selection("1-100"), 100)).toMatchObject({ ok: true });
  });

  it("a page beyond the end is refused with the document's page count", () => {
    const got = planPages(12, selection("1-20,25"), 100);
    expect(got).toMatchObject({ ok: false, problem: "beyond_end" });
    expect(got.ok || got.message).toBe('the document has 12 pages; "pages": "1-20,25" asks for page 25');
    expect(planPages(1, selection("2"), 100)).toMatchObject({ ok: false, problem: "beyond_end", message: expect.stringContaining("has 1 page;") });
    expect(planPages(12, selection("13-"), 100)).toMatchObject({ ok: false, problem: "beyond_end" });
  });

  it("a selection over the limit is refused, counting an open range on the document", () => {
    const got = planPages(300, selection("5-"), 100);
    expect(got).toMatchObject({ ok: false, problem: "selection_over_limit" });
    expect(got.ok || got.message).toBe(`"pages": "5-" selects 296 pages of the document's 300; at most 100 are processed per request`);
  });
});

describe("properties", () => {
  it("any set of pages, in any order, comes back as those pages in document order", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 500 }), { minLength: 1, maxLength: 60 }), (pages) => {
        const plan = planPages(500, selection(pages.join(" , ")), 500);
        expect(plan).toEqual({ ok: true, pages: [...pages].sort((a, b) => a - b) });
      }),
    );
  });

  it("never throws, and what it accepts reads back the same from its canonical text", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(..."0123456789-, x"), maxLength: 30 }), (text) => {
        const parsed = parsePages(text);
        if (parsed.ok) expect(parsePages(formatPages(parsed.selection))).toEqual(parsed);
        else expect(parsed.problem).toMatch(/^'pages' is not a page selection: /);
      }),
    );
  });
});
