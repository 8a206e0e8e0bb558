import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { checkDocumentIsFormat, formatForMimeType } from "./formats.ts";
import { folioFailure } from "../../test/support.ts";

const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/convert/${name}`, import.meta.url));
const png = readFileSync(new URL("../../test/fixtures/ocr/english.png", import.meta.url));
const SUPPORTED = ["DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"];

describe("formatForMimeType", () => {
  it.each([
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "DOCX"],
    ["application/vnd.openxmlformats-officedocument.presentationml.presentation", "PPTX"],
    ["application/msword", "DOC"],
    ["application/vnd.oasis.opendocument.text", "ODT"],
    ["application/rtf", "RTF"],
    ["text/rtf", "RTF"],
    ["text/plain", "TXT"],
    ["Text/Plain; charset=utf-8", "TXT"],
  ])("%s is %s", (mime, format) => {
    expect(formatForMimeType(mime)).toBe(format);
  });

  it("refuses anything else with unsupported_format, the param and the spec's list", () => {
    let err: unknown;
    try {
      formatForMimeType("application/vnd.ms-excel");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FolioError);
    expect((err as FolioError).code).toBe("unsupported_format");
    expect((err as FolioError).param).toBe("mimeType");
    expect((err as FolioError).extra.supported_formats).toEqual(SUPPORTED);
  });
});

describe("checkDocumentIsFormat", () => {
  it.each([
    ["two-pages.docx", "DOCX"],
    ["slides.pptx", "PPTX"],
    ["two-pages.doc", "DOC"],
    ["two-pages.odt", "ODT"],
    ["two-pages.rtf", "RTF"],
    ["hello.txt", "TXT"],
    ["encodings/western.utf8-bom.txt", "TXT"],
    ["encodings/western.utf16le-bom.txt", "TXT"],
    ["encodings/western.utf16be-bom.txt", "TXT"],
    ["encodings/western.windows-1252.txt", "TXT"],
    ["encodings/russian.cp866.txt", "TXT"],
  ] as const)("accepts %s as %s", async (name, format) => {
    await expect(checkDocumentIsFormat(fixture(name), format)).resolves.toBeUndefined();
  });

  it.each([
    ["a PPTX declared DOCX", () => fixture("slides.pptx"), "DOCX", /bytes are a PPTX document; declare it as application\/vnd\.openxmlformats-officedocument\.presentationml/],
    ["a PNG declared DOCX", () => png, "DOCX", /bytes are an image \(image\/png\).*\/v1\/ocr/],
    ["plain text declared RTF", () => fixture("hello.txt"), "RTF", /bytes are plain text/],
    ["a DOCX declared TXT", () => fixture("two-pages.docx"), "TXT", /bytes are a DOCX document/],
  ] as const)("refuses %s as unsupported_format naming what the bytes are", async (_what, bytes, format, message) => {
    const err = await folioFailure(checkDocumentIsFormat(bytes(), format));
    expect(err.code).toBe("unsupported_format");
    expect(err.message).toMatch(message);
    expect(err.extra.supported_formats).toEqual(SUPPORTED);
  });

  it.each([
    ["NUL bytes", Buffer.from([0x00, 0x01, 0x02, 0xfe, 0xff]), /binary data, not text in UTF-8 .*Windows-1252.*: it holds NUL bytes/],
    ["control characters", Buffer.from("\x01\x02\x03\x04\x05\x06\x1b[0m abc"), /binary data, not text .*: \d+% of it are control characters/],
    ["UTF-16 without a byte-order mark", Buffer.from("words\n", "utf16le"), /byte-order mark/],
  ])("refuses binary bytes declared TXT (%s) with unsupported_format saying what is wrong", async (_what, bytes, message) => {
    const err = await folioFailure(checkDocumentIsFormat(bytes, "TXT"));
    expect(err.code, err.message).toBe("unsupported_format");
    expect(err.message).toMatch(message);
    expect(err.param).toBe("file");
    expect(err.extra.supported_formats).toEqual(SUPPORTED);
  });

  it.each([
    ["a truncated DOCX", () => fixture("two-pages.docx").subarray(0, 1500), "DOCX"],
    ["random bytes declared DOC", () => Buffer.from([0x00, 0xff, 0x13, 0x37, 0x00, 0x42, 0x99, 0x00, 0x01]), "DOC"],
    ["an empty file", () => Buffer.alloc(0), "ODT"],
  ] as const)("treats %s as a damaged document: conversion_failed", async (_what, bytes, format) => {
    const err = await folioFailure(checkDocumentIsFormat(bytes(), format));
    expect(err.code, err.message).toBe("conversion_failed");
  });
});
