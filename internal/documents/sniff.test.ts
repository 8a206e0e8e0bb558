/**
 * Type sniffing on small real files: the bytes decide the type, the
 * client's MIME type is only a hint, and everything else is refused with
 * `unsupported_format` and the list of supported formats.
 */
import { describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { CONVERSION_FORMATS, CONVERSION_MIME_TYPES, SUPPORTED_INPUT_FORMATS, conversionFormatForMime } from "../formats/index.ts";
import { sniffDocument, type Sniffed } from "./sniff.ts";
import * as files from "./testdata.ts";

async function refusal(bytes: Buffer, hint?: string): Promise<FolioError> {
  let result: Sniffed;
  try {
    result = await sniffDocument(bytes, hint);
  } catch (err) {
    if (err instanceof FolioError) return err;
    throw err;
  }
  throw new Error(`expected unsupported_format, got ${JSON.stringify(result)}`);
}

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const ODT = "application/vnd.oasis.opendocument.text";

describe("sniffDocument", () => {
  const recognised: [name: string, bytes: Buffer, expected: Sniffed][] = [
    ["PNG", files.png(), { kind: "image", mimeType: "image/png" }],
    ["JPEG", files.jpeg(), { kind: "image", mimeType: "image/jpeg" }],
    ["GIF", files.gif(), { kind: "image", mimeType: "image/gif" }],
    ["WEBP", files.webp(), { kind: "image", mimeType: "image/webp" }],
    ["TIFF", files.tiff(), { kind: "image", mimeType: "image/tiff" }],
    ["BMP", files.bmp(), { kind: "image", mimeType: "image/bmp" }],
    ["PDF", files.pdf(), { kind: "pdf", mimeType: "application/pdf" }],
    ["DOCX", files.docx(), { kind: "office", mimeType: DOCX, officeFormat: "DOCX" }],
    ["PPTX", files.pptx(), { kind: "office", mimeType: PPTX, officeFormat: "PPTX" }],
    ["ODT", files.odt(), { kind: "office", mimeType: ODT, officeFormat: "ODT" }],
    ["DOC", files.compoundFile(["WordDocument", "1Table", "\u0005SummaryInformation"]), { kind: "office", mimeType: "application/msword", officeFormat: "DOC" }],
    ["RTF", files.rtf(), { kind: "office", mimeType: "application/rtf", officeFormat: "RTF" }],
    ["UTF-8 text", Buffer.from("Invoice 42\nTotal: 12,50 €\n\tpaid — merci\n"), { kind: "office", mimeType: "text/plain", officeFormat: "TXT" }],
    ["text with a BOM and CRLF", Buffer.from("\ufeffline one\r\nline two\r\n"), { kind: "office", mimeType: "text/plain", officeFormat: "TXT" }],
  ];
  it.each(recognised)("recognises %s from its bytes", async (_name, bytes, expected) => {
    expect(await sniffDocument(bytes)).toEqual(expected);
  });

  it("lets the bytes win over a wrong hint", async () => {
    expect(await sniffDocument(files.png(), "application/pdf")).toEqual({ kind: "image", mimeType: "image/png" });
    expect(await sniffDocument(files.pdf(), "text/plain")).toEqual({ kind: "pdf", mimeType: "application/pdf" });
    expect(await sniffDocument(files.docx(), "application/msword")).toMatchObject({ officeFormat: "DOCX" });
    expect(await sniffDocument(files.rtf(), "text/plain; charset=utf-8")).toMatchObject({ officeFormat: "RTF" });
    expect(await sniffDocument(files.odt(), "image/png")).toMatchObject({ officeFormat: "ODT" });
  });

  it("reads text that begins like a binary signature as text", async () => {
    // "BM" is the BMP signature and "GIF" the GIF one; real images carry NULs and non-UTF-8 bytes.
    for (const text of ["BMW service report\n", "GIF87a is an old format.\n", "PK is a zip signature\n"]) {
      const bytes = Buffer.from(text);
      expect(await sniffDocument(bytes, "text/plain"), text).toMatchObject({ officeFormat: "TXT" });
      expect(await sniffDocument(bytes), text).toMatchObject({ officeFormat: "TXT" });
    }
  });

  it("refuses binary bytes declared as text/plain", async () => {
    const junk = Buffer.from([0x00, 0xff, 0x13, 0x37, 0xfe, 0x00, 0x80, 0x81, 0x02]);
    const err = await refusal(junk, "text/plain");
    expect(err.code, err.message).toBe("unsupported_format");
    expect(err.message).toMatch(/declared text\/plain but its bytes are not text in UTF-8 .*UTF-16 .*Windows-1252.*: it holds NUL bytes/);
  });

  it("reads text in UTF-16 with a byte-order mark and in Windows-1252 as text, with or without the hint", async () => {
    for (const bytes of [Buffer.from("\ufeffInvoice 42 — Grüße\r\n", "utf16le"), Buffer.from("Caf\xe9 \x80 12,50 \x93quoted\x94\n", "latin1")]) {
      expect(await sniffDocument(bytes, "text/plain")).toEqual({ kind: "office", mimeType: "text/plain", officeFormat: "TXT" });
      expect(await sniffDocument(bytes)).toMatchObject({ officeFormat: "TXT" });
    }
  });

  it("refuses text with NULs or mostly control characters", async () => {
    expect((await refusal(Buffer.from("hello\0world"))).code).toBe("unsupported_format");
    expect((await refusal(Buffer.from("\x01\x02\x03\x04\x05abc"))).code).toBe("unsupported_format");
  });

  const refused: [name: string, bytes: Buffer, message: RegExp][] = [
    ["binary junk", Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03, 0xff, 0xfe, 0xfd]), /could not be recognised/],
    ["an empty file", Buffer.alloc(0), /empty/],
    ["a zip that is not an office document", files.plainZip(), /ZIP \(application\/zip\)/],
    ["an OpenDocument spreadsheet", files.odt("application/vnd.oasis.opendocument.spreadsheet"), /ODS/],
    ["an Excel 97-2003 workbook", files.compoundFile(["Workbook"]), /Excel 97-2003 workbook \(XLS\)/],
    ["a PowerPoint 97-2003 file", files.compoundFile(["PowerPoint Document"]), /PowerPoint 97-2003/],
    ["another OLE2 file", files.compoundFile(["Contents"]), /not a Word document/],
    ["a gzip stream", Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x03, 0x00]), /GZ/],
    ["an ELF executable", Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01]), Buffer.alloc(57)]), /ELF/],
  ];
  it.each(refused)("refuses %s with unsupported_format and the supported formats", async (_name, bytes, message) => {
    const err = await refusal(bytes, "image/png");
    expect(err.code, err.message).toBe("unsupported_format");
    expect(err.message).toMatch(message);
    expect(err.extra.supported_formats).toEqual(["PNG", "JPEG", "WEBP", "TIFF", "GIF", "PDF", "DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"]);
  });

  it("names the declared type when it disagrees with the bytes", async () => {
    const err = await refusal(files.plainZip(), "application/pdf");
    expect(err.message).toMatch(/declared type was application\/pdf/);
  });

  it("takes an OLE2 file whose directory cannot be read as DOC only when declared application/msword", async () => {
    const broken = files.compoundFile(["WordDocument"]);
    broken.writeUInt32LE(0x7fffffff, 0x30); // directory start beyond the file
    expect(await sniffDocument(broken, "application/msword")).toMatchObject({ officeFormat: "DOC" });
    const err = await refusal(broken);
    expect(err.message).toMatch(/directory could not be read/);
  });

  it("survives a compound file whose FAT chains loop", async () => {
    const looped = files.compoundFile(["a", "b", "c", "d", "e", "f", "g"]); // two directory sectors
    // Point directory sector 2 back at sector 1 in the FAT: an endless chain.
    looped.writeUInt32LE(1, 512 + 4 * 2);
    const started = Date.now();
    const err = await refusal(looped);
    expect(err.message).toMatch(/directory could not be read/);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe("Office Open XML that names itself last", () => {
  // As LibreOffice writes a long document: [Content_Types].xml after a document.xml of megabytes
  // (stored, so its size is its length), past file-type's scan budget of 1 MiB.
  const big = Buffer.alloc(3 * 1024 * 1024, "<w:p><w:r><w:t>Text</w:t></w:r></w:p>");
  const types = `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`;
  const last = (main: string) => files.zip([{ name: "_rels/.rels", data: "<Relationships/>" }, { name: main, data: big }, { name: "[Content_Types].xml", data: types }]);

  it("is read as DOCX or PPTX from the ZIP's directory, whatever the hint", async () => {
    expect(await sniffDocument(last("word/document.xml"))).toMatchObject({ kind: "office", officeFormat: "DOCX" });
    expect(await sniffDocument(last("ppt/presentation.xml"), "application/zip")).toMatchObject({ kind: "office", officeFormat: "PPTX" });
  });

  it("stays a ZIP without [Content_Types].xml, with other contents, or cut short before its directory", async () => {
    const noTypes = files.zip([{ name: "word/document.xml", data: big }]);
    const workbook = files.zip([{ name: "xl/workbook.xml", data: big }, { name: "[Content_Types].xml", data: types }]);
    for (const bytes of [noTypes, workbook, last("word/document.xml").subarray(0, 2 * 1024 * 1024)]) {
      expect((await refusal(bytes)).message).toMatch(/ZIP/);
    }
  });
});

describe("format tables", () => {
  it("lists the spec's conversion formats and MIME types", () => {
    expect(CONVERSION_FORMATS).toEqual(["DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"]);
    expect(SUPPORTED_INPUT_FORMATS).toEqual(["PNG", "JPEG", "WEBP", "TIFF", "GIF", "PDF", "DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"]);
    expect(CONVERSION_MIME_TYPES).toEqual({
      DOCX: [DOCX],
      PPTX: [PPTX],
      DOC: ["application/msword"],
      ODT: [ODT],
      RTF: ["application/rtf", "text/rtf"],
      TXT: ["text/plain"],
    });
  });

  it("maps a MIME type to its conversion format, ignoring case and parameters", () => {
    expect(conversionFormatForMime("text/rtf")).toBe("RTF");
    expect(conversionFormatForMime("Text/Plain; charset=utf-8")).toBe("TXT");
    expect(conversionFormatForMime(DOCX)).toBe("DOCX");
    expect(conversionFormatForMime("image/png")).toBeUndefined();
  });
});
