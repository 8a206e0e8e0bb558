// Original file: proto/folio/conversion/v1/conversion.proto

import type { JobHeader as _folio_conversion_v1_JobHeader, JobHeader__Output as _folio_conversion_v1_JobHeader__Output } from '../../../folio/conversion/v1/JobHeader.ts';

export interface JobChunk {
  'header'?: (_folio_conversion_v1_JobHeader | null);
  'data'?: (Buffer | Uint8Array | string);
  'item'?: "header"|"data";
}

export interface JobChunk__Output {
  'header'?: (_folio_conversion_v1_JobHeader__Output | null);
  'data'?: (Buffer);
  'item'?: "header"|"data";
}
