// Original file: proto/folio/extraction/v1/extraction.proto


export interface StrategyResolution {
  'strategy'?: (string);
  'configured'?: (string)[];
  'resolved'?: (string);
  'fallback'?: (boolean);
  'reason'?: (string);
}

export interface StrategyResolution__Output {
  'strategy': (string);
  'configured': (string)[];
  'resolved': (string);
  'fallback': (boolean);
  'reason': (string);
}
