/**
 * The services behind the edge, or the error a request gets when one is not
 * configured: extraction answers 503, conversion `conversion_not_available`
 * (the spec's code for the OCR endpoint).
 */
import type { ConversionClient } from "../conversion/client.ts";
import type { ExtractionClient } from "../extraction/client.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { EdgeDeps } from "./types.ts";

export function extractionOf(deps: EdgeDeps): ExtractionClient {
  if (!deps.extraction) throw new FolioError("service_unavailable", "the extraction service is not configured (FOLIO_EXTRACTION_ADDRESS)");
  return deps.extraction;
}

export function conversionOf(deps: EdgeDeps): ConversionClient {
  if (!deps.conversion) throw new FolioError("conversion_not_available", "office documents need the conversion service, which is not configured here");
  return deps.conversion;
}
