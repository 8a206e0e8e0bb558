// Original file: proto/folio/extraction/v1/extraction.proto


export interface ExtractOptions {
  'extract_tables'?: (boolean);
  /**
   * "" = the engine finds the page's language
   */
  'language'?: (string);
  /**
   * text | json | markdown
   */
  'output_format'?: (string);
  /**
   * "" (none) | blocks | words
   */
  'include_layout'?: (string);
}

export interface ExtractOptions__Output {
  'extract_tables': (boolean);
  /**
   * "" = the engine finds the page's language
   */
  'language': (string);
  /**
   * text | json | markdown
   */
  'output_format': (string);
  /**
   * "" (none) | blocks | words
   */
  'include_layout': (string);
}
