/**
 * The runsc backend with `prestart` against real gVisor sandboxes (root,
 * runsc, LibreOffice, poppler-utils, tesseract-ocr): documents handed to
 * sandboxes started ahead of them convert through the LibreOffice already
 * running there, each sandbox serves one document, the pool stays bounded,
 * the time limit and cancellation still kill, linked content is still not
 * fetched, and close() leaves nothing behind.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { folioFailure } from "../../test/support.ts";
import { PROJECT_ROOT } from "./assets.ts";
import type { ConversionFormat } from "./interface.ts";
import { RunscBackend } from "./runsc.ts";
import { containers as containersOf, onlyThePoolIsLeft as onlyPoolOf, poolHolds } from "./runsc.testkit.ts";
import { linkedImageDocx, pagedDocx, pngInfo, startCanaryServer, type CanaryServer } from "./testdocs.ts";
import { sharingAssets } from "../../test/sandbox-assets.ts";

const FIXTURES = join(PROJECT_ROOT, "test", "fixtures", "convert");
const POOL = 2;
const work = mkdtempSync(join(tmpdir(), "folio-runsc-prestart-test-"));

/** What the backend logged when each sandbox finished (the program's timings among it). */
const finished: { sandbox: string; prestarted: boolean; timings?: Record<string, number> }[] = [];
const logger = {
  debug: (fields: { sandbox: string; prestarted: boolean; timings?: Record<string, number> }, msg: string) => {
    if (msg === "sandbox finished") finished.push(fields);
  },
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
const backend = new RunscBackend({ workDir: sharingAssets(join(work, "backend")), prestart: true, prestartPool: POOL, logger: logger as never });
const containers = (b: RunscBackend = backend) => containersOf(b);
/** Waits until the pool holds `size` sandboxes whose LibreOffice listens. */
const poolReady = (b: RunscBackend = backend, size = POOL) => poolHolds(b, size);
const onlyThePoolIsLeft = () => onlyPoolOf(backend, POOL);

function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

beforeAll(async () => {
  await backend.prepare();
  await poolReady();
}, 120_000);

afterAll(async () => {
  await backend.close();
  rmSync(work, { recursive: true, force: true });
});

describe("RunscBackend with prestart", () => {
  it.each([
    ["one-page.docx", "DOCX", 1],
    ["slides.pptx", "PPTX", 2],
    ["hello.txt", "TXT", 1],
  ] as [string, ConversionFormat, number][])("converts %s in an idle pre-started sandbox, through the LibreOffice already running there", async (name, format, pages) => {
    const idleBefore = backend.idleSandboxes().map((s) => s.id);
    const result = await backend.convert({ document: fixture(name), format, maxPages: 10, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(pages);
    expect(result.computeMillis).toBeGreaterThan(0);
    for (const page of result.pages) expect(pngInfo(page).phys).toEqual({ x: 7874, y: 7874, unit: 1 });
    const last = finished.at(-1);
    expect(last?.prestarted).toBe(true);
    expect(idleBefore, "the sandbox came from the pool").toContain(last?.sandbox);
    expect(last?.timings?.warmOffice, JSON.stringify(last)).toBe(1);
    // It served its one document and is gone (removed after the answer); a replacement took its place.
    await backend.settled();
    expect(containers()).not.toContain(last?.sandbox);
    await onlyThePoolIsLeft();
  }, 90_000);

  it("uses every sandbox for one document only, and keeps the pool at its size under concurrent conversions", async () => {
    const before = finished.length;
    const results = await Promise.all(Array.from({ length: 4 }, () => backend.convert({ document: fixture("two-pages.docx"), format: "DOCX", maxPages: 10, timeoutMs: 90_000 })));
    expect(results.map((r) => r.pageCount)).toEqual([2, 2, 2, 2]);
    const used = finished.slice(before).map((f) => f.sandbox);
    expect(new Set(used).size).toBe(4);
    expect(backend.idleSandboxes().length).toBeLessThanOrEqual(POOL);
    await onlyThePoolIsLeft();
  }, 180_000);

  it("refuses corrupt and password-protected documents with conversion_failed", async () => {
    const garbage = Buffer.from("PK\u0003\u0004 this is not really a zip archive at all".repeat(20));
    for (const [label, document, format] of [
      ["garbage", garbage, "DOCX"],
      ["password-protected", fixture("password.odt"), "ODT"],
    ] as const) {
      const err = await folioFailure(backend.convert({ document, format, maxPages: 10, timeoutMs: 60_000 }));
      expect(err.code, `${label}: ${err.message}`).toBe("conversion_failed");
      expect(err.message).toMatch(/could not read the document/);
    }
    await onlyThePoolIsLeft();
  }, 120_000);

  it.each([1, 500])("kills a pre-started sandbox %d ms after the hand-in: timeout, and only the pool is left", async (timeoutMs) => {
    await poolReady();
    const started = Date.now();
    // 30 pages take seconds to render: the limit falls inside the conversion, whatever the machine.
    const err = await folioFailure(backend.convert({ document: pagedDocx(30), format: "DOCX", maxPages: 40, timeoutMs }));
    expect(err.code, err.message).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(15_000);
    await onlyThePoolIsLeft();
  }, 90_000);

  it("kills a pre-started sandbox when the caller gives up", async () => {
    await poolReady();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("caller went away")), 200);
    const err = await backend.convert({ document: pagedDocx(30), format: "DOCX", maxPages: 40, timeoutMs: 60_000 }, controller.signal).catch((e: unknown) => e);
    expect((err as Error).message).toBe("caller went away");
    await onlyThePoolIsLeft();
  }, 90_000);

  it("drops an idle sandbox that dies and converts the next document all the same", async () => {
    await poolReady();
    const victim = backend.idleSandboxes()[0]!.id;
    execFileSync("runsc", [`--root=${backend.stateDir}`, "kill", victim, "KILL"]);
    const until = Date.now() + 20_000;
    while (backend.idleSandboxes().some((s) => s.id === victim) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(backend.idleSandboxes().map((s) => s.id)).not.toContain(victim);
    const result = await backend.convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 10, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(1);
    await onlyThePoolIsLeft();
    expect(readdirSync(join(backend.workDir, "jobs"))).not.toContain(victim);
  }, 120_000);
});

describe("linked content in a document handed to a pre-started sandbox", () => {
  const canaryText = `CANARY${Math.floor(Math.random() * 9000 + 1000)}`;
  let canary: CanaryServer;

  beforeAll(async () => {
    canary = await startCanaryServer(canaryText);
  });
  afterAll(() => canary?.close());

  it("is never fetched: the page shows no canary and the server sees no request", async () => {
    canary.requests.length = 0;
    await poolReady();
    const result = await backend.convert({ document: linkedImageDocx("Visible body text", [canary.url]), format: "DOCX", maxPages: 5, timeoutMs: 60_000 });
    expect(finished.at(-1)?.timings?.warmOffice).toBe(1);
    const png = join(work, "ocr.png");
    writeFileSync(png, result.pages[0]!);
    const text = execFileSync("tesseract", [png, "stdout"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    // Case and spacing as the font set and the OCR model give them (not glyph by glyph).
    expect(text).toMatch(/visible\s+body\s+text/i);
    expect(text).not.toMatch(/CANARY/i);
    expect(canary.requests).toEqual([]);
  }, 60_000);
});

describe("RunscBackend.close with prestart", () => {
  it("kills the idle sandboxes and removes their folders; later documents get a sandbox of their own", async () => {
    const other = new RunscBackend({ workDir: sharingAssets(join(work, "closing")), prestart: true, prestartPool: POOL });
    await other.prepare();
    await poolReady(other);
    expect(containers(other)).toHaveLength(POOL);
    await other.close();
    expect(other.idleSandboxes()).toEqual([]);
    expect(containers(other)).toEqual([]);
    expect(readdirSync(join(other.workDir, "jobs"))).toEqual([]);
    const result = await other.convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 10, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(1);
    await other.settled();
    expect(other.idleSandboxes()).toEqual([]);
    expect(containers(other)).toEqual([]);
    expect(readdirSync(join(other.workDir, "jobs"))).toEqual([]);
  }, 120_000);
});
