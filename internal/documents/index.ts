/**
 * Untrusted document input: SSRF-safe URL fetching, strict base64 and data
 * URLs, and type sniffing from the bytes.
 */
export { isForbiddenAddress, parseHostLiteral, type ForbiddenReason } from "./address.ts";
export {
  DEFAULT_MAX_REDIRECTS,
  fetchDocument,
  parseFetchAllowList,
  type AllowRule,
  type FetchPolicy,
  type FetchedDocument,
  type HostLookup,
  type ResolvedAddress,
} from "./fetch.ts";
export { decodeBase64Strict, parseDataUrl } from "./base64.ts";
export {
  CONVERSION_FORMATS,
  CONVERSION_MIME_TYPES,
  SUPPORTED_INPUT_FORMATS,
  conversionFormatForMime,
  sniffDocument,
  type ConversionFormat,
  type DocumentKind,
  type InputFormat,
  type Sniffed,
} from "./sniff.ts";
