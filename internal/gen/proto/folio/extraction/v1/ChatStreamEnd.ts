// Original file: proto/folio/extraction/v1/extraction.proto

import type { Usage as _folio_extraction_v1_Usage, Usage__Output as _folio_extraction_v1_Usage__Output } from '../../../folio/extraction/v1/Usage.ts';
import type { ChatStreamError as _folio_extraction_v1_ChatStreamError, ChatStreamError__Output as _folio_extraction_v1_ChatStreamError__Output } from '../../../folio/extraction/v1/ChatStreamError.ts';

/**
 * The last event: the whole call's usage and cost (what the provider billed,
 * also when `error` is set).
 */
export interface ChatStreamEnd {
  'id'?: (string);
  'finish_reason'?: (string);
  'usage'?: (_folio_extraction_v1_Usage | null);
  'model'?: (string);
  'error'?: (_folio_extraction_v1_ChatStreamError | null);
  /**
   * Pages the call read (local engines) or sent (images, upstream).
   */
  'pages'?: (number);
}

/**
 * The last event: the whole call's usage and cost (what the provider billed,
 * also when `error` is set).
 */
export interface ChatStreamEnd__Output {
  'id': (string);
  'finish_reason': (string);
  'usage': (_folio_extraction_v1_Usage__Output | null);
  'model': (string);
  'error': (_folio_extraction_v1_ChatStreamError__Output | null);
  /**
   * Pages the call read (local engines) or sent (images, upstream).
   */
  'pages': (number);
}
