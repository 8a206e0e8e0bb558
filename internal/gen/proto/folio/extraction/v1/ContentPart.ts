// Original file: proto/folio/extraction/v1/extraction.proto

import type { Attachment as _folio_extraction_v1_Attachment, Attachment__Output as _folio_extraction_v1_Attachment__Output } from '../../../folio/extraction/v1/Attachment.ts';

export interface ContentPart {
  'text'?: (string);
  'image'?: (_folio_extraction_v1_Attachment | null);
  'file'?: (_folio_extraction_v1_Attachment | null);
  'kind'?: "text"|"image"|"file";
}

export interface ContentPart__Output {
  'text'?: (string);
  'image'?: (_folio_extraction_v1_Attachment__Output | null);
  'file'?: (_folio_extraction_v1_Attachment__Output | null);
  'kind'?: "text"|"image"|"file";
}
