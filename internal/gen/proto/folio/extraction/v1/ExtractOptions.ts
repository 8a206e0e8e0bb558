// Original file: proto/folio/extraction/v1/extraction.proto


export interface ExtractOptions {
  'extract_tables'?: (boolean);
  'language'?: (string);
  /**
   * text | json | markdown
   */
  'output_format'?: (string);
}

export interface ExtractOptions__Output {
  'extract_tables': (boolean);
  'language': (string);
  /**
   * text | json | markdown
   */
  'output_format': (string);
}
