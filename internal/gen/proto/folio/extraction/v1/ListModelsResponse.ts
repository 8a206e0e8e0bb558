// Original file: proto/folio/extraction/v1/extraction.proto

import type { Model as _folio_extraction_v1_Model, Model__Output as _folio_extraction_v1_Model__Output } from '../../../folio/extraction/v1/Model.ts';
import type { StrategyResolution as _folio_extraction_v1_StrategyResolution, StrategyResolution__Output as _folio_extraction_v1_StrategyResolution__Output } from '../../../folio/extraction/v1/StrategyResolution.ts';
import type { Long } from '@grpc/proto-loader';

export interface ListModelsResponse {
  'models'?: (_folio_extraction_v1_Model)[];
  /**
   * 0 = never fetched from upstream
   */
  'fetched_at_ms'?: (number | string | Long);
  /**
   * -1 = unknown
   */
  'age_seconds'?: (number | string);
  'stale'?: (boolean);
  'last_error'?: (string);
  'upstream_configured'?: (boolean);
  'strategies'?: (_folio_extraction_v1_StrategyResolution)[];
}

export interface ListModelsResponse__Output {
  'models': (_folio_extraction_v1_Model__Output)[];
  /**
   * 0 = never fetched from upstream
   */
  'fetched_at_ms': (number);
  /**
   * -1 = unknown
   */
  'age_seconds': (number);
  'stale': (boolean);
  'last_error': (string);
  'upstream_configured': (boolean);
  'strategies': (_folio_extraction_v1_StrategyResolution__Output)[];
}
