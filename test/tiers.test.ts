/** The tiers of test/tiers.ts: every glob names a file, and unit files start nothing. */
import { globSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { TEST_FILES, TIER_FILES } from "./tiers.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const files = (globs: readonly string[]) => new Set(globs.flatMap((g) => globSync(g, { cwd: ROOT })));
const everyFile = files(TEST_FILES);
const listed = files(Object.values(TIER_FILES).flat());
const unit = [...everyFile].filter((f) => !listed.has(f)).sort();

/** What a unit file may not import: a way to start a process, or a service stack. */
const STARTERS = [
  /from "node:child_process"/,
  /\b(startStack|startTestEdge|startTestExtraction|startTestConversion|startTestWorker|upstreamStack|startEdge|startExtraction|startConversion)\(/,
];

describe("test tiers", () => {
  it("every glob of a tier matches a test file (a renamed or removed file leaves none behind)", () => {
    const empty = Object.entries(TIER_FILES).flatMap(([tier, globs]) => globs.filter((g) => files([g]).size === 0).map((g) => `${tier}: ${g}`));
    expect(empty).toEqual([]);
  });

  it("the unit tier holds only files that start no process and no service", () => {
    expect(unit.length).toBeGreaterThan(40);
    // This file names the patterns, not a use of them.
    const starting = unit.filter((f) => f !== "test/tiers.test.ts" && STARTERS.some((re) => re.test(readFileSync(`${ROOT}/${f}`, "utf8"))));
    expect(starting, "list these in test/tiers.ts under the tier they need").toEqual([]);
  });

  it("this file is a unit file itself", () => {
    expect(unit).toContain("test/tiers.test.ts");
  });
});
