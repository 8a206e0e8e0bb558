// Original file: proto/folio/conversion/v1/conversion.proto

import type { Page as _folio_conversion_v1_Page, Page__Output as _folio_conversion_v1_Page__Output } from '../../../folio/conversion/v1/Page.ts';
import type { ConvertSummary as _folio_conversion_v1_ConvertSummary, ConvertSummary__Output as _folio_conversion_v1_ConvertSummary__Output } from '../../../folio/conversion/v1/ConvertSummary.ts';

export interface ConvertReply {
  'page'?: (_folio_conversion_v1_Page | null);
  'summary'?: (_folio_conversion_v1_ConvertSummary | null);
  /**
   * The next part of the PDF (output "pdf"), in order.
   */
  'pdf_chunk'?: (Buffer | Uint8Array | string);
  'item'?: "page"|"summary"|"pdf_chunk";
}

export interface ConvertReply__Output {
  'page'?: (_folio_conversion_v1_Page__Output | null);
  'summary'?: (_folio_conversion_v1_ConvertSummary__Output | null);
  /**
   * The next part of the PDF (output "pdf"), in order.
   */
  'pdf_chunk'?: (Buffer);
  'item'?: "page"|"summary"|"pdf_chunk";
}
