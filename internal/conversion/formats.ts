/**
 * Which office format a conversion request is, from its declared MIME type,
 * and whether the bytes agree (docs/conversion.md, "Formats").
 *
 * The rule when they disagree: bytes that are recognisably something else
 * (an image, a PDF, another office format, plain text, an executable) are
 * `unsupported_format`, naming what they are; bytes that are recognisable
 * as nothing at all, or a container of the declared kind that does not hold
 * together (a truncated DOCX, an OLE2 file with a broken directory), are
 * `conversion_failed`: that is a damaged document, not a wrong format.
 * Plain text is the exception: bytes declared TXT that are not text in any
 * encoding Folio reads are binary data, `unsupported_format` saying why.
 */
import { fileTypeFromBuffer } from "file-type";
import { looksLikeText, sniffDocument } from "../documents/index.ts";
import { CONVERSION_FORMATS, CONVERSION_MIME_TYPES, TEXT_ENCODINGS_SAID, conversionFormatForMime, readText, type ConversionFormat } from "../formats/index.ts";
import { FolioError } from "../platform/errors/index.ts";

/** `unsupported_format` with the spec's `supported_formats` list. */
export function unsupportedFormat(message: string, param?: string): FolioError {
  return new FolioError("unsupported_format", message, { ...(param ? { param } : {}), extra: { supported_formats: [...CONVERSION_FORMATS] } });
}

/** The conversion format a declared MIME type names; anything else is `unsupported_format`. */
export function formatForMimeType(mimeType: string, param = "mimeType"): ConversionFormat {
  const format = conversionFormatForMime(mimeType);
  if (!format) {
    const shown = mimeType.length > 100 ? `${mimeType.slice(0, 100)}…` : mimeType;
    throw unsupportedFormat(
      `cannot convert ${JSON.stringify(shown)}: supported types are ${CONVERSION_FORMATS.map((f) => `${f} (${CONVERSION_MIME_TYPES[f].join(" or ")})`).join(", ")}`,
      param,
    );
  }
  return format;
}

const ZIP_FORMATS: ReadonlySet<ConversionFormat> = new Set(["DOCX", "PPTX", "ODT"]);

/** Checks that `bytes` are a document of `format`; throws as the header comment says. */
export async function checkDocumentIsFormat(bytes: Buffer, format: ConversionFormat, param = "file"): Promise<void> {
  if (bytes.length === 0) throw new FolioError("conversion_failed", "the document is empty", { param });
  let sniffed;
  try {
    sniffed = await sniffDocument(bytes, CONVERSION_MIME_TYPES[format][0]);
  } catch (err) {
    if (!(err instanceof FolioError) || err.code !== "unsupported_format") throw err;
    if (format === "TXT" && !(await fileTypeFromBuffer(bytes).catch(() => undefined))) {
      // Text cannot be damaged, only not text: bytes in none of the encodings Folio reads are a wrong label.
      const reading = readText(bytes);
      throw unsupportedFormat(`the document was declared TXT but its bytes are binary data, not text in ${TEXT_ENCODINGS_SAID}${reading.ok ? "" : `: ${reading.problem}`}`, param);
    }
    if (await isDamaged(bytes, format)) {
      throw new FolioError("conversion_failed", `the document is not a valid ${format} file (it may be damaged or truncated)`, { param });
    }
    throw unsupportedFormat(`the document was declared ${format} but ${err.message.replace(/^the document /, "it ")}`, param);
  }
  if (sniffed.kind === "office" && sniffed.officeFormat === format) return;
  const actual =
    sniffed.kind === "office" ? (sniffed.officeFormat === "TXT" ? "plain text" : `a ${sniffed.officeFormat} document`) : sniffed.kind === "pdf" ? "a PDF" : `an image (${sniffed.mimeType})`;
  const hint =
    sniffed.kind === "office"
      ? `; declare it as ${CONVERSION_MIME_TYPES[sniffed.officeFormat!][0]}`
      : "; images and PDFs need no conversion: send them to /v1/ocr";
  throw unsupportedFormat(`the document was declared ${format} but its bytes are ${actual}${hint}`, param);
}

/**
 * Bytes that are nothing recognisable, or a bare ZIP/OLE2 container where
 * the format expects one (a DOCX whose archive is cut short reads as a plain
 * ZIP): damaged, not mislabelled. An XLSX is a ZIP too, but file-type names
 * it, so it stays `unsupported_format`.
 */
async function isDamaged(bytes: Buffer, format: ConversionFormat): Promise<boolean> {
  const detected = await fileTypeFromBuffer(bytes).catch(() => undefined);
  if (!detected) return !looksLikeText(bytes);
  if (detected.mime === "application/zip") return ZIP_FORMATS.has(format);
  if (detected.mime === "application/x-cfb") return format === "DOC";
  return false;
}
