// Original file: proto/folio/conversion/v1/conversion.proto


export interface ConvertRequest {
  /**
   * The document's bytes, exactly as received.
   */
  'document'?: (Buffer | Uint8Array | string);
  /**
   * The MIME type the client declared (or the edge sniffed). It must be one
   * of the supported conversion types, and the bytes must agree with it.
   */
  'mime_type'?: (string);
  /**
   * Echoed in logs only.
   */
  'filename'?: (string);
  /**
   * Most pages the caller accepts (0: the service's own limit).
   */
  'max_pages'?: (number);
  /**
   * The edge's request id, for logs and traces.
   */
  'request_id'?: (string);
  /**
   * Only these pages, as the canonical text of the request's `pages` option
   * ("1-20,25,30-"; docs/conversion.md "Pages"); empty: every page. The
   * reply's pages keep their numbers in the document.
   */
  'pages'?: (string);
  /**
   * "" or "pages": the pages as PNGs. "pdf": the PDF LibreOffice renders,
   * every page of it and none rendered to an image (a durable job reads it
   * like a PDF it was sent); `pages` must then be empty, and `max_pages`
   * bounds the document's pages (the caller's own limit, not the service's
   * limit of rendered pages).
   */
  'output'?: (string);
}

export interface ConvertRequest__Output {
  /**
   * The document's bytes, exactly as received.
   */
  'document': (Buffer);
  /**
   * The MIME type the client declared (or the edge sniffed). It must be one
   * of the supported conversion types, and the bytes must agree with it.
   */
  'mime_type': (string);
  /**
   * Echoed in logs only.
   */
  'filename': (string);
  /**
   * Most pages the caller accepts (0: the service's own limit).
   */
  'max_pages': (number);
  /**
   * The edge's request id, for logs and traces.
   */
  'request_id': (string);
  /**
   * Only these pages, as the canonical text of the request's `pages` option
   * ("1-20,25,30-"; docs/conversion.md "Pages"); empty: every page. The
   * reply's pages keep their numbers in the document.
   */
  'pages': (string);
  /**
   * "" or "pages": the pages as PNGs. "pdf": the PDF LibreOffice renders,
   * every page of it and none rendered to an image (a durable job reads it
   * like a PDF it was sent); `pages` must then be empty, and `max_pages`
   * bounds the document's pages (the caller's own limit, not the service's
   * limit of rendered pages).
   */
  'output': (string);
}
