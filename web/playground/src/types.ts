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

import type { TableCell } from "../../../internal/contracts/extraction.ts";

export type { TableCell };
export type Box = [number, number, number, number];

export interface Table {
  page_number: number;
  rows: string[][];
  markdown: string;
  /** Each cell once with its spans (and, from local models, its box). */
  cells?: TableCell[];
}

/** A block of the page's layout (include_layout): its words with their confidence when "words" was asked. */
export interface LayoutBlock {
  type: "text" | "table" | "figure" | "header" | "footer";
  bbox: Box;
  text: string;
  words?: { text: string; bbox: Box; confidence: number }[];
}

/** A block of the page's structure (output_format json, local models). */
export interface PageBlock {
  type: "heading" | "paragraph" | "list_item" | "table" | "figure" | "header" | "footer";
  bbox: Box;
  text: string;
  level?: number;
  cells?: string[][];
}

export interface ResultPage {
  page_number: number;
  text: string;
  confidence?: number;
  tables: Table[];
  layout?: { width: number; height: number; blocks: LayoutBlock[] };
  blocks?: PageBlock[];
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

/** `usage` of a reading answer: the same fields in /v1/ocr, the playground and a job (docs/ocr.md). */
export interface Usage {
  pages_processed: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_used: number;
  provider_cost_cents: number;
  platform_fee_cents: number;
  total_cost_cents: number;
  processing_time_ms: number;
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
  usage: Usage;
  cost: { currency: "USD"; components: CostComponent[]; provider_cost_cents: number; platform_fee_cents: number; total_cost_cents: number; formatted: string };
}

export type ProgressEvent =
  | { event: "started"; id: string; model: string; document: { format: string; kind: string; bytes: number } }
  | { event: "converting"; format: string }
  | { event: "rasterizing" }
  | { event: "extracting"; page_count: number }
  | { event: "page"; page_number: number; completed: number; of: number };

export type StreamEvent = ProgressEvent | { event: "result"; result: PlaygroundResult } | { event: "error"; status: number; error: ApiError };

/** A durable OCR job (docs/jobs.md, "The job"). */
export interface OcrJob {
  id: string;
  object: "ocr.job";
  status: "queued" | "running" | "succeeded" | "failed" | "cancelled";
  model: string;
  /** Null until known: an office document's, until it is converted. */
  page_count: number | null;
  pages_completed: number;
  pages_failed: number;
  /** Charged so far; final once the job has ended. */
  usage: Usage;
  error?: { code: string; message: string };
  metadata: Record<string, string>;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export type JobEventType = "ocr.job.started" | "ocr.job.progress" | "ocr.job.succeeded" | "ocr.job.failed" | "ocr.job.cancelled";

/** The `data:` of one server-sent event of GET /v1/ocr/jobs/{id}/events: the job as that event left it. */
export interface JobEvent {
  id: string;
  type: JobEventType;
  sequence: number;
  created_at: number;
  data: OcrJob;
}

/** A stored page of a job (GET /v1/ocr/jobs/{id}/pages): no image; a page that could not be read has its error and no text. */
export interface JobPage {
  page_number: number;
  text: string;
  confidence?: number;
  error?: { code: string; message: string };
}

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
