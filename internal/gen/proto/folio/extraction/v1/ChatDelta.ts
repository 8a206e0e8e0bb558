// Original file: proto/folio/extraction/v1/extraction.proto

import type { Usage as _folio_extraction_v1_Usage, Usage__Output as _folio_extraction_v1_Usage__Output } from '../../../folio/extraction/v1/Usage.ts';

/**
 * One piece of a streamed answer.
 */
export interface ChatDelta {
  'content'?: (string);
  /**
   * The upstream's id of the generation (OpenRouter's "gen-…"), on the first
   * delta of an upstream stream: what GenerationCost asks about.
   */
  'generation_id'?: (string);
  /**
   * Local engines: the page this text was read from (from 1) and that page's
   * cost, billed once it is read. Upstream deltas carry neither.
   */
  'page_number'?: (number);
  'usage'?: (_folio_extraction_v1_Usage | null);
}

/**
 * One piece of a streamed answer.
 */
export interface ChatDelta__Output {
  'content': (string);
  /**
   * The upstream's id of the generation (OpenRouter's "gen-…"), on the first
   * delta of an upstream stream: what GenerationCost asks about.
   */
  'generation_id': (string);
  /**
   * Local engines: the page this text was read from (from 1) and that page's
   * cost, billed once it is read. Upstream deltas carry neither.
   */
  'page_number': (number);
  'usage': (_folio_extraction_v1_Usage__Output | null);
}
