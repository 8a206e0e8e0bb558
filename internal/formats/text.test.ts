/**
 * readText: plain text in UTF-8 (with or without BOM), UTF-16 with BOM,
 * Windows-1252/Latin-1 and the Cyrillic code pages reads as the same text
 * as its UTF-8 twin (real files, test/fixtures/convert/encodings); binary
 * bytes are refused with the reason.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readText, type TextEncoding } from "./index.ts";

const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/convert/encodings/${name}`, import.meta.url));
const twin = (family: string) => fixture(`${family}.utf8.txt`).toString("utf8");

describe("readText reads real files in each encoding as their UTF-8 twin", () => {
  it.each([
    ["western.utf8.txt", "utf-8", false],
    ["western.utf8-bom.txt", "utf-8", true],
    ["western.utf16le-bom.txt", "utf-16le", true],
    ["western.utf16be-bom.txt", "utf-16be", true],
    ["western.windows-1252.txt", "windows-1252", false],
    ["russian.utf8.txt", "utf-8", false],
    ["russian.cp866.txt", "ibm866", false],
    ["russian.windows-1251.txt", "windows-1251", false],
    ["russian.koi8-r.txt", "koi8-r", false],
  ] as [string, TextEncoding, boolean][])("%s: %s", (name, encoding, bom) => {
    const reading = readText(fixture(name));
    expect(reading.ok ? { encoding: reading.encoding, bom: reading.bom } : reading).toEqual({ encoding, bom });
    if (!reading.ok) return;
    // The CRLF files say the same with other line ends.
    expect(reading.text.replace(/\r\n/g, "\n")).toBe(twin(name.split(".")[0] as string));
  });

  it("reads Latin-1 (ISO-8859-1) bytes as the same letters", () => {
    const reading = readText(Buffer.from("Grüße aus Köln, naïve façade, 10 °C\n", "latin1"));
    expect(reading).toMatchObject({ ok: true, encoding: "windows-1252", text: "Grüße aus Köln, naïve façade, 10 °C\n" });
  });

  it("keeps mostly-ASCII Western text Windows-1252 even when it has many accents", () => {
    expect(readText(Buffer.from("été à Noël, déjà élu\n", "latin1"))).toMatchObject({ ok: true, encoding: "windows-1252" });
  });

  it("reads text that starts like a binary signature, and plain ASCII, as UTF-8", () => {
    expect(readText(Buffer.from("GIF87a is an old format.\n"))).toMatchObject({ ok: true, encoding: "utf-8" });
  });
});

describe("readText refuses binary bytes and says why", () => {
  // A fixed pseudo-random sequence: the same "junk" on every run.
  const junk = (length: number, seed = 7) => {
    const out = Buffer.alloc(length);
    for (let i = 0, x = seed; i < length; i++) out[i] = (x = (x * 1103515245 + 12345) & 0x7fffffff) >> 16;
    return out;
  };

  it.each([
    ["NUL bytes", Buffer.from("hello\0world"), /NUL bytes/],
    ["UTF-16 without a byte-order mark", Buffer.from("plain words\n", "utf16le"), /NUL bytes.*byte-order mark/],
    ["mostly control characters", Buffer.from("\x01\x02\x03\x04\x05abc"), /control characters/],
    ["random bytes", junk(4096), /NUL|control characters/],
    ["random bytes without a single NUL", Buffer.from(junk(4096).map((b) => b || 1)), /control characters/],
    ["a UTF-16 BOM and an odd length", Buffer.from([0xff, 0xfe, 0x41, 0x00, 0x42]), /odd number of bytes/],
    ["a lone surrogate after a UTF-16 BOM", Buffer.from([0xff, 0xfe, 0x41, 0x00, 0x00, 0xd8, 0x41, 0x00]), /not valid UTF-16LE/],
    ["a UTF-8 BOM and invalid UTF-8", Buffer.from([0xef, 0xbb, 0xbf, 0x41, 0xc3, 0x28]), /not valid UTF-8/],
    ["a PNG", readFileSync(new URL("../../test/fixtures/ocr/english.png", import.meta.url)), /NUL bytes/],
    ["an empty file", Buffer.alloc(0), /empty/],
  ])("%s", (_what, bytes, problem) => {
    const reading = readText(bytes);
    expect(reading.ok, JSON.stringify(reading).slice(0, 200)).toBe(false);
    if (!reading.ok) expect(reading.problem).toMatch(problem);
  });
});
