// Original file: proto/folio/conversion/v1/conversion.proto

import type { ResultStart as _folio_conversion_v1_ResultStart, ResultStart__Output as _folio_conversion_v1_ResultStart__Output } from '../../../folio/conversion/v1/ResultStart.ts';
import type { Page as _folio_conversion_v1_Page, Page__Output as _folio_conversion_v1_Page__Output } from '../../../folio/conversion/v1/Page.ts';
import type { JobOutcome as _folio_conversion_v1_JobOutcome, JobOutcome__Output as _folio_conversion_v1_JobOutcome__Output } from '../../../folio/conversion/v1/JobOutcome.ts';

export interface ResultChunk {
  'start'?: (_folio_conversion_v1_ResultStart | null);
  'page'?: (_folio_conversion_v1_Page | null);
  'result'?: (_folio_conversion_v1_JobOutcome | null);
  /**
   * The next part of the PDF (output "pdf"), in order.
   */
  'pdf_chunk'?: (Buffer | Uint8Array | string);
  'item'?: "start"|"page"|"result"|"pdf_chunk";
}

export interface ResultChunk__Output {
  'start'?: (_folio_conversion_v1_ResultStart__Output | null);
  'page'?: (_folio_conversion_v1_Page__Output | null);
  'result'?: (_folio_conversion_v1_JobOutcome__Output | null);
  /**
   * The next part of the PDF (output "pdf"), in order.
   */
  'pdf_chunk'?: (Buffer);
  'item'?: "start"|"page"|"result"|"pdf_chunk";
}
