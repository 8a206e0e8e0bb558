/**
 * The extraction service's contract with its callers: what a page and a chat
 * are, what reading them returns and costs, and what the catalog knows about
 * a model. `proto/folio/extraction/v1/extraction.proto` carries these between
 * processes; the service (`internal/extraction`) and its client
 * (`internal/extraction/client.ts`) map them to and from it.
 */
import type { Decimal, UnitPrices } from "../billing/index.ts";

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

/** Provider prices in US dollars per unit, exact decimal strings, WITHOUT the platform fee. */
export type ModelPricing = UnitPrices;

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

/** Where a call's provider cost came from: the provider's own report, or the catalog's prices. */
export type CostSource = "reported" | "computed";

export interface PageExtraction {
  result: PageResult;
  providerCostCents: Decimal;
  costSource: CostSource;
}

export interface ChatAttachment {
  data: Buffer;
  mimeType: string;
  filename?: string;
}

export type ChatPart = { kind: "text"; text: string } | { kind: "image"; image: ChatAttachment } | { kind: "file"; file: ChatAttachment };

export interface ChatMessage {
  role: string;
  content: ChatPart[];
}

export interface ChatInput {
  model: string;
  messages: ChatMessage[];
  plugins: { id: string; pdfEngine?: string }[];
  maxTokens?: number;
}

export interface ChatOutput {
  id: string;
  model: string;
  content: string;
  finishReason: string;
  promptTokens: number;
  completionTokens: number;
  providerCostCents: Decimal;
  costSource: CostSource;
}

/** The catalog as it is now. */
export interface CatalogSnapshot {
  /** Local models first, then upstream models in upstream order. */
  models: CatalogModel[];
  /** When the upstream list in use was fetched; null when it never was. */
  fetchedAtMs: number | null;
  /** Age of that list in whole seconds; null when it never was fetched. */
  ageSeconds: number | null;
  stale: boolean;
  lastError: string | null;
  upstreamConfigured: boolean;
}

/** What a strategy resolves to now, and why (docs/models.md "Strategies and fallback"). */
export interface StrategyResolution {
  strategy: string;
  /** The configured preference list. */
  configured: string[];
  resolved: string;
  /** True when a later preference (or the local engine) stands in for the first. */
  fallback: boolean;
  reason?: string;
}

/** The catalog with every strategy's resolution: what `/v1/models*` show. */
export interface CatalogView extends CatalogSnapshot {
  strategies: StrategyResolution[];
}
