// Original file: proto/folio/extraction/v1/extraction.proto

import type { ChatMessage as _folio_extraction_v1_ChatMessage, ChatMessage__Output as _folio_extraction_v1_ChatMessage__Output } from '../../../folio/extraction/v1/ChatMessage.ts';
import type { Plugin as _folio_extraction_v1_Plugin, Plugin__Output as _folio_extraction_v1_Plugin__Output } from '../../../folio/extraction/v1/Plugin.ts';

export interface ChatRequest {
  'model'?: (string);
  'messages'?: (_folio_extraction_v1_ChatMessage)[];
  'plugins'?: (_folio_extraction_v1_Plugin)[];
  /**
   * 0 = provider default
   */
  'max_tokens'?: (number);
}

export interface ChatRequest__Output {
  'model': (string);
  'messages': (_folio_extraction_v1_ChatMessage__Output)[];
  'plugins': (_folio_extraction_v1_Plugin__Output)[];
  /**
   * 0 = provider default
   */
  'max_tokens': (number);
}
