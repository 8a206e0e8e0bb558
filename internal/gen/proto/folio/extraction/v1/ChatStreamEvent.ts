// Original file: proto/folio/extraction/v1/extraction.proto

import type { ChatDelta as _folio_extraction_v1_ChatDelta, ChatDelta__Output as _folio_extraction_v1_ChatDelta__Output } from '../../../folio/extraction/v1/ChatDelta.ts';
import type { ChatStreamEnd as _folio_extraction_v1_ChatStreamEnd, ChatStreamEnd__Output as _folio_extraction_v1_ChatStreamEnd__Output } from '../../../folio/extraction/v1/ChatStreamEnd.ts';

export interface ChatStreamEvent {
  'delta'?: (_folio_extraction_v1_ChatDelta | null);
  'end'?: (_folio_extraction_v1_ChatStreamEnd | null);
  'kind'?: "delta"|"end";
}

export interface ChatStreamEvent__Output {
  'delta'?: (_folio_extraction_v1_ChatDelta__Output | null);
  'end'?: (_folio_extraction_v1_ChatStreamEnd__Output | null);
  'kind'?: "delta"|"end";
}
