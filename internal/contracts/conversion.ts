/**
 * The conversion service's contract with its callers: a conversion request,
 * the converted pages with their exactly priced compute time, estimates and
 * the price list. `proto/folio/conversion/v1/conversion.proto` carries these
 * between processes; the service (`internal/conversion`) and its client
 * (`internal/conversion/client.ts`) map them to and from it.
 */
import type { Decimal } from "../billing/index.ts";
import type { ConversionFormat } from "../formats/index.ts";
import type { PageSelection } from "../formats/pages.ts";

export type BackendName = "runsc" | "kubernetes" | "unsandboxed";

export interface ConvertRequest {
  document: Buffer;
  mimeType: string;
  filename?: string;
  /** Most pages the caller accepts; the service's own limit applies as well. */
  maxPages?: number;
  /** Only these pages (the request's `pages` option); absent: every page. Not with output `pdf`. */
  pages?: PageSelection;
  /**
   * `pages` (default): the pages as PNGs, at most the service's page limit.
   * `pdf`: the PDF LibreOffice renders and no page image (a durable job
   * reads it like a PDF it was sent); `maxPages` is then the caller's limit
   * of the document's pages, not bounded by the service's limit of rendered
   * pages.
   */
  output?: "pages" | "pdf";
  requestId?: string;
  traceparent?: string;
}

export interface ConvertedPage {
  /** The page's number in the document (with a selection, not necessarily its position in the answer). */
  pageNumber: number;
  png: Buffer;
  width: number;
  height: number;
}

export interface Conversion {
  /** In document order; none with output `pdf`. */
  pages: ConvertedPage[];
  /** Pages converted (`pages.length`). */
  pageCount: number;
  /** With output `pdf`: the document as LibreOffice rendered it ({@link documentPageCount} pages). */
  pdf?: Buffer;
  /** The document's pages (more than {@link pageCount} with a `pages` selection). */
  documentPageCount: number;
  computeMillis: number;
  format: ConversionFormat;
  backend: BackendName;
  /** Exact provider cost of the compute time, cents (before the platform fee). */
  providerCostCents: Decimal;
}

export interface PricingInfo {
  baseRatePerMinute: string;
  platformFeePercentage: string;
  minimumCharge: string;
  examples: (Estimate & { mimeType: string })[];
  supportedFormats: string[];
}

export interface Estimate {
  format: ConversionFormat;
  /** Whole cents charged for a conversion taking the estimated time. */
  costCents: number;
  seconds: number;
  basis: "observed" | "default";
  samples: number;
}
