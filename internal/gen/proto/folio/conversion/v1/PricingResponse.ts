// Original file: proto/folio/conversion/v1/conversion.proto

import type { FormatExample as _folio_conversion_v1_FormatExample, FormatExample__Output as _folio_conversion_v1_FormatExample__Output } from '../../../folio/conversion/v1/FormatExample.ts';

export interface PricingResponse {
  /**
   * dollars, "0.00278"
   */
  'base_rate_per_minute'?: (string);
  /**
   * "5"
   */
  'platform_fee_percentage'?: (string);
  /**
   * dollars, "0.01"
   */
  'minimum_charge'?: (string);
  'examples'?: (_folio_conversion_v1_FormatExample)[];
  /**
   * human-readable labels
   */
  'supported_formats'?: (string)[];
}

export interface PricingResponse__Output {
  /**
   * dollars, "0.00278"
   */
  'base_rate_per_minute': (string);
  /**
   * "5"
   */
  'platform_fee_percentage': (string);
  /**
   * dollars, "0.01"
   */
  'minimum_charge': (string);
  'examples': (_folio_conversion_v1_FormatExample__Output)[];
  /**
   * human-readable labels
   */
  'supported_formats': (string)[];
}
