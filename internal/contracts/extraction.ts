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
  /**
   * image/png, image/jpeg, image/webp, image/tiff, image/gif; for local
   * engines also image/x-portable-graymap (a PDF's pages as binary PGM).
   */
  mimeType: string;
}

export type OutputFormat = "text" | "json" | "markdown";

/** What `options.include_layout` asks for: the blocks, or the blocks with their words. */
export type LayoutDetail = "blocks" | "words";

export interface ExtractOptions {
  extractTables: boolean;
  /** ISO 639-1 code ("en", "de"), a hint; absent: the engine finds the page's language. */
  language?: string;
  outputFormat: OutputFormat;
  /** Absent: no layout in the answer. */
  includeLayout?: LayoutDetail;
}

export type LayoutBlockType = "text" | "table" | "figure" | "header" | "footer";

/** A word of a layout block: its box and the engine's confidence (0–1). */
export interface LayoutWord {
  text: string;
  /** [x0, y0, x1, y1] in pixels of the page image. */
  bbox: [number, number, number, number];
  confidence: number;
}

export interface LayoutBlock {
  type: LayoutBlockType;
  bbox: [number, number, number, number];
  text: string;
  /** Only when the words were asked for. */
  words?: LayoutWord[];
}

/** A page's layout (docs/structure.md "Layout"): blocks in reading order, boxes in pixels of the page image. */
export interface PageLayout {
  width: number;
  height: number;
  blocks: LayoutBlock[];
  /** As {@link PageResult.rotation} (local engines). */
  rotation?: 0 | 90 | 180 | 270;
  /** As {@link PageResult.skewDegrees} (local engines). */
  skew_degrees?: number;
}

export type PageBlockType = "heading" | "paragraph" | "list_item" | "table" | "figure" | "header" | "footer";

/**
 * One block of a page's structure, in reading order (docs/ocr.md "Output
 * formats"): what `output_format: "json"` adds to a page read by a local
 * engine, and what its markdown is written from.
 */
export interface PageBlock {
  type: PageBlockType;
  /** The block's text: a heading's, a paragraph's or a list item's on one line (without its marker); a table's rows on lines, cells separated by a tab; empty for a figure. */
  text: string;
  /** [x0, y0, x1, y1] in pixels of the page image, as the layout's. */
  bbox: [number, number, number, number];
  /** Headings: 1 (largest) to 3. */
  level?: number;
  /** List items: numbered or lettered (true) or bulleted. */
  ordered?: boolean;
  /** List items: nesting depth, 0 at the outermost level. */
  depth?: number;
  /** List items: the marker as printed ("1.", "a)", "•"). */
  marker?: string;
  /** Tables: rows of cell strings, the first row as printed first (a merged cell's text in the first position it covers). */
  cells?: string[][];
  /** Tables: each cell with its place and its spans (a merged cell once). */
  table_cells?: TableCell[];
}

/** A table's cell where it starts (row and column from 0) and how many rows and columns it covers. */
export interface TableCell {
  row: number;
  col: number;
  row_span: number;
  col_span: number;
  text: string;
  /** Local models: the box of the cell's words, [x0, y0, x1, y1] in pixels of the page image as sent; absent for an empty cell. */
  bbox?: [number, number, number, number];
  /** A table continued over pages (set by the edge when it joins them): the page this cell is on. */
  page_number?: number;
}

/**
 * A table found on a page (docs/ocr.md): rows of cell strings, first row the
 * header when the source had one (a merged cell's text in the first position
 * it covers), the same table as GitHub markdown, its cells with their spans
 * and as HTML (`rowspan`, `colspan`: what GFM cannot say). A table continued
 * on the following pages is one table: `page_number` its first page,
 * `page_numbers` every page it is on.
 */
export interface Table {
  page_number: number;
  /** Set by the edge, which joins a table continued over pages (docs/structure.md "Tables"). */
  page_numbers?: number[];
  rows: string[][];
  markdown: string;
  cells: TableCell[];
  html: string;
  /** Between the services only (the edge drops them): nothing of the page's flow stands before (after) the table, so it may continue one of the page before (go on on the next). */
  opens_page?: boolean;
  closes_page?: boolean;
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
  /** Only when `includeLayout` asked for it. */
  layout?: PageLayout;
  /** Local engines with `outputFormat` json: the page's structure in reading order (docs/structure.md "Output formats"). */
  blocks?: PageBlock[];
  /**
   * Local engines (docs/ocr.md "Turned and skewed pages"): the page as sent
   * was found turned clockwise by this many degrees from upright, and turned
   * back before it was read.
   */
  rotation?: 0 | 90 | 180 | 270;
  /** Local engines: the page as sent was found skewed clockwise by this many degrees beyond `rotation` (0: not deskewed), and deskewed before it was read. */
  skewDegrees?: number;
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
  /**
   * Languages a local engine reads (ISO 639-1 where there is a code, else
   * the engine's own name, e.g. tesseract's "frk"); absent for upstream
   * models, whose providers do not say.
   */
  languages?: string[];
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

/**
 * One event of a streamed chat (`ChatStream`): pieces of the answer as they
 * arrive, then exactly one `end`.
 */
export type ChatStreamEvent = ChatStreamDelta | ChatStreamEnd;

export interface ChatStreamDelta {
  kind: "delta";
  content: string;
  /** The upstream's generation id, on an upstream stream's first delta (what `generationCost` asks about). */
  generationId?: string;
  /** Local engines: the page this text was read from, and its cost, billed once read. */
  page?: { pageNumber: number; providerCostCents: Decimal };
}

/** The end of a streamed chat: the call as a whole (the text went out in the deltas). */
export interface ChatStreamEnd extends Omit<ChatOutput, "content"> {
  kind: "end";
  /** Pages the call read (local engines) or sent (images, upstream). */
  pages: number;
  /**
   * Set when the stream failed after it began (an error inside the upstream's
   * stream, a broken connection): the usage and cost are then what the
   * provider billed until the failure.
   */
  error?: { code: string; message: string; extra: Record<string, unknown> };
}

/** What the upstream billed for a generation (its own record), or `found: false`. */
export type GenerationCost = { found: false } | { found: true; promptTokens: number; completionTokens: number; providerCostCents: Decimal };

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
