/**
 * The evidence of joins (joins.ts) on text written for these tests: prose
 * read column after column against the same lines read across, a word
 * broken at a line's end, and a table whose orders the text cannot tell
 * apart.
 */
import { describe, expect, it } from "vitest";
import { CharModel, joinEvidence, orderEvidence } from "./joins.ts";
import { acrossColumns, PROSE } from "./testdata.ts";


describe("the evidence of joins", () => {
  const model = new CharModel(PROSE);

  it("favours prose read column after column over the same lines read across, by far more than odds of 20 to 1", () => {
    const evidence = orderEvidence(model, PROSE) - orderEvidence(model, acrossColumns(PROSE, 3));
    expect(evidence).toBeGreaterThan(Math.log(20));
  });

  it("joins a word broken at a line's end without the hyphen, so a word the page uses reads on", () => {
    const page = new CharModel([...PROSE, "the farmers and the traders"]);
    expect(joinEvidence(page, "the mills and the far-", "mers of the valley")).toBeGreaterThan(joinEvidence(page, "the mills and the far-", "bridge of the valley"));
    // Without the hyphen rule the broken word would be judged as two words.
    expect(joinEvidence(page, "the mills and the far-", "mers")).toBeGreaterThan(joinEvidence(page, "the mills and the far", "mers"));
  });

  it("gives figures no say: a join from or into a number scores nothing", () => {
    const table = new CharModel(["Blaine 292 524", "Buffalo 273 537", "Detroit 404 1,322", "Houlton 193 112"]);
    expect(joinEvidence(table, "292", "524")).toBe(0);
    expect(joinEvidence(table, "Blaine", "(1,322)")).toBe(0);
    expect(joinEvidence(table, "292", "Buffalo")).toBe(0);
    expect(joinEvidence(table, "Blaine", "Buffalo")).not.toBe(0);
  });

  it("passes over pieces without a letter, so scattering dashes between two labels gains an order nothing", () => {
    const table = new CharModel(["Acquisitions - - -", "Divestments 2 1 0", "Cash flow from investments (459)"]);
    const direct = joinEvidence(table, "Acquisitions", "Divestments");
    expect(direct).not.toBe(0);
    expect(orderEvidence(table, ["Acquisitions", "-", "-", "Divestments"])).toBe(direct);
    expect(orderEvidence(table, ["Acquisitions", "Divestments", "2", "(459)"])).toBe(direct);
  });

  it("scores nothing for an empty piece, and a page without text gives no evidence", () => {
    expect(joinEvidence(model, "", "river")).toBe(0);
    expect(joinEvidence(new CharModel([]), "the", "river")).toBe(0);
  });
});
