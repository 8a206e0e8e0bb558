// Original file: proto/folio/extraction/v1/extraction.proto


/**
 * Boxes are [x0, y0, x1, y1] in pixels of the page image.
 */
export interface LayoutWord {
  'text'?: (string);
  'bbox'?: (number)[];
  'confidence'?: (number | string);
}

/**
 * Boxes are [x0, y0, x1, y1] in pixels of the page image.
 */
export interface LayoutWord__Output {
  'text': (string);
  'bbox': (number)[];
  'confidence': (number);
}
