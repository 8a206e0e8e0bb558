/**
 * The runsc backend with `restore` against real gVisor sandboxes (root,
 * runsc, LibreOffice, poppler-utils): the checkpoint image is made when the
 * backend prepares, documents convert in sandboxes restored from it (each
 * sandbox one document, through the LibreOffice of the image), sandboxes
 * restored side by side draw different names and random numbers, the time
 * limit still kills, a corrupt image falls back to a cold start (counted)
 * and is made again, and a change of what the image is made of makes a new
 * one, which removes the old only once no live backend restores from it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { folioFailure } from "../../test/support.ts";
import { PROJECT_ROOT, buildSandboxProgram } from "./assets.ts";
import type { ConversionFormat } from "./interface.ts";
import { RunscBackend, type RunscBackendOptions } from "./runsc.ts";
import { containers, onlyThePoolIsLeft as onlyPoolOf, poolHolds, sandboxModule, startScript } from "./runsc.testkit.ts";
import { pngInfo } from "./testdocs.ts";
import { WARM_UP_STEPS } from "./warmup.ts";

const FIXTURES = join(PROJECT_ROOT, "test", "fixtures", "convert");
/** Pages of each fixture as LibreOffice's own PDF has them. */
const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")) as { pdfPages: Record<string, number> };
const POOL = 2;
const work = mkdtempSync(join(tmpdir(), "folio-runsc-restore-test-"));

interface Finished {
  sandbox: string;
  prestarted: boolean;
  restored: boolean;
  timings?: Record<string, number>;
  afterRestore?: { scratch: string; random: number };
}

/** A logger that keeps what the backend says when each sandbox finishes, and its errors. */
function recordingLogger() {
  const finished: Finished[] = [];
  const errors: { fields: unknown; msg: string }[] = [];
  const logger = {
    debug: (fields: Finished, msg: string) => {
      if (msg === "sandbox finished") finished.push(fields);
    },
    info: () => undefined,
    warn: () => undefined,
    error: (fields: unknown, msg: string) => errors.push({ fields, msg }),
  };
  return { finished, errors, logger: logger as unknown as RunscBackendOptions["logger"] };
}

const pool = recordingLogger();
const backend = new RunscBackend({ workDir: join(work, "pool"), restore: true, prestart: true, prestartPool: POOL, logger: pool.logger });
const isRestored = (s: { ready: boolean; restored: boolean }) => s.ready && s.restored;
/** Waits until the pool holds `POOL` restored sandboxes. */
const poolRestored = () => poolHolds(backend, POOL, isRestored);
const onlyThePoolIsLeft = () => onlyPoolOf(backend, POOL, isRestored);

function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

async function counter(b: RunscBackend, name: "restores" | "fallbacks", reason?: string): Promise<number> {
  const { values } = await b.restoreMetrics[name].get();
  return values.filter((v) => reason === undefined || v.labels.reason === reason).reduce((sum, v) => sum + v.value, 0);
}

const one = (b: RunscBackend, name = "one-page.docx", format: ConversionFormat = "DOCX", timeoutMs = 60_000) =>
  b.convert({ document: fixture(name), format, maxPages: 10, timeoutMs });

beforeAll(() => backend.prepare().then(poolRestored), 180_000);
afterAll(() => backend.close().finally(() => rmSync(work, { recursive: true, force: true })));

