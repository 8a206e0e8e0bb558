/**
 * The sandbox program's page step on the host (LibreOffice and poppler
 * installed, no runsc): pages rendered by several pdftoppm processes at once
 * come out identical to one process's, in page order, as 200-DPI PNGs that
 * are grey where the page is grey; without libstdbuf the pages are the same;
 * the output limit stops the renderers.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runJob, type ConverterOptions } from "./converter.ts";
import type { JobResult, JobSpec } from "./interface.ts";
import { prepareProfile } from "./profile.ts";
import { pngInfo } from "./testdocs.ts";

const work = mkdtempSync(join(tmpdir(), "folio-pages-test-"));
const profile = join(work, "profile");
/** Plain text long enough for 5 A4 pages (LibreOffice's text import: about 60 lines a page). */
const LINES = Array.from({ length: 280 }, (_, i) => `Line ${i + 1}: the quick brown fox jumps over the lazy dog, page images at 200 DPI.`).join("\n");
const PAGES = 5;

beforeAll(async () => {
  await prepareProfile(profile);
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

let jobs = 0;
async function convert(spec: Partial<JobSpec>, options: ConverterOptions = {}): Promise<{ result: JobResult; pages: Buffer[] }> {
  const jobDir = join(work, `job-${++jobs}`);
  mkdirSync(join(jobDir, "input"), { recursive: true });
  writeFileSync(join(jobDir, "input", "document.txt"), LINES);
  const full: JobSpec = { format: "TXT", dpi: 200, maxPages: 10, profileDir: profile, timeoutMs: 60_000, ...spec };
  writeFileSync(join(jobDir, "job.json"), JSON.stringify(full));
  const result = await runJob(jobDir, { scratchDir: work, ...options });
  const names = readdirSync(join(jobDir, "output")).filter((n) => n.endsWith(".png"));
  if (!result.ok) return { result, pages: [] };
  expect(names.sort(), "output/ holds page-1.png … page-N.png").toEqual(Array.from({ length: result.pageCount }, (_, i) => `page-${i + 1}.png`).sort());
  const pages = names.map((_, i) => readFileSync(join(jobDir, "output", `page-${i + 1}.png`)));
  return { result, pages };
}

describe("the page step", () => {
  let single: Buffer[] = [];

  it("renders every page as a grey 200-DPI PNG with one renderer", async () => {
    const { result, pages } = await convert({ cpus: 1 });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: PAGES });
    expect(result.timings?.greyPages).toBe(PAGES);
    expect(pages).toHaveLength(PAGES);
    for (const png of pages) {
      expect(pngInfo(png)).toEqual({ width: 1654, height: 2339, phys: { x: 7874, y: 7874, unit: 1 } });
      expect(png[25], "colour type").toBe(0);
    }
    expect(result.timings?.pngBytes).toBe(pages.reduce((n, p) => n + p.length, 0));
    single = pages;
  }, 60_000);

  it.each([2, 3, 8])("gives the same pages, in order, with %d renderers at once", async (cpus) => {
    const { result, pages } = await convert({ cpus });
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: PAGES });
    expect(pages.map((p) => p.length)).toEqual(single.map((p) => p.length));
    pages.forEach((p, i) => expect(Buffer.compare(p, single[i] as Buffer), `page ${i + 1}`).toBe(0));
  }, 60_000);

  it("gives the same pages without libstdbuf (pdftoppm's own buffer)", async () => {
    const { result, pages } = await convert({ cpus: 1 }, { libstdbufPath: join(work, "no-such-libstdbuf.so") });
    expect(result.ok, JSON.stringify(result)).toBe(true);
    pages.forEach((p, i) => expect(Buffer.compare(p, single[i] as Buffer), `page ${i + 1}`).toBe(0));
  }, 60_000);

  it("stops at the output limit: conversion_failed naming it", async () => {
    const limit = (single[0]?.length ?? 0) * 2;
    const { result } = await convert({ cpus: 2, maxOutputBytes: limit });
    expect(result.ok).toBe(false);
    expect(result.error).toEqual({ code: "conversion_failed", message: `the rendered pages exceed ${limit} bytes` });
  }, 60_000);
});
