// Original file: proto/folio/extraction/v1/extraction.proto


export interface Attachment {
  'data'?: (Buffer | Uint8Array | string);
  'mime_type'?: (string);
  'filename'?: (string);
}

export interface Attachment__Output {
  'data': (Buffer);
  'mime_type': (string);
  'filename': (string);
}
