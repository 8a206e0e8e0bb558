// Original file: proto/folio/extraction/v1/extraction.proto


/**
 * A table's cell where it starts (row and column from 0) and how many rows and columns it covers.
 */
export interface TableCell {
  'row'?: (number);
  'col'?: (number);
  'row_span'?: (number);
  'col_span'?: (number);
  'text'?: (string);
  /**
   * local models: the cell's words' box; empty when none
   */
  'bbox'?: (number)[];
}

/**
 * A table's cell where it starts (row and column from 0) and how many rows and columns it covers.
 */
export interface TableCell__Output {
  'row': (number);
  'col': (number);
  'row_span': (number);
  'col_span': (number);
  'text': (string);
  /**
   * local models: the cell's words' box; empty when none
   */
  'bbox': (number)[];
}
