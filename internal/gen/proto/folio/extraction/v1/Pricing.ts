// Original file: proto/folio/extraction/v1/extraction.proto


/**
 * Provider prices in US dollars per unit, decimal strings, before the platform fee.
 */
export interface Pricing {
  'prompt'?: (string);
  'completion'?: (string);
  'image'?: (string);
  'request'?: (string);
  'page'?: (string);
}

/**
 * Provider prices in US dollars per unit, decimal strings, before the platform fee.
 */
export interface Pricing__Output {
  'prompt': (string);
  'completion': (string);
  'image': (string);
  'request': (string);
  'page': (string);
}
