/** Helpers shared by unit and integration tests: OCR fixtures, expected failures, and closing what a test started. */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import type { Server as HttpServer } from "node:http";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { FolioError } from "../internal/platform/errors/index.ts";
import { cer } from "./cer.ts";
import type { ExtractOptions, PageInput, PageResult } from "../internal/extraction/types.ts";

const OCR_FIXTURES = new URL("./fixtures/ocr/", import.meta.url);

/** Path of test/fixtures/ocr/<name>. */
export const ocrFixturePath = (name: string): string => fileURLToPath(new URL(name, OCR_FIXTURES));
/** Bytes of test/fixtures/ocr/<name>. */
export const ocrFixture = (name: string): Buffer => readFileSync(new URL(name, OCR_FIXTURES));
/** Ground truth text of test/fixtures/ocr/<name>. */
export const ocrTruth = (name: string): string => readFileSync(new URL(name, OCR_FIXTURES), "utf8");
/** The character error rates the tesseract engine's tests hold it to on the OCR fixtures (a clean page, the degraded scan); bench/ocr-engines.ts compares other engines against the same. */
export const TESSERACT_CER = { clean: 0.02, scan: 0.12 } as const;

/** Fails unless `text` reads as test/fixtures/ocr/<truthName> with a character error rate under `below`; the message shows the rate and the text. */
export function expectCerBelow(text: string, truthName: string, below: number, what?: string): void {
  const rate = cer(text, ocrTruth(truthName));
  expect(rate, `${what ? `${what}: ` : ""}CER ${rate.toFixed(4)} for:\n${text}`).toBeLessThan(below);
}
/** A PNG page for an engine. */
export const pngPage = (image: Buffer, pageNumber = 1): PageInput => ({ pageNumber, image, mimeType: "image/png" });
export const TEXT_OPTIONS: ExtractOptions = { extractTables: false, outputFormat: "text" };
/** What a local engine's read of a clean fixture page shows: text near test/fixtures/ocr/<truthName>, a confidence in (minConfidence, 1], no tables, nothing paid. */
export function expectCleanLocalRead(r: PageResult, truthName: string, maxCer: number, minConfidence: number): void {
  expectCerBelow(r.text, truthName, maxCer);
  expect(r.confidence).toBeGreaterThan(minConfidence);
  expect(r.confidence).toBeLessThanOrEqual(1);
  expect(r.tables).toEqual([]);
  expect(r.usage).toEqual({ promptTokens: 0, completionTokens: 0, reportedCostCents: null });
}

/** A signal that never aborts. */
export const liveSignal = (): AbortSignal => new AbortController().signal;

/** The FolioError `p` rejects with; fails the test when it resolves or rejects with something else. */
export async function folioFailure(p: Promise<unknown>, what = "the call"): Promise<FolioError> {
  // A resolved value is kept, so that a failure shows what came instead.
  const got = await p.then(
    (value) => ({ resolved: value }),
    (e: unknown) => e,
  );
  expect(got, `expected ${what} to fail with a FolioError`).toBeInstanceOf(FolioError);
  return got as FolioError;
}

/** A loopback port nothing listens on (it was free a moment ago): for a server to start on, or a client to find closed. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A seeded generator of numbers in [0, 1) (mulberry32): the same run each time. */
export function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Whether bubblewrap runs here (the parser jail's tests skip, saying so, where it does not). */
export const bwrapInstalled = spawnSync("bwrap", ["--version"], { stdio: "ignore" }).status === 0;

/**
 * A JPEG with a JFIF header stating its density (`units` 1: per inch, 2: per
 * centimetre, 0: an aspect ratio only), put right after its SOI marker: sharp
 * writes JPEGs without one, and tesseract's own reader (leptonica) takes a
 * JPEG's resolution from JFIF alone.
 */
export function withJfif(jpeg: Buffer, units: 0 | 1 | 2, density: number): Buffer {
  const app0 = Buffer.alloc(18);
  app0.writeUInt16BE(0xffe0, 0);
  app0.writeUInt16BE(16, 2);
  app0.write("JFIF\0", 4, "latin1");
  app0.writeUInt16BE(0x0101, 9);
  app0[11] = units;
  app0.writeUInt16BE(density, 12);
  app0.writeUInt16BE(density, 14);
  return Buffer.concat([jpeg.subarray(0, 2), app0, jpeg.subarray(2)]);
}

/** Anything a test started that `close()` stops (a service, a database, a test double), or nothing where it never started. */
export type Closable = { close(): unknown } | null | undefined;

/**
 * Closes each in turn, in the order given (the last started first, as a
 * file's `afterAll` wants), skipping what never started; the first failure
 * stops there, as a chain of `await x?.close()` would.
 */
export async function closeAll(...things: Closable[]): Promise<void> {
  for (const thing of things) await thing?.close();
}

/** Closes a node:http server a test started, its open connections too; nothing where it never started. */
export function closeServer(server: HttpServer | undefined): Promise<void> {
  return new Promise<void>((r) => (server ? (server.closeAllConnections(), server.close(() => r())) : r()));
}
