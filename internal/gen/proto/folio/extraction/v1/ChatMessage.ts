// Original file: proto/folio/extraction/v1/extraction.proto

import type { ContentPart as _folio_extraction_v1_ContentPart, ContentPart__Output as _folio_extraction_v1_ContentPart__Output } from '../../../folio/extraction/v1/ContentPart.ts';

export interface ChatMessage {
  'role'?: (string);
  'content'?: (_folio_extraction_v1_ContentPart)[];
}

export interface ChatMessage__Output {
  'role': (string);
  'content': (_folio_extraction_v1_ContentPart__Output)[];
}
