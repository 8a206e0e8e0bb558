// Original file: proto/folio/conversion/v1/conversion.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ConvertReply as _folio_conversion_v1_ConvertReply, ConvertReply__Output as _folio_conversion_v1_ConvertReply__Output } from '../../../folio/conversion/v1/ConvertReply.ts';
import type { ConvertRequest as _folio_conversion_v1_ConvertRequest, ConvertRequest__Output as _folio_conversion_v1_ConvertRequest__Output } from '../../../folio/conversion/v1/ConvertRequest.ts';
import type { EstimateRequest as _folio_conversion_v1_EstimateRequest, EstimateRequest__Output as _folio_conversion_v1_EstimateRequest__Output } from '../../../folio/conversion/v1/EstimateRequest.ts';
import type { EstimateResponse as _folio_conversion_v1_EstimateResponse, EstimateResponse__Output as _folio_conversion_v1_EstimateResponse__Output } from '../../../folio/conversion/v1/EstimateResponse.ts';
import type { PricingRequest as _folio_conversion_v1_PricingRequest, PricingRequest__Output as _folio_conversion_v1_PricingRequest__Output } from '../../../folio/conversion/v1/PricingRequest.ts';
import type { PricingResponse as _folio_conversion_v1_PricingResponse, PricingResponse__Output as _folio_conversion_v1_PricingResponse__Output } from '../../../folio/conversion/v1/PricingResponse.ts';

/**
 * Called by the edge.
 */
export interface ConversionServiceClient extends grpc.Client {
  /**
   * Converts one document. The reply streams one `page` per message in page
   * order (with output "pdf": the PDF in `pdf_chunk` messages of at most
   * 1 MiB), then exactly one `summary`; errors end the stream with a status
   * carrying the Folio error code (conversion_failed, timeout,
   * unsupported_format, payload_too_large, service_unavailable, ...).
   */
  Convert(argument: _folio_conversion_v1_ConvertRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_ConvertReply__Output>;
  Convert(argument: _folio_conversion_v1_ConvertRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_ConvertReply__Output>;
  /**
   * Converts one document. The reply streams one `page` per message in page
   * order (with output "pdf": the PDF in `pdf_chunk` messages of at most
   * 1 MiB), then exactly one `summary`; errors end the stream with a status
   * carrying the Folio error code (conversion_failed, timeout,
   * unsupported_format, payload_too_large, service_unavailable, ...).
   */
  convert(argument: _folio_conversion_v1_ConvertRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_ConvertReply__Output>;
  convert(argument: _folio_conversion_v1_ConvertRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_conversion_v1_ConvertReply__Output>;
  
  /**
   * Estimated cost and time of one conversion of a MIME type.
   */
  Estimate(argument: _folio_conversion_v1_EstimateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  Estimate(argument: _folio_conversion_v1_EstimateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  Estimate(argument: _folio_conversion_v1_EstimateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  Estimate(argument: _folio_conversion_v1_EstimateRequest, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Estimated cost and time of one conversion of a MIME type.
   */
  estimate(argument: _folio_conversion_v1_EstimateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  estimate(argument: _folio_conversion_v1_EstimateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  estimate(argument: _folio_conversion_v1_EstimateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  estimate(argument: _folio_conversion_v1_EstimateRequest, callback: grpc.requestCallback<_folio_conversion_v1_EstimateResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The price list with an example per format.
   */
  Pricing(argument: _folio_conversion_v1_PricingRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  Pricing(argument: _folio_conversion_v1_PricingRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  Pricing(argument: _folio_conversion_v1_PricingRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  Pricing(argument: _folio_conversion_v1_PricingRequest, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The price list with an example per format.
   */
  pricing(argument: _folio_conversion_v1_PricingRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  pricing(argument: _folio_conversion_v1_PricingRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  pricing(argument: _folio_conversion_v1_PricingRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  pricing(argument: _folio_conversion_v1_PricingRequest, callback: grpc.requestCallback<_folio_conversion_v1_PricingResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * Called by the edge.
 */
export interface ConversionServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Converts one document. The reply streams one `page` per message in page
   * order (with output "pdf": the PDF in `pdf_chunk` messages of at most
   * 1 MiB), then exactly one `summary`; errors end the stream with a status
   * carrying the Folio error code (conversion_failed, timeout,
   * unsupported_format, payload_too_large, service_unavailable, ...).
   */
  Convert: grpc.handleServerStreamingCall<_folio_conversion_v1_ConvertRequest__Output, _folio_conversion_v1_ConvertReply>;
  
  /**
   * Estimated cost and time of one conversion of a MIME type.
   */
  Estimate: grpc.handleUnaryCall<_folio_conversion_v1_EstimateRequest__Output, _folio_conversion_v1_EstimateResponse>;
  
  /**
   * The price list with an example per format.
   */
  Pricing: grpc.handleUnaryCall<_folio_conversion_v1_PricingRequest__Output, _folio_conversion_v1_PricingResponse>;
  
}

export interface ConversionServiceDefinition extends grpc.ServiceDefinition {
  Convert: MethodDefinition<_folio_conversion_v1_ConvertRequest, _folio_conversion_v1_ConvertReply, _folio_conversion_v1_ConvertRequest__Output, _folio_conversion_v1_ConvertReply__Output>
  Estimate: MethodDefinition<_folio_conversion_v1_EstimateRequest, _folio_conversion_v1_EstimateResponse, _folio_conversion_v1_EstimateRequest__Output, _folio_conversion_v1_EstimateResponse__Output>
  Pricing: MethodDefinition<_folio_conversion_v1_PricingRequest, _folio_conversion_v1_PricingResponse, _folio_conversion_v1_PricingRequest__Output, _folio_conversion_v1_PricingResponse__Output>
}
