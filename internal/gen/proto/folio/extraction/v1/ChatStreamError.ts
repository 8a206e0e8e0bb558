// Original file: proto/folio/extraction/v1/extraction.proto


/**
 * A failure after the stream began, in the one error shape.
 */
export interface ChatStreamError {
  'code'?: (string);
  'message'?: (string);
  /**
   * The FolioError's extra fields (upstream_status, upstream_code), JSON.
   */
  'extra_json'?: (string);
}

/**
 * A failure after the stream began, in the one error shape.
 */
export interface ChatStreamError__Output {
  'code': (string);
  'message': (string);
  /**
   * The FolioError's extra fields (upstream_status, upstream_code), JSON.
   */
  'extra_json': (string);
}
