/**
 * Untrusted document input: SSRF-safe URL fetching, strict base64 and data
 * URLs, type sniffing from the bytes, and PDFs (page count, pages rendered
 * to PNG, or streamed as PGM to local engines).
 */
export { isForbiddenAddress, parseHostLiteral, type ForbiddenReason } from "./address.ts";
export {
  DEFAULT_MAX_REDIRECTS,
  checkedClient,
  describeNetworkError,
  fetchDocument,
  parseFetchAllowList,
  type AllowRule,
  type FetchPolicy,
  type FetchedDocument,
  type HostLookup,
  type ResolvedAddress,
} from "./fetch.ts";
export { decodeBase64Strict, parseDataUrl } from "./base64.ts";
export { looksLikeText, sniffDocument, type DocumentKind, type Sniffed } from "./sniff.ts";
export {
  DEFAULT_MAX_PIXELS_PER_PAGE,
  inspectPdf,
  openPdf,
  pdfPageCount,
  rasterizePdf,
  streamPdfPages,
  type OpenedPdf,
  type PdfInfo,
  type PdfSource,
  type RasterizeOptions,
  type RasterizedPdf,
  type RenderedPage,
  type StreamPdfOptions,
} from "./pdf.ts";
export {
  DEFAULT_IMAGE_DPI,
  buildSearchablePdf,
  canCopyPdfPages,
  compactPageImage,
  type SearchableInput,
  type SearchableKind,
  type SearchablePage,
  type SearchableWord,
} from "./searchable-pdf.ts";
