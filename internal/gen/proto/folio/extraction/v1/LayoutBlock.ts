// Original file: proto/folio/extraction/v1/extraction.proto

import type { LayoutWord as _folio_extraction_v1_LayoutWord, LayoutWord__Output as _folio_extraction_v1_LayoutWord__Output } from '../../../folio/extraction/v1/LayoutWord.ts';

export interface LayoutBlock {
  /**
   * text | table | figure | header | footer
   */
  'type'?: (string);
  'bbox'?: (number)[];
  'text'?: (string);
  'words'?: (_folio_extraction_v1_LayoutWord)[];
  'has_words'?: (boolean);
}

export interface LayoutBlock__Output {
  /**
   * text | table | figure | header | footer
   */
  'type': (string);
  'bbox': (number)[];
  'text': (string);
  'words': (_folio_extraction_v1_LayoutWord__Output)[];
  'has_words': (boolean);
}
