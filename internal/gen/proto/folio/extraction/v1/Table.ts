// Original file: proto/folio/extraction/v1/extraction.proto

import type { Row as _folio_extraction_v1_Row, Row__Output as _folio_extraction_v1_Row__Output } from '../../../folio/extraction/v1/Row.ts';
import type { TableCell as _folio_extraction_v1_TableCell, TableCell__Output as _folio_extraction_v1_TableCell__Output } from '../../../folio/extraction/v1/TableCell.ts';

export interface Table {
  'page_number'?: (number);
  'rows'?: (_folio_extraction_v1_Row)[];
  'markdown'?: (string);
  'cells'?: (_folio_extraction_v1_TableCell)[];
  'html'?: (string);
  /**
   * Nothing of the page's flow stands before (after) the table: the edge joins a table continued over pages.
   */
  'opens_page'?: (boolean);
  'closes_page'?: (boolean);
}

export interface Table__Output {
  'page_number': (number);
  'rows': (_folio_extraction_v1_Row__Output)[];
  'markdown': (string);
  'cells': (_folio_extraction_v1_TableCell__Output)[];
  'html': (string);
  /**
   * Nothing of the page's flow stands before (after) the table: the edge joins a table continued over pages.
   */
  'opens_page': (boolean);
  'closes_page': (boolean);
}
