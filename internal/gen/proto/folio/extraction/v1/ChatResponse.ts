// Original file: proto/folio/extraction/v1/extraction.proto

import type { Usage as _folio_extraction_v1_Usage, Usage__Output as _folio_extraction_v1_Usage__Output } from '../../../folio/extraction/v1/Usage.ts';

export interface ChatResponse {
  'id'?: (string);
  'content'?: (string);
  'finish_reason'?: (string);
  'usage'?: (_folio_extraction_v1_Usage | null);
  /**
   * The model that answered.
   */
  'model'?: (string);
}

export interface ChatResponse__Output {
  'id': (string);
  'content': (string);
  'finish_reason': (string);
  'usage': (_folio_extraction_v1_Usage__Output | null);
  /**
   * The model that answered.
   */
  'model': (string);
}
