// Original file: proto/folio/extraction/v1/extraction.proto

import type { Row as _folio_extraction_v1_Row, Row__Output as _folio_extraction_v1_Row__Output } from '../../../folio/extraction/v1/Row.ts';
import type { TableCell as _folio_extraction_v1_TableCell, TableCell__Output as _folio_extraction_v1_TableCell__Output } from '../../../folio/extraction/v1/TableCell.ts';

/**
 * One block of a page's structure (output_format json, local engines; docs/structure.md "Output formats").
 */
export interface PageBlock {
  /**
   * heading | paragraph | list_item | table | figure | header | footer
   */
  'type'?: (string);
  'bbox'?: (number)[];
  'text'?: (string);
  /**
   * headings: 1-3 (0 otherwise)
   */
  'level'?: (number);
  /**
   * list items
   */
  'ordered'?: (boolean);
  /**
   * list items: nesting, 0 outermost
   */
  'depth'?: (number);
  /**
   * list items: the marker as printed
   */
  'marker'?: (string);
  /**
   * tables
   */
  'cells'?: (_folio_extraction_v1_Row)[];
  /**
   * tables: each cell once, with its spans
   */
  'table_cells'?: (_folio_extraction_v1_TableCell)[];
}

/**
 * One block of a page's structure (output_format json, local engines; docs/structure.md "Output formats").
 */
export interface PageBlock__Output {
  /**
   * heading | paragraph | list_item | table | figure | header | footer
   */
  'type': (string);
  'bbox': (number)[];
  'text': (string);
  /**
   * headings: 1-3 (0 otherwise)
   */
  'level': (number);
  /**
   * list items
   */
  'ordered': (boolean);
  /**
   * list items: nesting, 0 outermost
   */
  'depth': (number);
  /**
   * list items: the marker as printed
   */
  'marker': (string);
  /**
   * tables
   */
  'cells': (_folio_extraction_v1_Row__Output)[];
  /**
   * tables: each cell once, with its spans
   */
  'table_cells': (_folio_extraction_v1_TableCell__Output)[];
}
