/**
 * What a document really is, judged from its bytes.
 *
 * The client's MIME type (and a server's Content-Type) is only a hint: a
 * PNG sent as `application/pdf` is a PNG, and an executable sent as
 * `image/png` is refused. The hint decides only what the bytes leave open:
 * whether text that happens to start like a binary signature is text, and
 * whether an OLE2 file whose directory cannot be read is a Word document.
 */
import { fileTypeFromBuffer, type FileTypeResult } from "file-type";
import { CONVERSION_MIME_TYPES, SUPPORTED_INPUT_FORMATS, TEXT_ENCODINGS_SAID, normalizeMime, readText, type ConversionFormat } from "../formats/index.ts";
import { FolioError } from "../platform/errors/index.ts";

/**
 * How a document is processed: images go to extraction as they are, PDFs are
 * rendered, office documents go through conversion. `text` is part of the
 * vocabulary but {@link sniffDocument} reports plain text as `office`/`TXT`,
 * because plain text goes through conversion like any office document.
 */
export type DocumentKind = "image" | "pdf" | "office" | "text";

export interface Sniffed {
  kind: DocumentKind;
  /** The MIME type of what the bytes are (not of the hint). */
  mimeType: string;
  /** Set when kind is `office`. */
  officeFormat?: ConversionFormat;
}

/** Images the extraction path takes as they are, by the MIME type file-type reports. */
const IMAGE_TYPES: Readonly<Record<string, string>> = {
  "image/png": "image/png",
  "image/apng": "image/png", // an animated PNG is a valid PNG; its first frame is the image
  "image/jpeg": "image/jpeg",
  "image/webp": "image/webp",
  "image/tiff": "image/tiff",
  "image/gif": "image/gif",
  "image/bmp": "image/bmp",
};

const OFFICE_TYPES: Readonly<Record<string, ConversionFormat>> = {
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "DOCX",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "PPTX",
  "application/vnd.oasis.opendocument.text": "ODT",
};

/**
 * Identifies `bytes`. `hint` is the MIME type the client or server claimed.
 * Throws `unsupported_format` (with `supported_formats`) for anything Folio
 * does not process, naming what the bytes look like when that is known.
 */
export async function sniffDocument(bytes: Buffer, hint?: string): Promise<Sniffed> {
  const hinted = hint === undefined ? "" : normalizeMime(hint);
  if (bytes.length === 0) throw unsupported("the document is empty");

  // Signatures that are themselves text: they hold even when the whole file is text.
  if (startsWith(bytes, "%PDF-")) return { kind: "pdf", mimeType: "application/pdf" };
  if (startsWith(bytes, "{\\rtf")) return office("RTF");

  const text = looksLikeText(bytes);
  let detected: FileTypeResult | undefined;
  try {
    detected = await fileTypeFromBuffer(bytes);
  } catch {
    detected = undefined; // a malformed container is simply not recognised
  }

  // Short binary signatures ("BM", "GIF") also begin ordinary sentences; a file
  // that reads as text (looksLikeText) is text, whatever it starts with.
  if (detected && !text) {
    const image = IMAGE_TYPES[detected.mime];
    if (image) return { kind: "image", mimeType: image };
    if (detected.mime === "application/pdf") return { kind: "pdf", mimeType: "application/pdf" };
    const format = OFFICE_TYPES[detected.mime] ?? (detected.mime === "application/zip" ? officeOpenXmlByDirectory(bytes) : undefined);
    if (format) return office(format);
    if (detected.mime === "application/x-cfb") return compoundFile(bytes, hinted);
  }
  if (text) return office("TXT");

  if (detected) {
    const claimed = hinted !== "" && hinted !== detected.mime ? ` (the declared type was ${clip(hinted)})` : "";
    throw unsupported(`the document is ${detected.ext.toUpperCase()} (${detected.mime}), which Folio does not process${claimed}`);
  }
  if (hinted === "text/plain") {
    const reading = readText(bytes);
    throw unsupported(`the document was declared text/plain but its bytes are not text in ${TEXT_ENCODINGS_SAID}${reading.ok ? "" : `: ${reading.problem}`}`);
  }
  throw unsupported(
    `the document's format could not be recognised from its bytes${hinted !== "" ? ` (the declared type was ${clip(hinted)})` : ""}`,
  );
}

function office(format: ConversionFormat): Sniffed {
  return { kind: "office", mimeType: CONVERSION_MIME_TYPES[format][0] as string, officeFormat: format };
}

/**
 * An OLE2 compound file is a Word 97-2003 document when its directory holds
 * a `WordDocument` stream; Excel and PowerPoint files, installers and the
 * like share the container and are refused by name.
 */
function compoundFile(bytes: Buffer, hinted: string): Sniffed {
  const names = cfbEntryNames(bytes);
  if (names === null) {
    // The directory could not be read; LibreOffice will say whether it is a document.
    if (hinted === "application/msword") return office("DOC");
    throw unsupported("the document is an OLE2 compound file whose directory could not be read");
  }
  if (names.includes("WordDocument")) return office("DOC");
  if (names.includes("Workbook") || names.includes("Book")) {
    throw unsupported("the document is an Excel 97-2003 workbook (XLS), which Folio does not process");
  }
  if (names.includes("PowerPoint Document")) {
    throw unsupported("the document is a PowerPoint 97-2003 presentation (PPT), which Folio does not process; save it as PPTX");
  }
  throw unsupported("the document is an OLE2 compound file that is not a Word document");
}

const END_OF_CHAIN = 0xfffffffa; // values at or above this are chain markers, never sector numbers

/**
 * The names in a compound file's directory (MS-CFB §2.6), or null when the
 * structure does not hold together. Every read is bounds-checked and every
 * chain walk is bounded by the sector count, so a crafted file cannot loop.
 */
