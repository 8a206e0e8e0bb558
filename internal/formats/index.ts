/**
 * What Folio reads and writes, defined once: the office formats the
 * conversion service accepts (the spec's table, with the file extension
 * LibreOffice sees and the label people know), every input format, and the
 * page images the paths produce (200-DPI PNG; for local engines, PDF pages
 * as 200-DPI binary PGM).
 *
 * No imports: the sandbox program (bundled by esbuild), the playground page
 * and the CLI use this module as they are.
 */

/** Office formats the conversion service accepts (the spec's table). */
export const CONVERSION_FORMATS = ["DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"] as const;
export type ConversionFormat = (typeof CONVERSION_FORMATS)[number];

interface FormatEntry {
  /** The MIME types the spec gives; the first is the one Folio reports. */
  mimeTypes: readonly string[];
  /** File extension LibreOffice sees (it picks its import filter by it and by content). */
  extension: string;
  /** Human-readable label (the pricing response's `supported_formats`). */
  label: string;
}

/** The format table. */
export const CONVERSION_FORMAT_TABLE: Readonly<Record<ConversionFormat, FormatEntry>> = Object.freeze({
  DOCX: {
    mimeTypes: ["application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    extension: "docx",
    label: "DOCX (Microsoft Word 2007 and later)",
  },
  PPTX: {
    mimeTypes: ["application/vnd.openxmlformats-officedocument.presentationml.presentation"],
    extension: "pptx",
    label: "PPTX (Microsoft PowerPoint 2007 and later)",
  },
  DOC: { mimeTypes: ["application/msword"], extension: "doc", label: "DOC (Microsoft Word 97-2003)" },
  ODT: { mimeTypes: ["application/vnd.oasis.opendocument.text"], extension: "odt", label: "ODT (OpenDocument Text)" },
  RTF: { mimeTypes: ["application/rtf", "text/rtf"], extension: "rtf", label: "RTF (Rich Text Format)" },
  TXT: { mimeTypes: ["text/plain"], extension: "txt", label: "TXT (plain text: UTF-8, UTF-16, Windows-1252)" },
});

const column = <K extends keyof FormatEntry>(key: K): Readonly<Record<ConversionFormat, FormatEntry[K]>> =>
  Object.freeze(Object.fromEntries(CONVERSION_FORMATS.map((f) => [f, CONVERSION_FORMAT_TABLE[f][key]])) as Record<ConversionFormat, FormatEntry[K]>);

/** The MIME types of each conversion format; the first is the one Folio reports. */
export const CONVERSION_MIME_TYPES = column("mimeTypes");
/** File extension of each conversion format. */
export const FORMAT_EXTENSIONS = column("extension");
/** Human-readable label of each conversion format. */
export const FORMAT_LABELS = column("label");

/** Every format Folio accepts as input, as listed in `unsupported_format` errors. */
export const SUPPORTED_INPUT_FORMATS = ["PNG", "JPEG", "WEBP", "TIFF", "GIF", "PDF", ...CONVERSION_FORMATS] as const;
export type InputFormat = (typeof SUPPORTED_INPUT_FORMATS)[number];

/** A MIME type without parameters, lower case. */
export function normalizeMime(mime: string): string {
  return (mime.split(";")[0] ?? "").trim().toLowerCase();
}

/** The conversion format a MIME type names (parameters and case ignored), if any. */
export function conversionFormatForMime(mimeType: string): ConversionFormat | undefined {
  const mime = normalizeMime(mimeType);
  return CONVERSION_FORMATS.find((f) => CONVERSION_MIME_TYPES[f].includes(mime));
}

/** The conversion format a file name's extension names (`report.DOCX` → DOCX), if any. */
export function conversionFormatForFilename(filename: string): ConversionFormat | undefined {
  const ext = /\.([^./\\]+)$/.exec(filename)?.[1]?.toLowerCase();
  return CONVERSION_FORMATS.find((f) => FORMAT_EXTENSIONS[f] === ext);
}

/** Resolution of every page image: converted office pages and rasterized PDF pages (the spec fixes it). */
export const PAGE_DPI = 200;

/** The eight bytes every PNG file starts with. */
export const PNG_SIGNATURE: Readonly<Uint8Array> = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

/** True when `bytes` start with the PNG signature. */
export function hasPngSignature(bytes: Uint8Array): boolean {
  return bytes.length >= PNG_SIGNATURE.length && PNG_SIGNATURE.every((b, i) => bytes[i] === b);
}

/** Width and height from a PNG's IHDR chunk, or null when `bytes` are not a PNG with one. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } | null {
  if (bytes.length < 24 || !hasPngSignature(bytes)) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ihdr = String.fromCharCode(bytes[12]!, bytes[13]!, bytes[14]!, bytes[15]!);
  return ihdr === "IHDR" ? { width: view.getUint32(16), height: view.getUint32(20) } : null;
}

/**
 * MIME type of binary PGM: the 8-bit grey pages a PDF is rendered to for a
 * local engine, which reads raw pixels without decoding a PNG first.
 */
export const PGM_MIME_TYPE = "image/x-portable-graymap";

/** A binary PGM's size and its pixels, one byte each, row by row from the top left. */
export interface PgmImage {
  width: number;
  height: number;
  /** A view of the bytes given to {@link parsePgm}, not a copy. */
  pixels: Uint8Array;
}

/** Header numbers above this are not a page (pdftoppm's pixel budget is far below). */
const MAX_PGM_DIMENSION = 1_000_000;

/**
 * Parses a binary PGM as pdftoppm -gray writes it: "P5", width, height and
 * maxval 255 separated by whitespace (netpbm's #-comments allowed), one
 * whitespace byte, then width × height bytes. Null when `bytes` are anything
 * else: another maxval, a truncated image, not a PGM.
 */
export function parsePgm(bytes: Uint8Array): PgmImage | null {
  if (bytes.length < 3 || bytes[0] !== 0x50 || bytes[1] !== 0x35) return null;
  let at = 2;
  const isSpace = (b: number | undefined) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d || b === 0x0b || b === 0x0c;
  const number = (): number | null => {
    // At least one whitespace before each number, and any comments between.
    if (!isSpace(bytes[at]) && bytes[at] !== 0x23) return null;
    for (;;) {
      if (isSpace(bytes[at])) at++;
      else if (bytes[at] === 0x23) while (at < bytes.length && bytes[at] !== 0x0a && bytes[at] !== 0x0d) at++;
      else break;
    }
    let n = 0;
    const start = at;
    while (at < bytes.length && bytes[at]! >= 0x30 && bytes[at]! <= 0x39 && at - start < 8) n = n * 10 + (bytes[at++]! - 0x30);
    return at > start ? n : null;
  };
  const width = number();
  const height = number();
  const maxval = number();
  if (width === null || height === null || maxval !== 255) return null;
  if (width < 1 || height < 1 || width > MAX_PGM_DIMENSION || height > MAX_PGM_DIMENSION) return null;
  // Exactly one whitespace byte ends the header; the pixels follow.
  if (!isSpace(bytes[at])) return null;
  const start = at + 1;
  const end = start + width * height;
  if (bytes.length < end) return null;
  return { width, height, pixels: bytes.subarray(start, end) };
}

/**
 * Plain text in the encodings people have, told apart from binary bytes.
 *
 * Accepted (docs/conversion.md, "Plain text"):
 * - UTF-8, with or without a byte-order mark;
 * - UTF-16, little- or big-endian, with a byte-order mark (Windows
 *   Notepad's "Unicode"; without a mark UTF-16 is indistinguishable from
 *   binary bytes with NULs and is refused);
 * - any other bytes as a single-byte legacy encoding: Windows-1252 (which
 *   is also how Latin-1/ISO-8859-1 files are read, as browsers do), or, when
 *   there are more bytes above 0x7F than ASCII letters (no Western text has
 *   that many accents), the Cyrillic code page (Windows-1251, KOI8-R, DOS
 *   866) under which the non-ASCII bytes are Cyrillic letters, mostly lower
 *   case — as real text is.
 *
 * Whatever the encoding, the decoded text must hold no NUL and at most 2% of
 * control characters other than tab, line feed, form feed and carriage
 * return (C1 controls and bytes Windows-1252 leaves undefined count as
 * controls): that is what tells text from binary junk.
 *
 * Used by the edge (sniffing), the conversion service and the program inside
 * the sandbox (which hands LibreOffice UTF-8).
 */

/** The encodings {@link readText} accepts, in words for error messages and docs. */
export const TEXT_ENCODINGS_SAID =
  "UTF-8 (with or without a byte-order mark), UTF-16 with a byte-order mark, Windows-1252/Latin-1 or a Cyrillic code page (Windows-1251, KOI8-R, DOS 866)";

/** The encodings {@link readText} recognises, as WHATWG `TextDecoder` labels. */
export type TextEncoding = "utf-8" | "utf-16le" | "utf-16be" | "windows-1252" | "windows-1251" | "koi8-r" | "ibm866";

export type TextReading =
  | { ok: true; encoding: TextEncoding; /** Whether the bytes began with a byte-order mark (not part of `text`). */ bom: boolean; text: string }
  | { ok: false; /** Why the bytes are not text, in words for an error message. */ problem: string };

/** Share of control characters above which decoded bytes are binary, not text. */
const MAX_CONTROL_SHARE = 0.02;
/** Above this share of high bytes among letters (ASCII letters + high bytes), Windows-1252 is doubted and Cyrillic code pages tried. */
const LATIN_DOUBT_SHARE = 0.5;
const CYRILLIC_PAGES = ["windows-1251", "koi8-r", "ibm866"] as const;

/** Reads `bytes` as text (see the module comment), or says why they are not text. */
export function readText(bytes: Uint8Array): TextReading {
  if (bytes.length === 0) return { ok: false, problem: "it is empty" };
  const b0 = bytes[0];
  const b1 = bytes[1];
  if (b0 === 0xef && b1 === 0xbb && bytes[2] === 0xbf) return checked("utf-8", true, strict("utf-8", bytes.subarray(3)), "it starts with a UTF-8 byte-order mark but is not valid UTF-8");
  if ((b0 === 0xff && b1 === 0xfe) || (b0 === 0xfe && b1 === 0xff)) {
    const encoding = b0 === 0xff ? "utf-16le" : "utf-16be";
    if (bytes.length % 2 !== 0) return { ok: false, problem: `it starts with a ${encoding.toUpperCase()} byte-order mark but has an odd number of bytes` };
    return checked(encoding, true, strict(encoding, bytes.subarray(2)), `it starts with a ${encoding.toUpperCase()} byte-order mark but is not valid ${encoding.toUpperCase()}`);
  }
  if (bytes.includes(0)) return { ok: false, problem: "it holds NUL bytes, which text never does (UTF-16 needs a byte-order mark)" };
  const utf8 = strict("utf-8", bytes);
  if (utf8 !== undefined) return checked("utf-8", false, utf8, "");
  const encoding = latinIsDoubtful(bytes) ? (likeliestCyrillic(bytes.subarray(0, SAMPLE_BYTES)) ?? "windows-1252") : "windows-1252";
  return checked(encoding, false, new TextDecoder(encoding).decode(bytes), "");
}

/** True when `bytes` read as text in one of the accepted encodings. */
export function isText(bytes: Uint8Array): boolean {
  return readText(bytes).ok;
}

/** Decodes with `fatal`: undefined when the bytes are not valid in `encoding`. */
function strict(encoding: "utf-8" | "utf-16le" | "utf-16be", bytes: Uint8Array): string | undefined {
  try {
    // ignoreBOM: a second BOM stays in the text, as the bytes say.
    return new TextDecoder(encoding, { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function checked(encoding: TextEncoding, bom: boolean, text: string | undefined, invalid: string): TextReading {
  if (text === undefined) return { ok: false, problem: invalid };
  // Code units, not code points: every control character is a single unit, and this loop runs over whole documents.
  let controls = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return { ok: false, problem: "it holds NUL characters, which text never does" };
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0c && c !== 0x0d) || (c >= 0x7f && c <= 0x9f)) controls++;
  }
  if (controls > text.length * MAX_CONTROL_SHARE) {
    return { ok: false, problem: `${Math.round((controls / Math.max(1, text.length)) * 100)}% of it are control characters, which is binary data, not text` };
  }
  return { ok: true, encoding, bom, text };
}

/**
 * More bytes above 0x7F than ASCII letters: Western European text is mostly
 * ASCII letters with some accents, so this is another script.
 */
function latinIsDoubtful(bytes: Uint8Array): boolean {
  let ascii = 0;
  let high = 0;
  for (const b of bytes) {
    if (b >= 0x80) high++;
    else if ((b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) ascii++;
  }
  return high > (high + ascii) * LATIN_DOUBT_SHARE;
}

/** Bytes of a legacy-encoded file the Cyrillic code pages are judged on (the decision needs no more). */
const SAMPLE_BYTES = 64 * 1024;

/**
 * The Cyrillic code page under which at least 90% of the non-ASCII
 * characters are Cyrillic letters, the one with most lower-case letters
 * among them (text is mostly lower case; KOI8-R and Windows-1251 swap the
 * cases of the same bytes). Undefined when none fits.
 */
function likeliestCyrillic(bytes: Uint8Array): TextEncoding | undefined {
  let best: { encoding: TextEncoding; lower: number } | undefined;
  for (const encoding of CYRILLIC_PAGES) {
    const text = new TextDecoder(encoding).decode(bytes);
    let high = 0;
    let cyrillic = 0;
    let lower = 0;
    for (const ch of text) {
      const c = ch.codePointAt(0)!;
      if (c < 0x80) continue;
      high++;
      if (c >= 0x400 && c <= 0x4ff) {
        cyrillic++;
        if (ch !== ch.toUpperCase()) lower++;
      }
    }
    if (high > 0 && cyrillic >= high * 0.9 && (!best || lower > best.lower)) best = { encoding, lower };
  }
  return best?.encoding;
}
