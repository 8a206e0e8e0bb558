// Original file: proto/folio/extraction/v1/extraction.proto

import type { Pricing as _folio_extraction_v1_Pricing, Pricing__Output as _folio_extraction_v1_Pricing__Output } from '../../../folio/extraction/v1/Pricing.ts';
import type { Long } from '@grpc/proto-loader';

export interface Model {
  'id'?: (string);
  'name'?: (string);
  'description'?: (string);
  'created'?: (number | string | Long);
  'owned_by'?: (string);
  /**
   * "upstream" | "local"
   */
  'source'?: (string);
  'context_length'?: (number | string | Long);
  /**
   * 0 = unknown
   */
  'max_completion_tokens'?: (number | string | Long);
  /**
   * image, pdf, text
   */
  'input_kinds'?: (string)[];
  'category'?: (string);
  'pricing'?: (_folio_extraction_v1_Pricing | null);
  /**
   * local engines: ISO 639-1 codes (or the engine's names); empty = not stated
   */
  'languages'?: (string)[];
}

export interface Model__Output {
  'id': (string);
  'name': (string);
  'description': (string);
  'created': (number);
  'owned_by': (string);
  /**
   * "upstream" | "local"
   */
  'source': (string);
  'context_length': (number);
  /**
   * 0 = unknown
   */
  'max_completion_tokens': (number);
  /**
   * image, pdf, text
   */
  'input_kinds': (string)[];
  'category': (string);
  'pricing': (_folio_extraction_v1_Pricing__Output | null);
  /**
   * local engines: ISO 639-1 codes (or the engine's names); empty = not stated
   */
  'languages': (string)[];
}
