/** The sandbox program's bundle: made by esbuild, kept while the files it was made from are unchanged. */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildSandboxProgram } from "./assets.ts";

const work = await mkdtemp(join(tmpdir(), "folio-assets-bundle-test-"));
afterAll(() => rm(work, { recursive: true, force: true }));

describe("buildSandboxProgram", () => {
  const out = join(work, "sandbox.mjs");
  const inputsFile = `${out}.inputs.json`;
  const made = () => statSync(out).mtimeMs;

  it("bundles the program and records what esbuild read, the program's entry among it", async () => {
    await buildSandboxProgram(out);
    expect(readFileSync(out, "utf8")).toContain("prestart");
    const inputs = JSON.parse(readFileSync(inputsFile, "utf8")) as { path: string; size: number; mtimeMs: number }[];
    expect(inputs.map((i) => i.path)).toEqual(expect.arrayContaining([expect.stringMatching(/cmd\/sandbox\/main\.ts$/), expect.stringMatching(/esbuild/)]));
  });

  it("keeps the bundle when nothing it was made from changed", async () => {
    const before = made();
    await new Promise((r) => setTimeout(r, 20));
    await buildSandboxProgram(out);
    expect(made()).toBe(before);
  });

  it("bundles again when a file it was made from is not as recorded, or the record is missing", async () => {
    const inputs = JSON.parse(readFileSync(inputsFile, "utf8")) as { path: string; size: number; mtimeMs: number }[];
    // As if the entry had been edited since: its recorded time no longer matches.
    writeFileSync(inputsFile, JSON.stringify(inputs.map((i, n) => (n === 0 ? { ...i, mtimeMs: i.mtimeMs - 1000 } : i))));
    const before = made();
    await new Promise((r) => setTimeout(r, 20));
    await buildSandboxProgram(out);
    expect(made()).toBeGreaterThan(before);

    await rm(inputsFile);
    const again = made();
    await new Promise((r) => setTimeout(r, 20));
    await buildSandboxProgram(out);
    expect(made()).toBeGreaterThan(again);
  });
});
