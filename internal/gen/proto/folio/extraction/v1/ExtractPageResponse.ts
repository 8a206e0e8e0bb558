// Original file: proto/folio/extraction/v1/extraction.proto

import type { Table as _folio_extraction_v1_Table, Table__Output as _folio_extraction_v1_Table__Output } from '../../../folio/extraction/v1/Table.ts';
import type { Usage as _folio_extraction_v1_Usage, Usage__Output as _folio_extraction_v1_Usage__Output } from '../../../folio/extraction/v1/Usage.ts';
import type { PageLayout as _folio_extraction_v1_PageLayout, PageLayout__Output as _folio_extraction_v1_PageLayout__Output } from '../../../folio/extraction/v1/PageLayout.ts';
import type { PageBlock as _folio_extraction_v1_PageBlock, PageBlock__Output as _folio_extraction_v1_PageBlock__Output } from '../../../folio/extraction/v1/PageBlock.ts';

export interface ExtractPageResponse {
  'text'?: (string);
  'tables'?: (_folio_extraction_v1_Table)[];
  'has_confidence'?: (boolean);
  'confidence'?: (number | string);
  'usage'?: (_folio_extraction_v1_Usage | null);
  /**
   * Set only when include_layout asked for it.
   */
  'layout'?: (_folio_extraction_v1_PageLayout | null);
  /**
   * Local engines (docs/ocr.md "Turned and skewed pages"): the page as sent was
   * turned clockwise by rotation (0, 90, 180, 270) + skew_degrees from upright
   * and straightened before it was read; the layout's boxes are in the page as sent.
   */
  'has_straightening'?: (boolean);
  'rotation'?: (number);
  'skew_degrees'?: (number | string);
  /**
   * Local engines with output_format json: the page's structure in reading order.
   */
  'has_blocks'?: (boolean);
  'blocks'?: (_folio_extraction_v1_PageBlock)[];
}

export interface ExtractPageResponse__Output {
  'text': (string);
  'tables': (_folio_extraction_v1_Table__Output)[];
  'has_confidence': (boolean);
  'confidence': (number);
  'usage': (_folio_extraction_v1_Usage__Output | null);
  /**
   * Set only when include_layout asked for it.
   */
  'layout': (_folio_extraction_v1_PageLayout__Output | null);
  /**
   * Local engines (docs/ocr.md "Turned and skewed pages"): the page as sent was
   * turned clockwise by rotation (0, 90, 180, 270) + skew_degrees from upright
   * and straightened before it was read; the layout's boxes are in the page as sent.
   */
  'has_straightening': (boolean);
  'rotation': (number);
  'skew_degrees': (number);
  /**
   * Local engines with output_format json: the page's structure in reading order.
   */
  'has_blocks': (boolean);
  'blocks': (_folio_extraction_v1_PageBlock__Output)[];
}