export function cfbEntryNames(b: Buffer): string[] | null {
  if (b.length < 512 || b.readUInt16LE(0x1c) !== 0xfffe) return null;
  const shift = b.readUInt16LE(0x1e);
  if (shift !== 9 && shift !== 12) return null;
  const size = 1 << shift;
  const sectors = Math.floor((b.length - size) / size);
  if (sectors <= 0) return null;
  const offsetOf = (sector: number): number | null => (sector < sectors ? (sector + 1) * size : null);

  const fatCount = b.readUInt32LE(0x2c);
  if (fatCount === 0 || fatCount > sectors) return null;
  const fat: number[] = [];
  for (let i = 0; i < 109 && fat.length < fatCount; i++) fat.push(b.readUInt32LE(0x4c + 4 * i));
  let difat = b.readUInt32LE(0x44);
  for (let guard = 0; fat.length < fatCount && difat < END_OF_CHAIN; guard++) {
    const at = offsetOf(difat);
    if (at === null || guard > sectors) return null;
    for (let j = 0; j < size / 4 - 1 && fat.length < fatCount; j++) fat.push(b.readUInt32LE(at + 4 * j));
    difat = b.readUInt32LE(at + size - 4);
  }
  if (fat.length < fatCount) return null;
  const perSector = size / 4;
  const next = (sector: number): number | null => {
    const at = offsetOf(fat[Math.floor(sector / perSector)] ?? END_OF_CHAIN);
    return at === null ? null : b.readUInt32LE(at + 4 * (sector % perSector));
  };

  const names: string[] = [];
  let sector = b.readUInt32LE(0x30);
  for (let steps = 0; sector < END_OF_CHAIN; steps++) {
    const at = offsetOf(sector);
    if (at === null || steps > sectors) return null;
    for (let entry = at; entry + 128 <= at + size; entry += 128) {
      const nameLength = b.readUInt16LE(entry + 0x40);
      const type = b[entry + 0x42];
      // 1 storage, 2 stream, 5 root; the length counts the terminating NUL.
      if ((type === 1 || type === 2 || type === 5) && nameLength >= 2 && nameLength <= 64 && nameLength % 2 === 0) {
        names.push(b.toString("utf16le", entry, entry + nameLength - 2));
      }
    }
    const following = next(sector);
    if (following === null) return null;
    sector = following;
  }
  return names;
}

/**
 * Text in one of the encodings Folio reads (UTF-8 with or without BOM,
 * UTF-16 with BOM, Windows-1252/Latin-1, the Cyrillic code pages): no NUL,
 * and at most 2% control characters other than tab, line feed, form feed
 * and carriage return (`readText` in internal/formats).
 */
export function looksLikeText(bytes: Buffer): boolean {
  return readText(bytes).ok;
}

function startsWith(bytes: Buffer, signature: string): boolean {
  return bytes.subarray(0, signature.length).toString("latin1") === signature;
}

function clip(s: string): string {
  return s.length > 100 ? `${s.slice(0, 100)}…` : s;
}

function unsupported(message: string): FolioError {
  return new FolioError("unsupported_format", `${message}; supported formats: ${SUPPORTED_INPUT_FORMATS.join(", ")}`, {
    extra: { supported_formats: [...SUPPORTED_INPUT_FORMATS] },
  });
}

/**
 * A ZIP that file-type calls only a ZIP may still be a DOCX or PPTX: it
 * decides Office Open XML by `[Content_Types].xml` within a scan budget of
 * 1 MiB of entries, and LibreOffice writes that entry last, after a
 * `word/document.xml` of many megabytes for a long document. The ZIP's
 * central directory (at its end) names every entry: `word/document.xml`
 * with `[Content_Types].xml` is a DOCX, `ppt/presentation.xml` with it a
 * PPTX. Undefined when the directory cannot be read (a truncated head of a
 * file) or names neither.
 */
export function officeOpenXmlByDirectory(bytes: Buffer): ConversionFormat | undefined {
  const names = zipEntryNames(bytes);
  if (!names?.has("[Content_Types].xml")) return undefined;
  if (names.has("word/document.xml")) return "DOCX";
  if (names.has("ppt/presentation.xml")) return "PPTX";
  return undefined;
}

/** Entries a ZIP directory lists at most before it is taken for garbage. */
const MAX_ZIP_ENTRIES = 65_535;

/** The entry names of a ZIP's central directory (APPNOTE 4.3.12, 4.3.16), or undefined when there is none to read. */
function zipEntryNames(bytes: Buffer): Set<string> | undefined {
  // The end of central directory record: 22 bytes and a comment of at most 65,535, at the very end.
  const EOCD = 0x06054b50;
  const CDH = 0x02014b50;
  let end = -1;
  for (let at = bytes.length - 22; at >= Math.max(0, bytes.length - 22 - 65_535); at--) {
    if (bytes.readUInt32LE(at) === EOCD) {
      end = at;
      break;
    }
  }
  if (end < 0) return undefined;
  const entries = bytes.readUInt16LE(end + 10);
  let at = bytes.readUInt32LE(end + 16);
  const names = new Set<string>();
  for (let i = 0; i < Math.min(entries, MAX_ZIP_ENTRIES); i++) {
    if (at + 46 > bytes.length || bytes.readUInt32LE(at) !== CDH) return undefined;
    const nameLength = bytes.readUInt16LE(at + 28);
    const extra = bytes.readUInt16LE(at + 30);
    const comment = bytes.readUInt16LE(at + 32);
    if (at + 46 + nameLength > bytes.length) return undefined;
    names.add(bytes.toString("utf8", at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extra + comment;
  }
  return names;
}
