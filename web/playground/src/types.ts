/**
 * The shapes the page reads from the API (docs/playground.md). Written out
 * here rather than imported from the edge so the page's build stays free of
 * server code.
 */

export interface ApiError {
  code: string;
  message: string;
  param?: string;
  required_cents?: number;
  retry_after_seconds?: number;
  supported_formats?: string[];
  missing_permissions?: string[];
  [extra: string]: unknown;
}

export interface Table {
  page_number: number;
  rows: string[][];
  markdown: string;
}

export interface ResultPage {
  page_number: number;
  text: string;
  confidence?: number;
  tables: Table[];
  image: { url: string; mime_type: string; bytes: number } | null;
  image_omitted?: "not_requested" | "response_image_limit";
}

export interface CostComponent {
  component: "model" | "conversion";
  provider_cost_cents: number;
  platform_fee_cents: number;
  total_cost_cents: number;
  pages?: number;
  compute_time_ms?: number;
}

export interface PlaygroundResult {
  id: string;
  object: "playground.result";
  created: number;
  model: string;
  strategy?: string;
  document: { filename?: string; mime_type: string; format: string; kind: string; bytes: number; converted: boolean };
  result: { text: string; pages: ResultPage[]; tables: Table[]; confidence?: number };
  timings: { load_ms: number; conversion_ms: number; extraction_ms: number; total_ms: number };
  usage: { pages_processed: number; prompt_tokens: number; completion_tokens: number; tokens_used: number; provider_cost_cents: number; platform_fee_cents: number; total_cost_cents: number; processing_time_ms: number };
  cost: { currency: "USD"; components: CostComponent[]; provider_cost_cents: number; platform_fee_cents: number; total_cost_cents: number; formatted: string };
}

export type ProgressEvent =
  | { event: "started"; id: string; model: string; document: { format: string; kind: string; bytes: number } }
  | { event: "converting"; format: string }
  | { event: "rasterizing" }
  | { event: "extracting"; page_count: number }
  | { event: "page"; page_number: number; completed: number; of: number };

export type StreamEvent = ProgressEvent | { event: "result"; result: PlaygroundResult } | { event: "error"; status: number; error: ApiError };

export interface PriceSet {
  prompt: string;
  completion: string;
  image?: string;
  request?: string;
  page?: string;
}

export interface ModelEntry {
  id: string;
  folio: { name: string; category: string; source: string; recommended: boolean; strategies: string[]; pricing: { listed: PriceSet } };
}

export interface StrategyEntry {
  strategy: string;
  alias: string;
  model: string;
}
