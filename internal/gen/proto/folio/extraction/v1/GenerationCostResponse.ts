// Original file: proto/folio/extraction/v1/extraction.proto

import type { Usage as _folio_extraction_v1_Usage, Usage__Output as _folio_extraction_v1_Usage__Output } from '../../../folio/extraction/v1/Usage.ts';

export interface GenerationCostResponse {
  /**
   * False when the provider has no record of it (yet): nothing is known to be billed.
   */
  'found'?: (boolean);
  'usage'?: (_folio_extraction_v1_Usage | null);
}

export interface GenerationCostResponse__Output {
  /**
   * False when the provider has no record of it (yet): nothing is known to be billed.
   */
  'found': (boolean);
  'usage': (_folio_extraction_v1_Usage__Output | null);
}
