// Original file: proto/folio/extraction/v1/extraction.proto


export interface Row {
  'cells'?: (string)[];
}

export interface Row__Output {
  'cells': (string)[];
}
