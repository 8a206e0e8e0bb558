// Original file: proto/folio/conversion/v1/conversion.proto


export interface ResultStart {
  'token'?: (string);
}

export interface ResultStart__Output {
  'token': (string);
}
