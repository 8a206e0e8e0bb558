// Original file: proto/folio/extraction/v1/extraction.proto

import type { Row as _folio_extraction_v1_Row, Row__Output as _folio_extraction_v1_Row__Output } from '../../../folio/extraction/v1/Row.ts';

export interface Table {
  'page_number'?: (number);
  'rows'?: (_folio_extraction_v1_Row)[];
  'markdown'?: (string);
}

export interface Table__Output {
  'page_number': (number);
  'rows': (_folio_extraction_v1_Row__Output)[];
  'markdown': (string);
}
