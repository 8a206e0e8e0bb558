// Original file: proto/folio/conversion/v1/conversion.proto

import type { Long } from '@grpc/proto-loader';

export interface JobOutcome {
  'ok'?: (boolean);
  'page_count'?: (number);
  /**
   * conversion_failed | timeout | invalid_pages, when !ok
   */
  'error_code'?: (string);
  'error_message'?: (string);
  /**
   * Milliseconds per step inside the sandbox (informational).
   */
  'timings'?: ({[key: string]: number | string | Long});
  /**
   * The document's pages (page_count of them were converted), when ok.
   */
  'document_page_count'?: (number);
  /**
   * True when the PDF was submitted (output "pdf"); page_count is then 0.
   */
  'pdf'?: (boolean);
}

export interface JobOutcome__Output {
  'ok': (boolean);
  'page_count': (number);
  /**
   * conversion_failed | timeout | invalid_pages, when !ok
   */
  'error_code': (string);
  'error_message': (string);
  /**
   * Milliseconds per step inside the sandbox (informational).
   */
  'timings': ({[key: string]: number});
  /**
   * The document's pages (page_count of them were converted), when ok.
   */
  'document_page_count': (number);
  /**
   * True when the PDF was submitted (output "pdf"); page_count is then 0.
   */
  'pdf': (boolean);
}
