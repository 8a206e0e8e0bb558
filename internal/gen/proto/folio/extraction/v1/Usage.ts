// Original file: proto/folio/extraction/v1/extraction.proto

import type { Long } from '@grpc/proto-loader';

export interface Usage {
  'prompt_tokens'?: (number | string | Long);
  'completion_tokens'?: (number | string | Long);
  /**
   * Exact provider cost in cents (decimal string, before the platform fee).
   */
  'provider_cost_cents'?: (string);
  /**
   * "reported" (the provider said so) or "computed" (tokens/images/pages x catalog price).
   */
  'cost_source'?: (string);
}

export interface Usage__Output {
  'prompt_tokens': (number);
  'completion_tokens': (number);
  /**
   * Exact provider cost in cents (decimal string, before the platform fee).
   */
  'provider_cost_cents': (string);
  /**
   * "reported" (the provider said so) or "computed" (tokens/images/pages x catalog price).
   */
  'cost_source': (string);
}
