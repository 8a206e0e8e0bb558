/**
 * The extraction domain's shared types: what an engine receives and returns,
 * and what the catalog knows about a model. The gRPC layer maps these to and
 * from `proto/folio/extraction/v1/extraction.proto`.
 */
import type { Decimal } from "../billing/index.ts";

/** One page image handed to an engine. */
export interface PageInput {
  /** From 1. */
  pageNumber: number;
  image: Buffer;
  /** image/png, image/jpeg, image/webp, image/tiff, image/gif */
  mimeType: string;
}

export type OutputFormat = "text" | "json" | "markdown";

export interface ExtractOptions {
  extractTables: boolean;
  /** ISO 639-1 code ("en", "de"), a hint. */
  language?: string;
  outputFormat: OutputFormat;
}

/**
 * A table found on a page (docs/ocr.md): rows of cell strings, first row the
 * header when the source had one, and the same table as GitHub markdown.
 */
export interface Table {
  page_number: number;
  rows: string[][];
  markdown: string;
}

export interface EngineUsage {
  promptTokens: number;
  completionTokens: number;
  /**
   * Exact provider cost in cents when the provider reported it (OpenRouter's
   * `usage.cost`), else null and the caller prices tokens from the catalog.
   */
  reportedCostCents: Decimal | null;
}

export interface PageResult {
  text: string;
  tables: Table[];
  /** 0..1, only when the engine produced a valid score. */
  confidence?: number;
  usage: EngineUsage;
}

/** A model that turns page images into text. */
export interface Engine {
  readonly id: string;
  extractPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageResult>;
}

/** Provider prices in US dollars per unit, exact decimal strings, WITHOUT the platform fee. */
export interface ModelPricing {
  /** Per prompt token. */
  prompt: string;
  /** Per completion token. */
  completion: string;
  /** Per input image, when the provider charges one. */
  image?: string;
  /** Per request, when the provider charges one. */
  request?: string;
  /** Per page (local engines). */
  page?: string;
}

export type ModelSource = "upstream" | "local";
export type InputKind = "image" | "pdf" | "text";

export interface CatalogModel {
  id: string;
  name: string;
  description: string;
  /** Unix seconds. */
  created: number;
  ownedBy: string;
  source: ModelSource;
  contextLength: number;
  maxCompletionTokens: number | null;
  inputKinds: InputKind[];
  /** docs/models.md: premium | standard | economy | free | local */
  category: string;
  pricing: ModelPricing;
}
