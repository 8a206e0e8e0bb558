// Original file: proto/folio/conversion/v1/conversion.proto


export interface FormatExample {
  /**
   * DOCX, PPTX, ...
   */
  'format'?: (string);
  'mime_type'?: (string);
  'estimated_cost_cents'?: (number);
  'estimated_time_seconds'?: (number | string);
}

export interface FormatExample__Output {
  /**
   * DOCX, PPTX, ...
   */
  'format': (string);
  'mime_type': (string);
  'estimated_cost_cents': (number);
  'estimated_time_seconds': (number);
}