describe("RunscBackend with restore", () => {
  it("makes the checkpoint image when it prepares, under its work folder, and fills the pool from it", async () => {
    const image = await backend.checkpointImage();
    expect(image?.startsWith(join(backend.workDir, "checkpoint"))).toBe(true);
    expect(readdirSync(image!)).toContain("complete");
    expect(backend.idleSandboxes().every((s) => s.restored)).toBe(true);
    expect(await counter(backend, "fallbacks")).toBe(0);
    // Stored uncompressed (imagefile.ts): the first chunk's first deflate block is a stored one (type 0).
    const state = readFileSync(join(image!, "checkpoint.img"));
    const firstChunk = 16 + Number(state.readBigUInt64BE(8)) + 32 + 4 + 4;
    expect(state.subarray(0, 8).toString("latin1")).toBe("gVisorSF");
    expect((state[firstChunk]! >> 1) & 3, "deflate block type of the first chunk").toBe(0);
  });

  it.each([
    ["one-page.docx", "DOCX"],
    ["two-pages.odt", "ODT"],
    ["slides.pptx", "PPTX"],
    ["hello.txt", "TXT"],
  ] as [string, ConversionFormat][])("converts %s in a restored sandbox, through the LibreOffice of the image", async (name, format) => {
    const pages = manifest.pdfPages[name]!;
    const idleBefore = backend.idleSandboxes().map((s) => s.id);
    const result = await one(backend, name, format);
    expect(result.pageCount).toBe(pages);
    expect(result.pages).toHaveLength(pages);
    for (const page of result.pages) expect(pngInfo(page).phys).toEqual({ x: 7874, y: 7874, unit: 1 });
    const last = pool.finished.at(-1);
    expect(last?.restored, JSON.stringify(last)).toBe(true);
    expect(idleBefore, "the sandbox came from the pool").toContain(last?.sandbox);
    expect(last?.timings?.warmOffice, JSON.stringify(last)).toBe(1);
    expect(last?.timings?.warmUp, "the image's LibreOffice ran every warm-up conversion before the checkpoint").toBe(WARM_UP_STEPS.length);
    // The image has no pdftoppm; the host's wake-up after the restore started the one for page 1 (short documents only).
    expect(last?.timings?.warmRenderer, "page 1 by the pdftoppm the wake-up started").toBe(pages <= 3 ? 1 : 0);
    await backend.settled();
    expect(containers(backend)).not.toContain(last?.sandbox);
    await onlyThePoolIsLeft();
  }, 90_000);

  it("uses each restored sandbox for one document, and sandboxes restored side by side draw their own names and random numbers", async () => {
    const before = pool.finished.length;
    const results = await Promise.all(Array.from({ length: 4 }, () => one(backend, "two-pages.docx")));
    expect(results.map((r) => r.pageCount)).toEqual([2, 2, 2, 2]);
    const runs = pool.finished.slice(before);
    expect(runs.every((r) => r.restored)).toBe(true);
    expect(new Set(runs.map((r) => r.sandbox)).size).toBe(4);
    // Without the reseed every sandbox restored from one image draws the same Math.random sequence.
    const drawn = runs.map((r) => r.afterRestore);
    expect(new Set(drawn.map((d) => d?.random)).size, JSON.stringify(drawn)).toBe(4);
    expect(new Set(drawn.map((d) => d?.scratch)).size, JSON.stringify(drawn)).toBe(4);
    await onlyThePoolIsLeft();
  }, 180_000);

  it("refuses a corrupt document with conversion_failed", async () => {
    const garbage = Buffer.from("PK\u0003\u0004 this is not really a zip archive at all".repeat(20));
    const err = await folioFailure(backend.convert({ document: garbage, format: "DOCX", maxPages: 10, timeoutMs: 60_000 }));
    expect(err.code, err.message).toBe("conversion_failed");
    await onlyThePoolIsLeft();
  }, 90_000);

  it("kills a restored sandbox at its time limit: timeout, and only the pool is left", async () => {
    const started = Date.now();
    const err = await folioFailure(one(backend, "two-pages.docx", "DOCX", 1));
    expect(err.code, err.message).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(15_000);
    await onlyThePoolIsLeft();
  }, 90_000);
});

describe("a checkpoint image that does not restore", () => {
  it("falls back to a cold start, counts it, logs why once, and makes the image again", async () => {
    const log = recordingLogger();
    const b = new RunscBackend({ workDir: join(work, "corrupt"), restore: true, logger: log.logger });
    await b.prepare();
    expect((await one(b)).pageCount).toBe(1);
    expect(log.finished.at(-1)?.restored).toBe(true);
    const image = (await b.checkpointImage())!;
    const corrupt = Buffer.from("not a checkpoint ".repeat(1000));
    for (const file of readdirSync(image).filter((f) => f !== "complete")) writeFileSync(join(image, file), corrupt);

    expect((await one(b)).pageCount).toBe(1);
    expect(log.finished.at(-1)?.prestarted, JSON.stringify(log.finished.at(-1))).toBe(false);
    expect(await counter(b, "fallbacks", "restore")).toBe(1);
    expect(log.errors.map((e) => e.msg)).toHaveLength(1);

    // Made again: the next document is restored from the new image.
    const remade = (await b.checkpointImage())!;
    expect(readFileSync(join(remade, "checkpoint.img")).equals(corrupt)).toBe(false);
    expect((await one(b)).pageCount).toBe(1);
    expect(log.finished.at(-1)?.restored).toBe(true);
    expect(await counter(b, "restores")).toBe(2);
    await b.settled();
    expect(containers(b)).toEqual([]);
    expect(readdirSync(join(b.workDir, "jobs"))).toEqual([]);
  }, 180_000);
});

