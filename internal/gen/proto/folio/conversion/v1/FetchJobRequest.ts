// Original file: proto/folio/conversion/v1/conversion.proto


export interface FetchJobRequest {
  'token'?: (string);
}

export interface FetchJobRequest__Output {
  'token': (string);
}
