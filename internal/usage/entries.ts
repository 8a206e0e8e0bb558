/** What the usage endpoints answer. */
import type { UsageLogRow } from "../platform/db/index.ts";
import { centsToNumber } from "../billing/index.ts";

export interface UsageEntry {
  id: string;
  created_at: number;
  model: string;
  status: "success" | "error";
  tokens_used: number;
  cost_cents: number;
  processing_time_ms: number;
  api_key_id: string | null;
}

export function toUsageEntry(r: UsageLogRow): UsageEntry {
  return {
    id: r.id,
    created_at: Math.floor(r.created_at.getTime() / 1000),
    model: r.model,
    status: r.status,
    tokens_used: r.tokens_used,
    cost_cents: centsToNumber(r.cost_cents),
    processing_time_ms: r.processing_time_ms,
    api_key_id: r.api_key_id,
  };
}

export type GroupBy = "day" | "week" | "month" | "model";

export interface SummaryGroup {
  /** Model id when grouped by model. */
  key?: string;
  /** Period start and end (Unix seconds, UTC) when grouped by time. */
  start?: number;
  end?: number;
  requests: number;
  successful_requests: number;
  failed_requests: number;
  tokens: number;
  pages: number;
  cost_cents: number;
}

export interface UsageSummary {
  total_requests: number;
  successful_requests: number;
  failed_requests: number;
  total_tokens_used: number;
  total_pages_processed: number;
  cost: { provider_cost_cents: number; platform_fee_cents: number; total_cents: number; total_usd: number; formatted: string };
  by_model: Record<string, { requests: number; tokens: number; cost_cents: number }>;
  period: { start: number; end: number };
  group_by?: GroupBy;
  groups?: SummaryGroup[];
}

