// Original file: proto/folio/extraction/v1/extraction.proto


export interface GenerationCostRequest {
  'model'?: (string);
  'generation_id'?: (string);
}

export interface GenerationCostRequest__Output {
  'model': (string);
  'generation_id': (string);
}
