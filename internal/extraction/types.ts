/**
 * The extraction domain's types: the shapes it shares with its callers come
 * from the contracts module; engines are its own.
 */
import type { ExtractOptions, PageInput, PageResult } from "../contracts/index.ts";

export type {
  CatalogModel,
  CatalogSnapshot,
  CatalogView,
  ChatAttachment,
  ChatInput,
  ChatMessage,
  ChatOutput,
  ChatPart,
  ChatStreamDelta,
  ChatStreamEnd,
  ChatStreamEvent,
  GenerationCost,
  CostSource,
  EngineUsage,
  ExtractOptions,
  InputKind,
  ModelPricing,
  ModelSource,
  LayoutBlock,
  LayoutBlockType,
  LayoutDetail,
  LayoutWord,
  OutputFormat,
  PageLayout,
  PageExtraction,
  PageInput,
  PageResult,
  Table,
  TableCell,
} from "../contracts/index.ts";

/** A model that turns page images into text. */
export interface Engine {
  readonly id: string;
  extractPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageResult>;
}
