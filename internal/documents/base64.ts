/**
 * Strict base64 for documents sent inline. Node's own decoder skips any
 * character it does not know and accepts both alphabets, so a truncated or
 * mangled upload would decode to a different document without a word; here
 * every such input is a 400 naming the field.
 */
import { invalid } from "../platform/errors/index.ts";

/** WHATWG "ASCII whitespace": what line-wrapped base64 may carry between its characters. */
const ASCII_WHITESPACE = /[\t\n\f\r ]+/g;
const STANDARD = /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes standard base64 (RFC 4648 §4, `+` and `/`, `=` padding required)
 * with ASCII whitespace ignored anywhere. Anything else throws
 * `invalid_request` naming `param`: an empty value, a data-URL prefix, the
 * URL-safe alphabet, other characters, missing or misplaced padding, or
 * non-zero padding bits (a value with two decodings). `typeField` is the
 * request field that carries the MIME type, named when a data URL is sent.
 */
export function decodeBase64Strict(input: string, param: string, typeField = "mime_type"): Buffer {
  if (/^\s*data:/i.test(input)) {
    throw invalid(
      param,
      `${param} must not include a data-URL prefix; send only the base64 data and put the type in ${typeField}`,
    );
  }
  const compact = input.replace(ASCII_WHITESPACE, "");
  if (compact === "") throw invalid(param, `${param} is empty; send the document as base64`);
  if (/[-_]/.test(compact)) {
    throw invalid(param, `${param} uses the URL-safe base64 alphabet (- or _); send standard base64 (+ and /) with = padding`);
  }
  const stray = /[^A-Za-z0-9+/=]/.exec(compact);
  if (stray) {
    throw invalid(param, `${param} is not valid base64: it contains a character outside the base64 alphabet`);
  }
  if (compact.length % 4 !== 0) {
    throw invalid(param, `${param} is not valid base64: its length without whitespace is not a multiple of 4 (missing = padding?)`);
  }
  if (!STANDARD.test(compact)) {
    throw invalid(param, `${param} is not valid base64: = padding may only appear at the end`);
  }
  const bytes = Buffer.from(compact, "base64");
  // Re-encoding must give the input back; otherwise the last character carried non-zero padding bits.
  if (bytes.toString("base64") !== compact) {
    throw invalid(param, `${param} is not valid base64: its last character has non-zero padding bits`);
  }
  return bytes;
}

/** A MIME type as RFC 9110 writes it: `type/subtype`, both tokens. */
const MIME_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Parses `data:<mime>[;param=value…];base64,<data>` strictly: a MIME type is
 * required, the data must be base64 (see {@link decodeBase64Strict}).
 * Returns the MIME type lower-cased without parameters.
 */
export function parseDataUrl(url: string, param: string): { mimeType: string; bytes: Buffer } {
  const match = /^\s*data:([^,]*),/i.exec(url);
  if (!match) throw invalid(param, `${param} is not a data URL (data:<mime type>;base64,<data>)`);
  const header = (match[1] as string).split(";").map((s) => s.trim());
  const mimeType = (header[0] ?? "").toLowerCase();
  if (mimeType === "") throw invalid(param, `${param} must name its MIME type (data:<mime type>;base64,<data>)`);
  if (!MIME_TYPE.test(mimeType)) throw invalid(param, `${param} has an invalid MIME type '${mimeType.slice(0, 100)}'`);
  if ((header[header.length - 1] ?? "").toLowerCase() !== "base64") {
    throw invalid(param, `${param} must be base64-encoded (data:<mime type>;base64,<data>)`);
  }
  const data = url.slice(match[0].length);
  return { mimeType, bytes: decodeBase64Strict(data, param) };
}
