// Original file: proto/folio/extraction/v1/extraction.proto


export interface ResolveModelRequest {
  'model'?: (string);
  'strategy'?: (string);
  /**
   * Request field named in a validation error ("strategy" or "provider_preferences.strategy").
   */
  'strategy_param'?: (string);
}

export interface ResolveModelRequest__Output {
  'model': (string);
  'strategy': (string);
  /**
   * Request field named in a validation error ("strategy" or "provider_preferences.strategy").
   */
  'strategy_param': (string);
}
