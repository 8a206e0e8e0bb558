// Original file: proto/folio/extraction/v1/extraction.proto

import type { LayoutBlock as _folio_extraction_v1_LayoutBlock, LayoutBlock__Output as _folio_extraction_v1_LayoutBlock__Output } from '../../../folio/extraction/v1/LayoutBlock.ts';

export interface PageLayout {
  'width'?: (number);
  'height'?: (number);
  'blocks'?: (_folio_extraction_v1_LayoutBlock)[];
}

export interface PageLayout__Output {
  'width': (number);
  'height': (number);
  'blocks': (_folio_extraction_v1_LayoutBlock__Output)[];
}
