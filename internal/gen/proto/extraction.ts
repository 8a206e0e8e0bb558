import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { Attachment as _folio_extraction_v1_Attachment, Attachment__Output as _folio_extraction_v1_Attachment__Output } from './folio/extraction/v1/Attachment.ts';
import type { ChatDelta as _folio_extraction_v1_ChatDelta, ChatDelta__Output as _folio_extraction_v1_ChatDelta__Output } from './folio/extraction/v1/ChatDelta.ts';
import type { ChatMessage as _folio_extraction_v1_ChatMessage, ChatMessage__Output as _folio_extraction_v1_ChatMessage__Output } from './folio/extraction/v1/ChatMessage.ts';
import type { ChatRequest as _folio_extraction_v1_ChatRequest, ChatRequest__Output as _folio_extraction_v1_ChatRequest__Output } from './folio/extraction/v1/ChatRequest.ts';
import type { ChatResponse as _folio_extraction_v1_ChatResponse, ChatResponse__Output as _folio_extraction_v1_ChatResponse__Output } from './folio/extraction/v1/ChatResponse.ts';
import type { ChatStreamEnd as _folio_extraction_v1_ChatStreamEnd, ChatStreamEnd__Output as _folio_extraction_v1_ChatStreamEnd__Output } from './folio/extraction/v1/ChatStreamEnd.ts';
import type { ChatStreamError as _folio_extraction_v1_ChatStreamError, ChatStreamError__Output as _folio_extraction_v1_ChatStreamError__Output } from './folio/extraction/v1/ChatStreamError.ts';
import type { ChatStreamEvent as _folio_extraction_v1_ChatStreamEvent, ChatStreamEvent__Output as _folio_extraction_v1_ChatStreamEvent__Output } from './folio/extraction/v1/ChatStreamEvent.ts';
import type { ContentPart as _folio_extraction_v1_ContentPart, ContentPart__Output as _folio_extraction_v1_ContentPart__Output } from './folio/extraction/v1/ContentPart.ts';
import type { ExtractOptions as _folio_extraction_v1_ExtractOptions, ExtractOptions__Output as _folio_extraction_v1_ExtractOptions__Output } from './folio/extraction/v1/ExtractOptions.ts';
import type { ExtractPageRequest as _folio_extraction_v1_ExtractPageRequest, ExtractPageRequest__Output as _folio_extraction_v1_ExtractPageRequest__Output } from './folio/extraction/v1/ExtractPageRequest.ts';
import type { ExtractPageResponse as _folio_extraction_v1_ExtractPageResponse, ExtractPageResponse__Output as _folio_extraction_v1_ExtractPageResponse__Output } from './folio/extraction/v1/ExtractPageResponse.ts';
import type { ExtractionServiceClient as _folio_extraction_v1_ExtractionServiceClient, ExtractionServiceDefinition as _folio_extraction_v1_ExtractionServiceDefinition } from './folio/extraction/v1/ExtractionService.ts';
import type { GenerationCostRequest as _folio_extraction_v1_GenerationCostRequest, GenerationCostRequest__Output as _folio_extraction_v1_GenerationCostRequest__Output } from './folio/extraction/v1/GenerationCostRequest.ts';
import type { GenerationCostResponse as _folio_extraction_v1_GenerationCostResponse, GenerationCostResponse__Output as _folio_extraction_v1_GenerationCostResponse__Output } from './folio/extraction/v1/GenerationCostResponse.ts';
import type { LayoutBlock as _folio_extraction_v1_LayoutBlock, LayoutBlock__Output as _folio_extraction_v1_LayoutBlock__Output } from './folio/extraction/v1/LayoutBlock.ts';
import type { LayoutWord as _folio_extraction_v1_LayoutWord, LayoutWord__Output as _folio_extraction_v1_LayoutWord__Output } from './folio/extraction/v1/LayoutWord.ts';
import type { ListModelsRequest as _folio_extraction_v1_ListModelsRequest, ListModelsRequest__Output as _folio_extraction_v1_ListModelsRequest__Output } from './folio/extraction/v1/ListModelsRequest.ts';
import type { ListModelsResponse as _folio_extraction_v1_ListModelsResponse, ListModelsResponse__Output as _folio_extraction_v1_ListModelsResponse__Output } from './folio/extraction/v1/ListModelsResponse.ts';
import type { Model as _folio_extraction_v1_Model, Model__Output as _folio_extraction_v1_Model__Output } from './folio/extraction/v1/Model.ts';
import type { PageBlock as _folio_extraction_v1_PageBlock, PageBlock__Output as _folio_extraction_v1_PageBlock__Output } from './folio/extraction/v1/PageBlock.ts';
import type { PageLayout as _folio_extraction_v1_PageLayout, PageLayout__Output as _folio_extraction_v1_PageLayout__Output } from './folio/extraction/v1/PageLayout.ts';
import type { Plugin as _folio_extraction_v1_Plugin, Plugin__Output as _folio_extraction_v1_Plugin__Output } from './folio/extraction/v1/Plugin.ts';
import type { Pricing as _folio_extraction_v1_Pricing, Pricing__Output as _folio_extraction_v1_Pricing__Output } from './folio/extraction/v1/Pricing.ts';
import type { ResolveModelRequest as _folio_extraction_v1_ResolveModelRequest, ResolveModelRequest__Output as _folio_extraction_v1_ResolveModelRequest__Output } from './folio/extraction/v1/ResolveModelRequest.ts';
import type { ResolveModelResponse as _folio_extraction_v1_ResolveModelResponse, ResolveModelResponse__Output as _folio_extraction_v1_ResolveModelResponse__Output } from './folio/extraction/v1/ResolveModelResponse.ts';
import type { Row as _folio_extraction_v1_Row, Row__Output as _folio_extraction_v1_Row__Output } from './folio/extraction/v1/Row.ts';
import type { StrategyResolution as _folio_extraction_v1_StrategyResolution, StrategyResolution__Output as _folio_extraction_v1_StrategyResolution__Output } from './folio/extraction/v1/StrategyResolution.ts';
import type { Table as _folio_extraction_v1_Table, Table__Output as _folio_extraction_v1_Table__Output } from './folio/extraction/v1/Table.ts';
import type { TableCell as _folio_extraction_v1_TableCell, TableCell__Output as _folio_extraction_v1_TableCell__Output } from './folio/extraction/v1/TableCell.ts';
import type { Usage as _folio_extraction_v1_Usage, Usage__Output as _folio_extraction_v1_Usage__Output } from './folio/extraction/v1/Usage.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  folio: {
    extraction: {
      v1: {
        Attachment: MessageTypeDefinition<_folio_extraction_v1_Attachment, _folio_extraction_v1_Attachment__Output>
        ChatDelta: MessageTypeDefinition<_folio_extraction_v1_ChatDelta, _folio_extraction_v1_ChatDelta__Output>
        ChatMessage: MessageTypeDefinition<_folio_extraction_v1_ChatMessage, _folio_extraction_v1_ChatMessage__Output>
        ChatRequest: MessageTypeDefinition<_folio_extraction_v1_ChatRequest, _folio_extraction_v1_ChatRequest__Output>
        ChatResponse: MessageTypeDefinition<_folio_extraction_v1_ChatResponse, _folio_extraction_v1_ChatResponse__Output>
        ChatStreamEnd: MessageTypeDefinition<_folio_extraction_v1_ChatStreamEnd, _folio_extraction_v1_ChatStreamEnd__Output>
        ChatStreamError: MessageTypeDefinition<_folio_extraction_v1_ChatStreamError, _folio_extraction_v1_ChatStreamError__Output>
        ChatStreamEvent: MessageTypeDefinition<_folio_extraction_v1_ChatStreamEvent, _folio_extraction_v1_ChatStreamEvent__Output>
        ContentPart: MessageTypeDefinition<_folio_extraction_v1_ContentPart, _folio_extraction_v1_ContentPart__Output>
        ExtractOptions: MessageTypeDefinition<_folio_extraction_v1_ExtractOptions, _folio_extraction_v1_ExtractOptions__Output>
        ExtractPageRequest: MessageTypeDefinition<_folio_extraction_v1_ExtractPageRequest, _folio_extraction_v1_ExtractPageRequest__Output>
        ExtractPageResponse: MessageTypeDefinition<_folio_extraction_v1_ExtractPageResponse, _folio_extraction_v1_ExtractPageResponse__Output>
        ExtractionService: SubtypeConstructor<typeof grpc.Client, _folio_extraction_v1_ExtractionServiceClient> & { service: _folio_extraction_v1_ExtractionServiceDefinition }
        GenerationCostRequest: MessageTypeDefinition<_folio_extraction_v1_GenerationCostRequest, _folio_extraction_v1_GenerationCostRequest__Output>
        GenerationCostResponse: MessageTypeDefinition<_folio_extraction_v1_GenerationCostResponse, _folio_extraction_v1_GenerationCostResponse__Output>
        LayoutBlock: MessageTypeDefinition<_folio_extraction_v1_LayoutBlock, _folio_extraction_v1_LayoutBlock__Output>
        LayoutWord: MessageTypeDefinition<_folio_extraction_v1_LayoutWord, _folio_extraction_v1_LayoutWord__Output>
        ListModelsRequest: MessageTypeDefinition<_folio_extraction_v1_ListModelsRequest, _folio_extraction_v1_ListModelsRequest__Output>
        ListModelsResponse: MessageTypeDefinition<_folio_extraction_v1_ListModelsResponse, _folio_extraction_v1_ListModelsResponse__Output>
        Model: MessageTypeDefinition<_folio_extraction_v1_Model, _folio_extraction_v1_Model__Output>
        PageBlock: MessageTypeDefinition<_folio_extraction_v1_PageBlock, _folio_extraction_v1_PageBlock__Output>
        PageLayout: MessageTypeDefinition<_folio_extraction_v1_PageLayout, _folio_extraction_v1_PageLayout__Output>
        Plugin: MessageTypeDefinition<_folio_extraction_v1_Plugin, _folio_extraction_v1_Plugin__Output>
        Pricing: MessageTypeDefinition<_folio_extraction_v1_Pricing, _folio_extraction_v1_Pricing__Output>
        ResolveModelRequest: MessageTypeDefinition<_folio_extraction_v1_ResolveModelRequest, _folio_extraction_v1_ResolveModelRequest__Output>
        ResolveModelResponse: MessageTypeDefinition<_folio_extraction_v1_ResolveModelResponse, _folio_extraction_v1_ResolveModelResponse__Output>
        Row: MessageTypeDefinition<_folio_extraction_v1_Row, _folio_extraction_v1_Row__Output>
        StrategyResolution: MessageTypeDefinition<_folio_extraction_v1_StrategyResolution, _folio_extraction_v1_StrategyResolution__Output>
        Table: MessageTypeDefinition<_folio_extraction_v1_Table, _folio_extraction_v1_Table__Output>
        TableCell: MessageTypeDefinition<_folio_extraction_v1_TableCell, _folio_extraction_v1_TableCell__Output>
        Usage: MessageTypeDefinition<_folio_extraction_v1_Usage, _folio_extraction_v1_Usage__Output>
      }
    }
  }
}

