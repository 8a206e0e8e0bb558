/**
 * The resident tesseract program (native/tesseract-server.cc, built by `make
 * deps`) and its pool (tesseract-server.ts): the same readings as the
 * tesseract CLI on the same pixels, page after page and language after
 * language in one program; what it refuses; how a killed, aborted or idle
 * program is replaced. The real program and the real CLI throughout; the
 * jail's part needs bubblewrap (skipped, saying so, where it is missing).
 */
import { readFileSync } from "node:fs";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { bwrapInstalled } from "../../../test/support.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { useParserJail } from "../../platform/jail/index.ts";
import { decodeGrey, encodePgm } from "../layout/image.ts";
import type { ExtractOptions, PageInput } from "../types.ts";
import { TesseractEngine } from "./tesseract.ts";
import { builtResidentProgram, ResidentTesseract, type RawPage } from "./tesseract-server.ts";

const fixture = (name: string) => readFileSync(new URL(`../../../test/fixtures/ocr/${name}`, import.meta.url));
const program = builtResidentProgram();
const pools: ResidentTesseract[] = [];
const pool = (idleMs?: number) => {
  if (!program) throw new Error("native/build/folio-tesseract is not built: `make deps` builds it (scripts/build-native.sh)");
  const p = new ResidentTesseract({ program, threads: 1, access: {}, maxOutputBytes: 32 * 1024 * 1024, ...(idleMs ? { idleMs } : {}) });
  pools.push(p);
  return p;
};
const signal = () => new AbortController().signal;
const options = {} as ExtractOptions;
const page = (image: Buffer, pageNumber = 1): PageInput => ({ pageNumber, image, mimeType: "image/png" }) as PageInput;

async function greyPage(name: string): Promise<{ pgm: Buffer; raw: RawPage }> {
  const g = await decodeGrey(fixture(name));
  return { pgm: encodePgm(g), raw: { width: g.width, height: g.height, channels: 1, data: g.pixels, dpi: null } };
}

afterEach(() => useParserJail("none"));
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

describe("the resident tesseract program", () => {
  it("is built by the project's own install step", () => {
    expect(program, "scripts/ensure-deps.sh builds native/build/folio-tesseract").toBeDefined();
  });

  it("reads pages one after another, in two languages, as the CLI reads each of them", async () => {
    const cli = new TesseractEngine({ resident: null });
    const resident = new TesseractEngine({ resident: pool() });
    // PGMs (a PDF page's way) and PNGs (the decoder child's way); English, German, English again in one program.
    const pages: [PageInput, string][] = [
      [page((await greyPage("english.png")).pgm), "eng"],
      [page(fixture("german.png"), 2), "deu"],
      [page(fixture("columns.png"), 3), "eng"],
      [page((await greyPage("table.png")).pgm, 4), "eng"],
    ];
    for (const [p, lang] of pages) {
      const [a, b] = [await cli.read(p, lang, options, signal()), await resident.read(p, lang, options, signal())];
      expect(b.text, `page ${p.pageNumber}`).toBe(a.text);
      expect(b.text.length).toBeGreaterThan(100);
      expect(b.confidence).toBe(a.confidence);
      expect(await resident.trial(p, lang, signal())).toEqual(await cli.trial(p, lang, signal()));
    }
    expect(pools.at(-1)!.size).toBe(1);
  });

  it("answers the CLI's TSV, header line included", async () => {
    const { raw } = await greyPage("english.png");
    const tsv = await pool().read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 1 }, signal(), 60_000);
    const lines = tsv.split("\n");
    expect(lines[0]).toBe("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext");
    expect(lines[1]).toMatch(/^1\t1\t0\t0\t0\t0\t0\t0\t\d+\t\d+\t-1\t$/);
    expect(lines.filter((l) => l.startsWith("5\t")).length).toBeGreaterThan(50);
  });

  it("refuses a language that is not a traineddata name without asking the program", async () => {
    const p = pool();
    const { raw } = await greyPage("english.png");
    await expect(p.read({ output: "tsv", lang: "eng --psm 0", psm: 3, page: raw, pageNumber: 1 }, signal(), 60_000)).rejects.toMatchObject({ code: "invalid_request" });
    expect(p.size).toBe(1);
    // The program is still there and reads.
    expect(await p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 1 }, signal(), 60_000)).toContain("\t");
  });

  it("says so when a language is not installed, and keeps reading others", async () => {
    const p = pool();
    const { raw } = await greyPage("english.png");
    const err = await p.read({ output: "tsv", lang: "xyz", psm: 3, page: raw, pageNumber: 7 }, signal(), 60_000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FolioError);
    expect((err as FolioError).code).toBe("internal_error");
    expect(String((err as Error).cause)).toContain("xyz");
    expect(await p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 1 }, signal(), 60_000)).toContain("\t");
  });

  it("fails the reading of a program that dies, and reads the next page with a new one", async () => {
    const p = pool();
    const { raw } = await greyPage("english.png");
    await p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 1 }, signal(), 60_000);
    // A timeout of 1 ms kills the program in the middle of the page.
    const err = await p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 2 }, signal(), 1).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "timeout" });
    await expect.poll(() => p.size).toBe(0);
    expect(await p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 3 }, signal(), 60_000)).toContain("\t");
    expect(p.size).toBe(1);
  });

  it("stops at an abort with its reason", async () => {
    const p = pool();
    const { raw } = await greyPage("english.png");
    const ac = new AbortController();
    const reading = p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 1 }, ac.signal, 60_000);
    setTimeout(() => ac.abort(new Error("client went away")), 50);
    await expect(reading).rejects.toThrow("client went away");
    await expect.poll(() => p.size).toBe(0);
  });

  it("reads two pages at once with two programs, and lets an idle one exit", async () => {
    // Idle for 3 s before exiting: on a loaded machine the two readings can end a second apart, and the
    // first program must still be there when the second ends.
    const p = pool(3_000);
    const { raw } = await greyPage("english.png");
    const [a, b] = await Promise.all([1, 2].map((n) => p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: n }, signal(), 60_000)));
    expect(a).toBe(b);
    expect(p.size).toBe(2);
    await expect.poll(() => p.size, { timeout: 15_000 }).toBe(0);
  });

  it("gives a reading asked for as an idle program is told to exit to a new program, not to the one exiting", async () => {
    // The idle timer of the first reading's program is set before this test's timer of the same length, so it fires
    // first and the second reading is asked for in the same turn of the event loop, before that program has exited.
    const idleMs = 200;
    const p = pool(idleMs);
    const { raw } = await greyPage("english.png");
    const read = () => p.read({ output: "tsv", lang: "eng", psm: 3, page: raw, pageNumber: 2 }, signal(), 60_000);
    const first = await read();
    await new Promise((r) => setTimeout(r, idleMs));
    expect(await read()).toBe(first);
  });

  it("refuses pixels that are not width × height × channels bytes", async () => {
    const p = pool();
    const err = await p
      .read({ output: "tsv", lang: "eng", psm: 3, page: { width: 10, height: 10, channels: 1, data: new Uint8Array(99), dpi: null }, pageNumber: 1 }, signal(), 60_000)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "internal_error" });
    expect(String((err as Error).cause)).toContain("width × height × channels");
  });

  it.skipIf(!bwrapInstalled)("reads in the parser jail as it reads without", async () => {
    const { raw } = await greyPage("english.png");
    const req = { output: "tsv" as const, lang: "eng", psm: 3, page: raw, pageNumber: 1 };
    const plain = await pool().read(req, signal(), 60_000);
    useParserJail("bwrap");
    expect(await pool().read(req, signal(), 60_000)).toBe(plain);
  });
});
