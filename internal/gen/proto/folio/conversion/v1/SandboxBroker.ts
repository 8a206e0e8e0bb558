// Original file: proto/folio/conversion/v1/conversion.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { FetchJobRequest as _folio_conversion_v1_FetchJobRequest, FetchJobRequest__Output as _folio_conversion_v1_FetchJobRequest__Output } from '../../../folio/conversion/v1/FetchJobRequest.ts';
import type { JobChunk as _folio_conversion_v1_JobChunk, JobChunk__Output as _folio_conversion_v1_JobChunk__Output } from '../../../folio/conversion/v1/JobChunk.ts';
import type { ResultChunk as _folio_conversion_v1_ResultChunk, ResultChunk__Output as _folio_conversion_v1_ResultChunk__Output } from '../../../folio/conversion/v1/ResultChunk.ts';
import type { SubmitResultResponse as _folio_conversion_v1_SubmitResultResponse, SubmitResultResponse__Output as _folio_conversion_v1_SubmitResultResponse__Output } from '../../../folio/conversion/v1/SubmitResultResponse.ts';

/**
 * Called by sandbox pods of the `kubernetes` backend, on a port of its own
 * that only sandbox pods may reach (NetworkPolicy). Each ConversionSandbox
 * carries a one-time token: it allows exactly one FetchJob and one
 * SubmitResult, and expires with the sandbox's deadline.
 */
export interface SandboxBrokerClient extends grpc.Client {
  /**
   * The job (first message) and then the document in chunks.
   */
  FetchJob(argument: _folio_conversion_v1_FetchJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_JobChunk__Output>;
  FetchJob(argument: _folio_conversion_v1_FetchJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_JobChunk__Output>;
  /**
   * The job (first message) and then the document in chunks.
   */
  fetchJob(argument: _folio_conversion_v1_FetchJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_JobChunk__Output>;
  fetchJob(argument: _folio_conversion_v1_FetchJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_JobChunk__Output>;
  
  /**
   * The result: first message `start` with the token, then `page` messages in
   * page order (output "pdf": `pdf_chunk` messages), then one `result`.
   */
  SubmitResult(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  SubmitResult(metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  SubmitResult(options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  SubmitResult(callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  /**
   * The result: first message `start` with the token, then `page` messages in
   * page order (output "pdf": `pdf_chunk` messages), then one `result`.
   */
  submitResult(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  submitResult(metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  submitResult(options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  submitResult(callback: grpc.requestCallback<_folio_conversion_v1_SubmitResultResponse__Output>): grpc.ClientWritableStream<_folio_conversion_v1_ResultChunk>;
  
}

/**
 * Called by sandbox pods of the `kubernetes` backend, on a port of its own
 * that only sandbox pods may reach (NetworkPolicy). Each ConversionSandbox
 * carries a one-time token: it allows exactly one FetchJob and one
 * SubmitResult, and expires with the sandbox's deadline.
 */
export interface SandboxBrokerHandlers extends grpc.UntypedServiceImplementation {
  /**
   * The job (first message) and then the document in chunks.
   */
  FetchJob: grpc.handleServerStreamingCall<_folio_conversion_v1_FetchJobRequest__Output, _folio_conversion_v1_JobChunk>;
  
  /**
   * The result: first message `start` with the token, then `page` messages in
   * page order (output "pdf": `pdf_chunk` messages), then one `result`.
   */
  SubmitResult: grpc.handleClientStreamingCall<_folio_conversion_v1_ResultChunk__Output, _folio_conversion_v1_SubmitResultResponse>;
  
}

export interface SandboxBrokerDefinition extends grpc.ServiceDefinition {
  FetchJob: MethodDefinition<_folio_conversion_v1_FetchJobRequest, _folio_conversion_v1_JobChunk, _folio_conversion_v1_FetchJobRequest__Output, _folio_conversion_v1_JobChunk__Output>
  SubmitResult: MethodDefinition<_folio_conversion_v1_ResultChunk, _folio_conversion_v1_SubmitResultResponse, _folio_conversion_v1_ResultChunk__Output, _folio_conversion_v1_SubmitResultResponse__Output>
}
