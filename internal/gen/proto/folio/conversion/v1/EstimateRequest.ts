// Original file: proto/folio/conversion/v1/conversion.proto


export interface EstimateRequest {
  'mime_type'?: (string);
}

export interface EstimateRequest__Output {
  'mime_type': (string);
}
