// Original file: proto/folio/conversion/v1/conversion.proto


export interface EstimateResponse {
  'format'?: (string);
  /**
   * Whole cents that will be charged (platform fee, rounding and minimum applied).
   */
  'estimated_cost_cents'?: (number);
  'estimated_time_seconds'?: (number | string);
  /**
   * "observed" (median of recent conversions of this format) or "default".
   */
  'basis'?: (string);
  /**
   * Conversions of this format the estimate is based on (0 for "default").
   */
  'samples'?: (number);
}

export interface EstimateResponse__Output {
  'format': (string);
  /**
   * Whole cents that will be charged (platform fee, rounding and minimum applied).
   */
  'estimated_cost_cents': (number);
  'estimated_time_seconds': (number);
  /**
   * "observed" (median of recent conversions of this format) or "default".
   */
  'basis': (string);
  /**
   * Conversions of this format the estimate is based on (0 for "default").
   */
  'samples': (number);
}
