// Original file: proto/folio/conversion/v1/conversion.proto

import type { Page as _folio_conversion_v1_Page, Page__Output as _folio_conversion_v1_Page__Output } from '../../../folio/conversion/v1/Page.ts';
import type { ConvertSummary as _folio_conversion_v1_ConvertSummary, ConvertSummary__Output as _folio_conversion_v1_ConvertSummary__Output } from '../../../folio/conversion/v1/ConvertSummary.ts';

export interface ConvertReply {
  'page'?: (_folio_conversion_v1_Page | null);
  'summary'?: (_folio_conversion_v1_ConvertSummary | null);
  'item'?: "page"|"summary";
}

export interface ConvertReply__Output {
  'page'?: (_folio_conversion_v1_Page__Output | null);
  'summary'?: (_folio_conversion_v1_ConvertSummary__Output | null);
  'item'?: "page"|"summary";
}
