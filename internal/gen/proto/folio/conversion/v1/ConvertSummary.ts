// Original file: proto/folio/conversion/v1/conversion.proto

import type { Long } from '@grpc/proto-loader';

export interface ConvertSummary {
  'page_count'?: (number);
  /**
   * Sandbox start to exit, milliseconds: what is billed.
   */
  'compute_millis'?: (number | string | Long);
  /**
   * DOCX, PPTX, DOC, ODT, RTF or TXT (what the bytes were).
   */
  'format'?: (string);
  /**
   * runsc, kubernetes or unsandboxed.
   */
  'backend'?: (string);
  /**
   * Exact provider cost of the compute time in cents (before the platform
   * fee), decimal string; the edge bills it through its pricing module.
   */
  'provider_cost_cents'?: (string);
  /**
   * The document's pages; page_count of them were converted (fewer with a `pages` selection).
   */
  'document_page_count'?: (number);
}

export interface ConvertSummary__Output {
  'page_count': (number);
  /**
   * Sandbox start to exit, milliseconds: what is billed.
   */
  'compute_millis': (number);
  /**
   * DOCX, PPTX, DOC, ODT, RTF or TXT (what the bytes were).
   */
  'format': (string);
  /**
   * runsc, kubernetes or unsandboxed.
   */
  'backend': (string);
  /**
   * Exact provider cost of the compute time in cents (before the platform
   * fee), decimal string; the edge bills it through its pricing module.
   */
  'provider_cost_cents': (string);
  /**
   * The document's pages; page_count of them were converted (fewer with a `pages` selection).
   */
  'document_page_count': (number);
}
