import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { ConversionServiceClient as _folio_conversion_v1_ConversionServiceClient, ConversionServiceDefinition as _folio_conversion_v1_ConversionServiceDefinition } from './folio/conversion/v1/ConversionService.ts';
import type { ConvertReply as _folio_conversion_v1_ConvertReply, ConvertReply__Output as _folio_conversion_v1_ConvertReply__Output } from './folio/conversion/v1/ConvertReply.ts';
import type { ConvertRequest as _folio_conversion_v1_ConvertRequest, ConvertRequest__Output as _folio_conversion_v1_ConvertRequest__Output } from './folio/conversion/v1/ConvertRequest.ts';
import type { ConvertSummary as _folio_conversion_v1_ConvertSummary, ConvertSummary__Output as _folio_conversion_v1_ConvertSummary__Output } from './folio/conversion/v1/ConvertSummary.ts';
import type { EstimateRequest as _folio_conversion_v1_EstimateRequest, EstimateRequest__Output as _folio_conversion_v1_EstimateRequest__Output } from './folio/conversion/v1/EstimateRequest.ts';
import type { EstimateResponse as _folio_conversion_v1_EstimateResponse, EstimateResponse__Output as _folio_conversion_v1_EstimateResponse__Output } from './folio/conversion/v1/EstimateResponse.ts';
import type { FetchJobRequest as _folio_conversion_v1_FetchJobRequest, FetchJobRequest__Output as _folio_conversion_v1_FetchJobRequest__Output } from './folio/conversion/v1/FetchJobRequest.ts';
import type { FormatExample as _folio_conversion_v1_FormatExample, FormatExample__Output as _folio_conversion_v1_FormatExample__Output } from './folio/conversion/v1/FormatExample.ts';
import type { JobChunk as _folio_conversion_v1_JobChunk, JobChunk__Output as _folio_conversion_v1_JobChunk__Output } from './folio/conversion/v1/JobChunk.ts';
import type { JobHeader as _folio_conversion_v1_JobHeader, JobHeader__Output as _folio_conversion_v1_JobHeader__Output } from './folio/conversion/v1/JobHeader.ts';
import type { JobOutcome as _folio_conversion_v1_JobOutcome, JobOutcome__Output as _folio_conversion_v1_JobOutcome__Output } from './folio/conversion/v1/JobOutcome.ts';
import type { Page as _folio_conversion_v1_Page, Page__Output as _folio_conversion_v1_Page__Output } from './folio/conversion/v1/Page.ts';
import type { PricingRequest as _folio_conversion_v1_PricingRequest, PricingRequest__Output as _folio_conversion_v1_PricingRequest__Output } from './folio/conversion/v1/PricingRequest.ts';
import type { PricingResponse as _folio_conversion_v1_PricingResponse, PricingResponse__Output as _folio_conversion_v1_PricingResponse__Output } from './folio/conversion/v1/PricingResponse.ts';
import type { ResultChunk as _folio_conversion_v1_ResultChunk, ResultChunk__Output as _folio_conversion_v1_ResultChunk__Output } from './folio/conversion/v1/ResultChunk.ts';
import type { ResultStart as _folio_conversion_v1_ResultStart, ResultStart__Output as _folio_conversion_v1_ResultStart__Output } from './folio/conversion/v1/ResultStart.ts';
import type { SandboxBrokerClient as _folio_conversion_v1_SandboxBrokerClient, SandboxBrokerDefinition as _folio_conversion_v1_SandboxBrokerDefinition } from './folio/conversion/v1/SandboxBroker.ts';
import type { SubmitResultResponse as _folio_conversion_v1_SubmitResultResponse, SubmitResultResponse__Output as _folio_conversion_v1_SubmitResultResponse__Output } from './folio/conversion/v1/SubmitResultResponse.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  folio: {
    conversion: {
      v1: {
        /**
         * Called by the edge.
         */
        ConversionService: SubtypeConstructor<typeof grpc.Client, _folio_conversion_v1_ConversionServiceClient> & { service: _folio_conversion_v1_ConversionServiceDefinition }
        ConvertReply: MessageTypeDefinition<_folio_conversion_v1_ConvertReply, _folio_conversion_v1_ConvertReply__Output>
        ConvertRequest: MessageTypeDefinition<_folio_conversion_v1_ConvertRequest, _folio_conversion_v1_ConvertRequest__Output>
        ConvertSummary: MessageTypeDefinition<_folio_conversion_v1_ConvertSummary, _folio_conversion_v1_ConvertSummary__Output>
        EstimateRequest: MessageTypeDefinition<_folio_conversion_v1_EstimateRequest, _folio_conversion_v1_EstimateRequest__Output>
        EstimateResponse: MessageTypeDefinition<_folio_conversion_v1_EstimateResponse, _folio_conversion_v1_EstimateResponse__Output>
        FetchJobRequest: MessageTypeDefinition<_folio_conversion_v1_FetchJobRequest, _folio_conversion_v1_FetchJobRequest__Output>
        FormatExample: MessageTypeDefinition<_folio_conversion_v1_FormatExample, _folio_conversion_v1_FormatExample__Output>
        JobChunk: MessageTypeDefinition<_folio_conversion_v1_JobChunk, _folio_conversion_v1_JobChunk__Output>
        JobHeader: MessageTypeDefinition<_folio_conversion_v1_JobHeader, _folio_conversion_v1_JobHeader__Output>
        JobOutcome: MessageTypeDefinition<_folio_conversion_v1_JobOutcome, _folio_conversion_v1_JobOutcome__Output>
        Page: MessageTypeDefinition<_folio_conversion_v1_Page, _folio_conversion_v1_Page__Output>
        PricingRequest: MessageTypeDefinition<_folio_conversion_v1_PricingRequest, _folio_conversion_v1_PricingRequest__Output>
        PricingResponse: MessageTypeDefinition<_folio_conversion_v1_PricingResponse, _folio_conversion_v1_PricingResponse__Output>
        ResultChunk: MessageTypeDefinition<_folio_conversion_v1_ResultChunk, _folio_conversion_v1_ResultChunk__Output>
        ResultStart: MessageTypeDefinition<_folio_conversion_v1_ResultStart, _folio_conversion_v1_ResultStart__Output>
        /**
         * Called by sandbox pods of the `kubernetes` backend, on a port of its own
         * that only sandbox pods may reach (NetworkPolicy). Each ConversionSandbox
         * carries a one-time token: it allows exactly one FetchJob and one
         * SubmitResult, and expires with the sandbox's deadline.
         */
        SandboxBroker: SubtypeConstructor<typeof grpc.Client, _folio_conversion_v1_SandboxBrokerClient> & { service: _folio_conversion_v1_SandboxBrokerDefinition }
        SubmitResultResponse: MessageTypeDefinition<_folio_conversion_v1_SubmitResultResponse, _folio_conversion_v1_SubmitResultResponse__Output>
      }
    }
  }
}

