/**
 * The conversion service's contract with its callers: a conversion request,
 * the converted pages with their exactly priced compute time, estimates and
 * the price list. `proto/folio/conversion/v1/conversion.proto` carries these
 * between processes; the service (`internal/conversion`) and its client
 * (`internal/conversion/client.ts`) map them to and from it.
 */
import type { Decimal } from "../billing/index.ts";
import type { ConversionFormat } from "../formats/index.ts";

export type BackendName = "runsc" | "kubernetes" | "unsandboxed";

export interface ConvertRequest {
  document: Buffer;
  mimeType: string;
  filename?: string;
  /** Most pages the caller accepts; the service's own limit applies as well. */
  maxPages?: number;
  requestId?: string;
  traceparent?: string;
}

export interface ConvertedPage {
  pageNumber: number;
  png: Buffer;
  width: number;
  height: number;
}

export interface Conversion {
  pages: ConvertedPage[];
  pageCount: number;
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
