/**
 * The development-only backend: same converter and profile as the sandbox,
 * a warning on every document, and the profile's settings alone keep linked
 * content from being fetched (here nothing else would stop it).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { PROJECT_ROOT } from "./assets.ts";
import { canarySvg, linkedImageDocx, linkedImageOdt, pagedDocx, pngInfo, startCanaryServer, type CanaryServer } from "./testdocs.ts";
import { UnsandboxedBackend } from "./unsandboxed.ts";

const work = mkdtempSync(join(tmpdir(), "folio-unsandboxed-test-"));
const warnings: unknown[][] = [];
const backend = new UnsandboxedBackend({ workDir: join(work, "backend"), logger: { warn: (...args: unknown[]) => warnings.push(args) } as never });

let canary: CanaryServer;
const canaryText = `CANARY${Math.floor(Math.random() * 9000 + 1000)}`;

beforeAll(async () => {
  writeFileSync(join(work, "canary.svg"), canarySvg(canaryText));
  canary = await startCanaryServer(canaryText);
  await backend.prepare();
}, 60_000);

afterAll(async () => {
  await canary?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("UnsandboxedBackend", () => {
  it("converts with the same converter and warns on every document", async () => {
    const before = warnings.length;
    const document = readFileSync(join(PROJECT_ROOT, "test", "fixtures", "convert", "two-pages.docx"));
    const result = await backend.convert({ document, format: "DOCX", maxPages: 5, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(2);
    expect(pngInfo(result.pages[0] as Buffer)).toMatchObject({ width: 1654, height: 2339, phys: { x: 7874, y: 7874, unit: 1 } });
    await backend.convert({ document: Buffer.from("hi\n"), format: "TXT", maxPages: 5, timeoutMs: 60_000 });
    expect(warnings.length - before).toBe(2);
    expect(String(warnings.at(-1)?.[1])).toMatch(/WITHOUT a sandbox/);
  }, 60_000);

  it("hands back LibreOffice's PDF and its page count with output pdf, rendering no page", async () => {
    const document = readFileSync(join(PROJECT_ROOT, "test", "fixtures", "convert", "two-pages.docx"));
    const result = await backend.convert({ document, format: "DOCX", maxPages: 5, output: "pdf", timeoutMs: 60_000 });
    expect(result).toMatchObject({ pages: [], pageCount: 0, documentPageCount: 2 });
    expect(result.pdf?.subarray(0, 5).toString("latin1")).toBe("%PDF-");
    const text = execFileSync("pdftotext", ["-", "-"], { input: result.pdf, encoding: "utf8" });
    expect(text).toMatch(/quick brown fox/i);
    // The limit still counts the document's pages: over it is the caller's 400, as a PDF's (docs/errors.md).
    await expect(backend.convert({ document, format: "DOCX", maxPages: 1, output: "pdf", timeoutMs: 60_000 })).rejects.toMatchObject({ code: "invalid_request" });
  }, 120_000);

  it("answers timeout when the conversion runs past the limit", async () => {
    // 30 pages take seconds to render: the limit falls inside the conversion, whatever the machine.
    const err = await backend.convert({ document: pagedDocx(30), format: "DOCX", maxPages: 40, timeoutMs: 300 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FolioError);
    expect((err as FolioError).code).toBe("timeout");
  }, 30_000);

  it.each([
    ["DOCX", () => linkedImageDocx("Visible body text", [`file://${join(work, "canary.svg")}`, canary.url])],
    ["ODT", () => linkedImageOdt("Visible body text", [`file://${join(work, "canary.svg")}`, canary.url])],
  ] as const)("never fetches linked images (%s): the profile's settings alone block file and http links", async (format, make) => {
    canary.requests.length = 0;
    const result = await backend.convert({ document: make(), format, maxPages: 5, timeoutMs: 60_000 });
    const png = join(work, `page-${format}.png`);
    writeFileSync(png, result.pages[0] as Buffer);
    const text = execFileSync("tesseract", [png, "stdout"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    // Case and spacing as the font set and the OCR model give them (not glyph by glyph).
    expect(text).toMatch(/visible\s+body\s+text/i);
    expect(text).not.toMatch(/CANARY/i);
    expect(canary.requests).toEqual([]);
  }, 60_000);
});
