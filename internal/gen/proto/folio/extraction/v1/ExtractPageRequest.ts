// Original file: proto/folio/extraction/v1/extraction.proto

import type { ExtractOptions as _folio_extraction_v1_ExtractOptions, ExtractOptions__Output as _folio_extraction_v1_ExtractOptions__Output } from '../../../folio/extraction/v1/ExtractOptions.ts';

export interface ExtractPageRequest {
  'model'?: (string);
  'page_number'?: (number);
  'image'?: (Buffer | Uint8Array | string);
  'mime_type'?: (string);
  'options'?: (_folio_extraction_v1_ExtractOptions | null);
}

export interface ExtractPageRequest__Output {
  'model': (string);
  'page_number': (number);
  'image': (Buffer);
  'mime_type': (string);
  'options': (_folio_extraction_v1_ExtractOptions__Output | null);
}
