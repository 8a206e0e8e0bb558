// Original file: proto/folio/extraction/v1/extraction.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ChatRequest as _folio_extraction_v1_ChatRequest, ChatRequest__Output as _folio_extraction_v1_ChatRequest__Output } from '../../../folio/extraction/v1/ChatRequest.ts';
import type { ChatResponse as _folio_extraction_v1_ChatResponse, ChatResponse__Output as _folio_extraction_v1_ChatResponse__Output } from '../../../folio/extraction/v1/ChatResponse.ts';
import type { ChatStreamEvent as _folio_extraction_v1_ChatStreamEvent, ChatStreamEvent__Output as _folio_extraction_v1_ChatStreamEvent__Output } from '../../../folio/extraction/v1/ChatStreamEvent.ts';
import type { ExtractPageRequest as _folio_extraction_v1_ExtractPageRequest, ExtractPageRequest__Output as _folio_extraction_v1_ExtractPageRequest__Output } from '../../../folio/extraction/v1/ExtractPageRequest.ts';
import type { ExtractPageResponse as _folio_extraction_v1_ExtractPageResponse, ExtractPageResponse__Output as _folio_extraction_v1_ExtractPageResponse__Output } from '../../../folio/extraction/v1/ExtractPageResponse.ts';
import type { GenerationCostRequest as _folio_extraction_v1_GenerationCostRequest, GenerationCostRequest__Output as _folio_extraction_v1_GenerationCostRequest__Output } from '../../../folio/extraction/v1/GenerationCostRequest.ts';
import type { GenerationCostResponse as _folio_extraction_v1_GenerationCostResponse, GenerationCostResponse__Output as _folio_extraction_v1_GenerationCostResponse__Output } from '../../../folio/extraction/v1/GenerationCostResponse.ts';
import type { ListModelsRequest as _folio_extraction_v1_ListModelsRequest, ListModelsRequest__Output as _folio_extraction_v1_ListModelsRequest__Output } from '../../../folio/extraction/v1/ListModelsRequest.ts';
import type { ListModelsResponse as _folio_extraction_v1_ListModelsResponse, ListModelsResponse__Output as _folio_extraction_v1_ListModelsResponse__Output } from '../../../folio/extraction/v1/ListModelsResponse.ts';
import type { ResolveModelRequest as _folio_extraction_v1_ResolveModelRequest, ResolveModelRequest__Output as _folio_extraction_v1_ResolveModelRequest__Output } from '../../../folio/extraction/v1/ResolveModelRequest.ts';
import type { ResolveModelResponse as _folio_extraction_v1_ResolveModelResponse, ResolveModelResponse__Output as _folio_extraction_v1_ResolveModelResponse__Output } from '../../../folio/extraction/v1/ResolveModelResponse.ts';

