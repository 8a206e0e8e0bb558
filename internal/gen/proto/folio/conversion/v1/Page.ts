// Original file: proto/folio/conversion/v1/conversion.proto


export interface Page {
  /**
   * from 1; Convert: the page's number in the document, SubmitResult: its position (1..n)
   */
  'page_number'?: (number);
  /**
   * 200 DPI PNG
   */
  'png'?: (Buffer | Uint8Array | string);
  /**
   * pixels
   */
  'width'?: (number);
  /**
   * pixels
   */
  'height'?: (number);
}

export interface Page__Output {
  /**
   * from 1; Convert: the page's number in the document, SubmitResult: its position (1..n)
   */
  'page_number': (number);
  /**
   * 200 DPI PNG
   */
  'png': (Buffer);
  /**
   * pixels
   */
  'width': (number);
  /**
   * pixels
   */
  'height': (number);
}
