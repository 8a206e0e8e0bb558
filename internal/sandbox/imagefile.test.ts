/**
 * The checkpoint image's state file rewritten without compression: a
 * gVisor statefile built here the way runsc writes one (header, keyless
 * HMAC, compressio chunks of raw deflate) comes out with the same header
 * and every chunk as deflate stored blocks holding the same bytes; files of
 * any other shape are left byte for byte as they were.
 */
import { createHmac, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { storeUncompressed } from "./imagefile.ts";

const work = mkdtempSync(join(tmpdir(), "folio-imagefile-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const CHUNK = 4096;

/** State bytes that compress (runs) and some that do not (random). */
function state(bytes: number): Buffer {
  const out = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i += 512) {
    if ((i / 512) % 2) randomBytes(Math.min(512, bytes - i)).copy(out, i);
    else out.fill(i % 251, i, Math.min(bytes, i + 512));
  }
  return out;
}

/** A state file as runsc writes one; `key` for the HMAC (runsc: none), `chunks` of state, `tail` appended. */
function statefile({ key = Buffer.alloc(0), chunks = [CHUNK, CHUNK, 1000], tail = Buffer.alloc(0), magic = "gVisorSF" } = {}): { file: Buffer; chunks: Buffer[] } {
  const metadata = Buffer.from(JSON.stringify({ _timestamp: "2026-11-26 20:35:04 +0000 UTC", cpu_usage: "700ms" }));
  const length = Buffer.alloc(8);
  length.writeBigUInt64BE(BigInt(metadata.length));
  const header = Buffer.concat([Buffer.from(magic, "latin1"), length, metadata]);
  const sum = createHmac("sha256", key).update(header).digest();
  const size = Buffer.alloc(4);
  size.writeUInt32BE(CHUNK);
  const states = chunks.map(state);
  const body = states.flatMap((s) => {
    const compressed = deflateRawSync(s, { level: 1 });
    const l = Buffer.alloc(4);
    l.writeUInt32BE(compressed.length);
    return [l, compressed];
  });
  return { file: Buffer.concat([header, sum, size, ...body, tail]), chunks: states };
}

/** The chunks of a state file: each chunk's raw deflate bytes. */
function chunksOf(file: Buffer): Buffer[] {
  const metadataLength = Number(file.readBigUInt64BE(8));
  let at = 16 + metadataLength + 32 + 4;
  const out: Buffer[] = [];
  while (at < file.length) {
    const length = file.readUInt32BE(at);
    out.push(file.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return out;
}

/** The deflate block types of a raw deflate stream of stored blocks (stops at the first block of another type). */
function blockTypes(deflate: Buffer): number[] {
  const types: number[] = [];
  for (let at = 0; at < deflate.length; ) {
    const type = (deflate[at]! >> 1) & 3;
    types.push(type);
    if (type !== 0) break;
    const length = deflate.readUInt16LE(at + 1);
    at += 5 + length;
  }
  return types;
}

describe("storeUncompressed", () => {
  it("rewrites every chunk of a keyless state file as stored blocks with the same bytes, and keeps the header", async () => {
    const { file, chunks } = statefile();
    const path = join(work, "good.img");
    writeFileSync(path, file);
    const outcome = await storeUncompressed(path);
    const after = readFileSync(path);
    expect(outcome).toEqual({ stored: true, compressedBytes: file.length, storedBytes: after.length, chunks: 3 });
    const headerBytes = 16 + Number(file.readBigUInt64BE(8)) + 32 + 4;
    expect(after.subarray(0, headerBytes).equals(file.subarray(0, headerBytes))).toBe(true);
    const stored = chunksOf(after);
    expect(stored).toHaveLength(3);
    stored.forEach((chunk, i) => {
      expect(new Set(blockTypes(chunk)), `chunk ${i}: stored blocks only`).toEqual(new Set([0]));
      expect(inflateRawSync(chunk).equals(chunks[i]!), `chunk ${i}: the same state`).toBe(true);
    });
    expect(after.length).toBeGreaterThan(chunks.reduce((n, c) => n + c.length, 0));
  });

  it.each([
    ["another magic", () => statefile({ magic: "gVisorXX" }).file, /magic/],
    ["a keyed HMAC (chunks would carry hashes)", () => statefile({ key: Buffer.from("secret") }).file, /not keyless/],
    ["a truncated last chunk", () => statefile().file.subarray(0, -10), /ends inside/],
    ["bytes after the last chunk", () => statefile({ tail: Buffer.from([0, 0]) }).file, /ends inside/],
    ["a chunk that is not deflate", () => Buffer.concat([statefile({ chunks: [] }).file, Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff])]), /not raw deflate/],
    ["a chunk holding more than the chunk size", () => statefile({ chunks: [CHUNK + 1] }).file, /more than 4096/],
  ] as const)("leaves a file with %s as it was, and says why", async (_label, make, reason) => {
    const file = make();
    const path = join(work, `bad-${Math.random()}.img`);
    writeFileSync(path, file);
    const outcome = await storeUncompressed(path);
    expect(outcome.stored).toBe(false);
    expect(outcome.stored === false && outcome.reason).toMatch(reason);
    expect(readFileSync(path).equals(file)).toBe(true);
  });
});
