// Original file: proto/folio/extraction/v1/extraction.proto

import type { Model as _folio_extraction_v1_Model, Model__Output as _folio_extraction_v1_Model__Output } from '../../../folio/extraction/v1/Model.ts';

export interface ResolveModelResponse {
  'model'?: (_folio_extraction_v1_Model | null);
  /**
   * "model" | "alias" | "strategy"
   */
  'via'?: (string);
  'strategy'?: (string);
  /**
   * max_tokens the service sends upstream per page: holds are estimated with it.
   */
  'max_completion_tokens'?: (number);
}

export interface ResolveModelResponse__Output {
  'model': (_folio_extraction_v1_Model__Output | null);
  /**
   * "model" | "alias" | "strategy"
   */
  'via': (string);
  'strategy': (string);
  /**
   * max_tokens the service sends upstream per page: holds are estimated with it.
   */
  'max_completion_tokens': (number);
}
