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
  TXT: { mimeTypes: ["text/plain"], extension: "txt", label: "TXT (plain text, UTF-8)" },
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
