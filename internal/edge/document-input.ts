/**
 * A document as the edge receives it (URL or base64), made into page images:
 * images are one page, PDFs are rasterized at 200 DPI, office documents go
 * through the conversion service.
 */
import { decodeBase64Strict, fetchDocument, sniffDocument, type Sniffed } from "../documents/index.ts";
import { pdfPageCount, rasterizePdf } from "../documents/pdf.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { PageInput } from "../extraction/types.ts";
import type { EdgeDeps } from "./types.ts";
import type { ConversionClient } from "../conversion/client.ts";
import { chargeComponent, conversionCostCents } from "../billing/index.ts";
import type { Meter } from "./paid.ts";

export interface LoadedDocument {
  bytes: Buffer;
  sniffed: Sniffed;
  /** The request field the document came from (for error params). */
  param: string;
}

/** Exactly one of url/base64; fetched or decoded, bounded, and typed from its bytes. */
export async function loadDocument(deps: EdgeDeps, input: { url?: string; base64?: string; mimeType?: string }): Promise<LoadedDocument> {
  const { url, base64 } = input;
  if ((url === undefined) === (base64 === undefined)) {
    throw new FolioError("invalid_request", "send exactly one of 'url' or 'base64'", { param: url === undefined ? "url" : "base64" });
  }
  const param = url !== undefined ? "url" : "base64";
  let bytes: Buffer;
  let hint = input.mimeType;
  if (url !== undefined) {
    const fetched = await fetchDocument(url, { ...deps.documents.fetch, maxBytes: deps.documents.maxBytes }, "url");
    bytes = fetched.bytes;
    hint ??= fetched.contentType?.split(";")[0]?.trim() || undefined;
  } else {
    bytes = decodeBase64Strict(base64!, "base64");
    if (bytes.length > deps.documents.maxBytes) {
      throw new FolioError("payload_too_large", `document is ${bytes.length} bytes; the limit is ${deps.documents.maxBytes}`, { param });
    }
  }
  const sniffed = await sniffDocument(bytes, hint);
  return { bytes, sniffed, param };
}

/**
 * How many pages the document has (cheap: no rendering), or null for an
 * office document, whose pages are known only once it is converted.
 */
export async function countPages(deps: EdgeDeps, doc: LoadedDocument): Promise<number | null> {
  if (doc.sniffed.kind === "image") return 1;
  if (doc.sniffed.kind === "pdf") {
    const n = await pdfPageCount(doc.bytes);
    if (n > deps.documents.maxPages) {
      throw new FolioError("invalid_request", `document has ${n} pages; the limit is ${deps.documents.maxPages} (FOLIO_MAX_PAGES)`, {
        param: doc.param,
        extra: { page_count: n, max_pages: deps.documents.maxPages },
      });
    }
    return n;
  }
  conversionOf(deps);
  return null;
}

/**
 * Page images of the document, in order, numbered from 1. An office document
 * is converted by the conversion service; its compute time goes on `meter`.
 */
export async function pageImages(deps: EdgeDeps, doc: LoadedDocument, signal: AbortSignal, paid: { meter: Meter; requestId: string }): Promise<PageInput[]> {
  if (doc.sniffed.kind === "image") return [{ pageNumber: 1, image: doc.bytes, mimeType: doc.sniffed.mimeType }];
  if (doc.sniffed.kind === "pdf") {
    const r = await rasterizePdf(doc.bytes, { dpi: 200, maxPages: deps.documents.maxPages, timeoutMs: deps.documents.pdfTimeoutMs, signal });
    return r.pages.map((image, i) => ({ pageNumber: i + 1, image, mimeType: "image/png" }));
  }
  const converted = await conversionOf(deps).convert(
    { document: doc.bytes, mimeType: doc.sniffed.mimeType, maxPages: deps.documents.maxPages, requestId: paid.requestId },
    signal,
  );
  paid.meter.conversion(converted.computeMillis);
  return converted.pages.map((p) => ({ pageNumber: p.pageNumber, image: p.png, mimeType: "image/png" }));
}

/** The conversion service, or `conversion_not_available` when none is configured. */
export function conversionOf(deps: EdgeDeps): ConversionClient {
  if (!deps.conversion) throw conversionNotAvailable();
  return deps.conversion;
}

/**
 * Cents held for one conversion before it runs: the price of the longest
 * time the edge waits for it (FOLIO_CONVERSION_DEADLINE_SECONDS).
 */
export function conversionHoldCents(deps: EdgeDeps): number {
  return chargeComponent(conversionCostCents(deps.conversionDeadlineMs)).chargedCents;
}

export function conversionNotAvailable(): FolioError {
  return new FolioError("conversion_not_available", "office documents need the conversion service, which is not configured here");
}

/** Runs `fn` over `items` with at most `limit` at a time; the first failure aborts the rest. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!, i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
