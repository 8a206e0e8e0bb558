// Original file: proto/folio/extraction/v1/extraction.proto


export interface Plugin {
  'id'?: (string);
  'pdf_engine'?: (string);
}

export interface Plugin__Output {
  'id': (string);
  'pdf_engine': (string);
}