export interface ExtractionServiceClient extends grpc.Client {
  /**
   * A chat completion over text and image parts (documents arrive already as page images).
   */
  Chat(argument: _folio_extraction_v1_ChatRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  Chat(argument: _folio_extraction_v1_ChatRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  Chat(argument: _folio_extraction_v1_ChatRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  Chat(argument: _folio_extraction_v1_ChatRequest, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  /**
   * A chat completion over text and image parts (documents arrive already as page images).
   */
  chat(argument: _folio_extraction_v1_ChatRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  chat(argument: _folio_extraction_v1_ChatRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  chat(argument: _folio_extraction_v1_ChatRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  chat(argument: _folio_extraction_v1_ChatRequest, callback: grpc.requestCallback<_folio_extraction_v1_ChatResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The same chat, streamed: pieces of the answer as they arrive (an upstream
   * model's tokens as the provider sends them; a local engine's text page by
   * page), then one ChatStreamEnd with the call's usage and cost. A failure
   * before the first event is the call's gRPC status; one after it is the
   * end's `error`, beside what the provider billed until then.
   */
  ChatStream(argument: _folio_extraction_v1_ChatRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_extraction_v1_ChatStreamEvent__Output>;
  ChatStream(argument: _folio_extraction_v1_ChatRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_extraction_v1_ChatStreamEvent__Output>;
  /**
   * The same chat, streamed: pieces of the answer as they arrive (an upstream
   * model's tokens as the provider sends them; a local engine's text page by
   * page), then one ChatStreamEnd with the call's usage and cost. A failure
   * before the first event is the call's gRPC status; one after it is the
   * end's `error`, beside what the provider billed until then.
   */
  chatStream(argument: _folio_extraction_v1_ChatRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_extraction_v1_ChatStreamEvent__Output>;
  chatStream(argument: _folio_extraction_v1_ChatRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_folio_extraction_v1_ChatStreamEvent__Output>;
  
  /**
   * Extracts one page image with one model.
   */
  ExtractPage(argument: _folio_extraction_v1_ExtractPageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  ExtractPage(argument: _folio_extraction_v1_ExtractPageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  ExtractPage(argument: _folio_extraction_v1_ExtractPageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  ExtractPage(argument: _folio_extraction_v1_ExtractPageRequest, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Extracts one page image with one model.
   */
  extractPage(argument: _folio_extraction_v1_ExtractPageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  extractPage(argument: _folio_extraction_v1_ExtractPageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  extractPage(argument: _folio_extraction_v1_ExtractPageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  extractPage(argument: _folio_extraction_v1_ExtractPageRequest, callback: grpc.requestCallback<_folio_extraction_v1_ExtractPageResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * What the upstream billed for a generation whose stream was cut by the
   * caller (its client went away): the provider's own record of it.
   */
  GenerationCost(argument: _folio_extraction_v1_GenerationCostRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  GenerationCost(argument: _folio_extraction_v1_GenerationCostRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  GenerationCost(argument: _folio_extraction_v1_GenerationCostRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  GenerationCost(argument: _folio_extraction_v1_GenerationCostRequest, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  /**
   * What the upstream billed for a generation whose stream was cut by the
   * caller (its client went away): the provider's own record of it.
   */
  generationCost(argument: _folio_extraction_v1_GenerationCostRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  generationCost(argument: _folio_extraction_v1_GenerationCostRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  generationCost(argument: _folio_extraction_v1_GenerationCostRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  generationCost(argument: _folio_extraction_v1_GenerationCostRequest, callback: grpc.requestCallback<_folio_extraction_v1_GenerationCostResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The current catalog (upstream + local), its freshness and the strategy table.
   */
  ListModels(argument: _folio_extraction_v1_ListModelsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  ListModels(argument: _folio_extraction_v1_ListModelsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  ListModels(argument: _folio_extraction_v1_ListModelsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  ListModels(argument: _folio_extraction_v1_ListModelsRequest, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The current catalog (upstream + local), its freshness and the strategy table.
   */
  listModels(argument: _folio_extraction_v1_ListModelsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  listModels(argument: _folio_extraction_v1_ListModelsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  listModels(argument: _folio_extraction_v1_ListModelsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  listModels(argument: _folio_extraction_v1_ListModelsRequest, callback: grpc.requestCallback<_folio_extraction_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Resolves `model` or `strategy` to one catalog model (validation uses the current list).
   */
  ResolveModel(argument: _folio_extraction_v1_ResolveModelRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  ResolveModel(argument: _folio_extraction_v1_ResolveModelRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  ResolveModel(argument: _folio_extraction_v1_ResolveModelRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  ResolveModel(argument: _folio_extraction_v1_ResolveModelRequest, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Resolves `model` or `strategy` to one catalog model (validation uses the current list).
   */
  resolveModel(argument: _folio_extraction_v1_ResolveModelRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  resolveModel(argument: _folio_extraction_v1_ResolveModelRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  resolveModel(argument: _folio_extraction_v1_ResolveModelRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  resolveModel(argument: _folio_extraction_v1_ResolveModelRequest, callback: grpc.requestCallback<_folio_extraction_v1_ResolveModelResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface ExtractionServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * A chat completion over text and image parts (documents arrive already as page images).
   */
  Chat: grpc.handleUnaryCall<_folio_extraction_v1_ChatRequest__Output, _folio_extraction_v1_ChatResponse>;
  
  /**
   * The same chat, streamed: pieces of the answer as they arrive (an upstream
   * model's tokens as the provider sends them; a local engine's text page by
   * page), then one ChatStreamEnd with the call's usage and cost. A failure
   * before the first event is the call's gRPC status; one after it is the
   * end's `error`, beside what the provider billed until then.
   */
  ChatStream: grpc.handleServerStreamingCall<_folio_extraction_v1_ChatRequest__Output, _folio_extraction_v1_ChatStreamEvent>;
  
  /**
   * Extracts one page image with one model.
   */
  ExtractPage: grpc.handleUnaryCall<_folio_extraction_v1_ExtractPageRequest__Output, _folio_extraction_v1_ExtractPageResponse>;
  
  /**
   * What the upstream billed for a generation whose stream was cut by the
   * caller (its client went away): the provider's own record of it.
   */
  GenerationCost: grpc.handleUnaryCall<_folio_extraction_v1_GenerationCostRequest__Output, _folio_extraction_v1_GenerationCostResponse>;
  
  /**
   * The current catalog (upstream + local), its freshness and the strategy table.
   */
  ListModels: grpc.handleUnaryCall<_folio_extraction_v1_ListModelsRequest__Output, _folio_extraction_v1_ListModelsResponse>;
  
  /**
   * Resolves `model` or `strategy` to one catalog model (validation uses the current list).
   */
  ResolveModel: grpc.handleUnaryCall<_folio_extraction_v1_ResolveModelRequest__Output, _folio_extraction_v1_ResolveModelResponse>;
  
}

export interface ExtractionServiceDefinition extends grpc.ServiceDefinition {
  Chat: MethodDefinition<_folio_extraction_v1_ChatRequest, _folio_extraction_v1_ChatResponse, _folio_extraction_v1_ChatRequest__Output, _folio_extraction_v1_ChatResponse__Output>
  ChatStream: MethodDefinition<_folio_extraction_v1_ChatRequest, _folio_extraction_v1_ChatStreamEvent, _folio_extraction_v1_ChatRequest__Output, _folio_extraction_v1_ChatStreamEvent__Output>
  ExtractPage: MethodDefinition<_folio_extraction_v1_ExtractPageRequest, _folio_extraction_v1_ExtractPageResponse, _folio_extraction_v1_ExtractPageRequest__Output, _folio_extraction_v1_ExtractPageResponse__Output>
  GenerationCost: MethodDefinition<_folio_extraction_v1_GenerationCostRequest, _folio_extraction_v1_GenerationCostResponse, _folio_extraction_v1_GenerationCostRequest__Output, _folio_extraction_v1_GenerationCostResponse__Output>
  ListModels: MethodDefinition<_folio_extraction_v1_ListModelsRequest, _folio_extraction_v1_ListModelsResponse, _folio_extraction_v1_ListModelsRequest__Output, _folio_extraction_v1_ListModelsResponse__Output>
  ResolveModel: MethodDefinition<_folio_extraction_v1_ResolveModelRequest, _folio_extraction_v1_ResolveModelResponse, _folio_extraction_v1_ResolveModelRequest__Output, _folio_extraction_v1_ResolveModelResponse__Output>
}
