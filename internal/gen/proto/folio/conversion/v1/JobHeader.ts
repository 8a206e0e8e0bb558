// Original file: proto/folio/conversion/v1/conversion.proto

import type { Long } from '@grpc/proto-loader';

export interface JobHeader {
  /**
   * DOCX, PPTX, DOC, ODT, RTF, TXT
   */
  'format'?: (string);
  /**
   * 200
   */
  'dpi'?: (number);
  'max_pages'?: (number);
  /**
   * time the program may spend converting
   */
  'timeout_ms'?: (number | string | Long);
  'max_output_bytes'?: (number | string | Long);
  'document_bytes'?: (number | string | Long);
  'traceparent'?: (string);
  /**
   * Only these pages (ConvertRequest.pages); empty: every page. The sandbox
   * still submits them numbered 1..n, in document order.
   */
  'pages'?: (string);
  /**
   * "" (pages) or "pdf" (ConvertRequest.output): then the sandbox submits
   * the PDF in `pdf_chunk` messages and no page.
   */
  'output'?: (string);
}

export interface JobHeader__Output {
  /**
   * DOCX, PPTX, DOC, ODT, RTF, TXT
   */
  'format': (string);
  /**
   * 200
   */
  'dpi': (number);
  'max_pages': (number);
  /**
   * time the program may spend converting
   */
  'timeout_ms': (number);
  'max_output_bytes': (number);
  'document_bytes': (number);
  'traceparent': (string);
  /**
   * Only these pages (ConvertRequest.pages); empty: every page. The sandbox
   * still submits them numbered 1..n, in document order.
   */
  'pages': (string);
  /**
   * "" (pages) or "pdf" (ConvertRequest.output): then the sandbox submits
   * the PDF in `pdf_chunk` messages and no page.
   */
  'output': (string);
}