describe("sandboxes a dead process left behind", () => {
  it("are left alone while their process lives, and removed when the next backend on the work folder prepares after it died: a restored sandbox never ends by itself", async () => {
    const workDir = join(work, "orphans");
    // A conversion service that is killed with two restored sandboxes waiting in its pool (the whole process group dies).
    const child = await startScript(
      join(work, "orphan-maker.mts"),
      `import { RunscBackend } from ${sandboxModule("runsc.ts")};\n` +
        `const b = new RunscBackend({ workDir: ${JSON.stringify(workDir)}, restore: true, prestart: true, prestartPool: 2 });\n` +
        `await b.prepare();\n` +
        `while (!(b.idleSandboxes().length === 2 && b.idleSandboxes().every((s) => s.ready && s.restored))) await new Promise((r) => setTimeout(r, 50));\n` +
        `console.log("pool ready");\n` +
        `setInterval(() => undefined, 1000);\n`,
      "pool ready",
    );
    const live = containers(new RunscBackend({ workDir }));
    expect(live).toHaveLength(2);
    await new RunscBackend({ workDir, logger: recordingLogger().logger }).prepare();
    expect(containers(new RunscBackend({ workDir })), "a live owner's sandboxes are not touched").toEqual(live);

    process.kill(-child.pid!, "SIGKILL");
    await new Promise((r) => child.once("exit", r));
    await new Promise((r) => setTimeout(r, 1000));
    expect(containers(new RunscBackend({ workDir })), "the killed process's restored sandboxes outlive it").toEqual(live);

    const next = new RunscBackend({ workDir, logger: recordingLogger().logger });
    await next.prepare();
    expect(containers(next)).toEqual([]);
    expect(readdirSync(join(workDir, "jobs"))).toEqual([]);
    const stray = spawnSync("pgrep", ["-f", "--", `--root=${next.stateDir} `], { encoding: "utf8" }).stdout.trim();
    expect(stray, "no runsc process of the dead one's is left").toBe("");
    expect((await one(next)).pageCount, "the work folder serves the next backend").toBe(1);
    await next.close();
  }, 240_000);
});

describe("the checkpoint image's key", () => {
  it("changes with what the image is made of (here the memory limit): a new image replaces the old once no live backend restores from it; the same key reuses it", async () => {
    const workDir = join(work, "keyed");
    const store = join(workDir, "checkpoint");
    // One program for all three (the tree's sources may change meanwhile).
    const program = await buildSandboxProgram(join(work, "keyed-program.mjs"));
    const backendWith = (options: RunscBackendOptions) => new RunscBackend({ workDir, restore: true, program, ...options });
    const firstBackend = backendWith({});
    const first = (await firstBackend.checkpointImage())!;
    const otherBackend = backendWith({ limits: { memoryBytes: 1024 * 1024 * 1024 } });
    const other = (await otherBackend.checkpointImage())!;
    expect(other).not.toBe(first);
    const names = (...dirs: string[]) => dirs.map((d) => d.slice(store.length + 1)).sort();
    expect(readdirSync(store).sort(), "the first backend, alive, still restores from its image").toEqual(names(first, other));
    expect((await one(firstBackend)).pageCount, "and restores from it after the other image was made").toBe(1);
    await firstBackend.close();
    const made = statSync(join(other, "complete")).mtimeMs;
    const againBackend = backendWith({ limits: { memoryBytes: 1024 * 1024 * 1024 } });
    const again = (await againBackend.checkpointImage())!;
    expect(again).toBe(other);
    expect(statSync(join(again, "complete")).mtimeMs).toBe(made);
    expect(readdirSync(store), "no live backend restores from the first image any more").toEqual(names(other));
    await Promise.all([otherBackend.close(), againBackend.close(), firstBackend.settled()]);
  }, 240_000);
});
