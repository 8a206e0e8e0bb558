/**
 * The declared font set on this machine (ensure-deps installs it), through
 * the real fontconfig: the configuration a sandbox runs with lists exactly
 * the set's files whatever else is installed (the set's packages alone
 * bring more: Liberation 1.x's regular families, Noto's serif CJK, URW's
 * other families), and the families office documents ask for resolve to
 * their metric twins.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FONT_FILES, FONT_PACKAGES, FONT_SET, checkFontSet, fontsConf, missingFontFiles } from "./fonts.ts";

const work = mkdtempSync(join(tmpdir(), "folio-fonts-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const conf = join(work, "fonts.conf");
writeFileSync(conf, fontsConf());
const fc = (tool: string, ...args: string[]) =>
  execFileSync(tool, args, { encoding: "utf8", env: { PATH: "/usr/bin:/bin", FONTCONFIG_FILE: conf, HOME: work } });

describe("the declared font set", () => {
  it("is installed here, every file and rule", async () => {
    expect(await missingFontFiles()).toEqual([]);
    await expect(checkFontSet()).resolves.toBeUndefined();
  });

  it("names each package once and each file once", () => {
    expect(new Set(FONT_PACKAGES).size).toBe(FONT_SET.length);
    expect(new Set(FONT_FILES).size).toBe(FONT_FILES.length);
  });

  it("is all that fontconfig lists under the sandbox's configuration, though the machine has more fonts", () => {
    const listed = fc("fc-list", "--format=%{file}\\n").split("\n").filter(Boolean);
    expect([...new Set(listed)].sort()).toEqual([...FONT_FILES].sort());
    const everything = execFileSync("fc-list", ["--format=%{file}\\n"], { encoding: "utf8" }).split("\n").filter(Boolean);
    expect(new Set(everything).size, "the host's own configuration sees more than the set").toBeGreaterThan(FONT_FILES.length);
  });

  it.each(["1f44d", "2705", "1f680"])("covers emoji U+%s with Symbola (outlines, which render; not colour bitmaps)", (codePoint) => {
    expect(fc("fc-list", `:charset=${codePoint}`, "--format=%{family[0]}\\n").split("\n").filter(Boolean)).toEqual(["Symbola"]);
  });

  it.each([
    ["Calibri", "Carlito"],
    ["Cambria", "Caladea"],
    ["Arial", "Liberation Sans"],
    ["Helvetica", "Liberation Sans"],
    ["Times New Roman", "Liberation Serif"],
    ["Courier New", "Liberation Mono"],
    ["Arial Narrow", "Liberation Sans Narrow"],
    ["Palatino Linotype", "P052"],
    ["Bookman Old Style", "URW Bookman"],
    ["Century Schoolbook", "C059"],
    // A family the set does not know falls back to Arial's and Times' twins, not to DejaVu.
    ["Some Unknown Family", "Liberation Sans"],
    ["serif", "Liberation Serif"],
    ["monospace", "Liberation Mono"],
    [":lang=ja", "Noto Sans CJK JP"],
    [":lang=ko", "Noto Sans CJK KR"],
    ["Segoe UI Emoji", "Symbola"],
  ])("resolves %s to %s", (asked, family) => {
    expect(fc("fc-match", "--format=%{family[0]}", asked)).toBe(family);
  });
});
