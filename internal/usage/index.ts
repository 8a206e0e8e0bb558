/**
 * Usage logs and summaries, always scoped to one account.
 */
import { sql } from "kysely";
import type { DB, UsageLogRow } from "../platform/db/index.ts";
import { Decimal, centsToNumber, centsToUsd, formatUsd } from "../billing/index.ts";

export interface UsageFilter {
  start: number;
  end: number;
  limit: number;
  offset: number;
  status?: "success" | "error";
  model?: string;
  apiKeyId?: string;
}

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

export async function listUsage(db: DB, accountId: string, f: UsageFilter): Promise<{ data: UsageEntry[]; total_count: number; has_more: boolean }> {
  let q = db
    .selectFrom("usage_logs")
    .where("account_id", "=", accountId)
    .where("created_at", ">=", new Date(f.start * 1000))
    // end is a whole second, inclusive: everything before the next second.
    .where("created_at", "<", new Date((f.end + 1) * 1000));
  if (f.status) q = q.where("status", "=", f.status);
  if (f.model) q = q.where("model", "=", f.model);
  if (f.apiKeyId) q = q.where("api_key_id", "=", f.apiKeyId);
  const [{ n }] = (await q.select((eb) => eb.fn.countAll<string>().as("n")).execute()) as [{ n: string }];
  const rows = await q.selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(f.limit).offset(f.offset).execute();
  const total = Number(n);
  return { data: rows.map(toUsageEntry), total_count: total, has_more: f.offset + rows.length < total };
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

const aggregates = sql<string>`count(*)`.as("requests");

export async function summarize(db: DB, accountId: string, start: number, end: number, groupBy?: GroupBy): Promise<UsageSummary> {
  const base = db
    .selectFrom("usage_logs")
    .where("account_id", "=", accountId)
    .where("created_at", ">=", new Date(start * 1000))
    .where("created_at", "<", new Date((end + 1) * 1000));
  const cols = [
    aggregates,
    sql<string>`count(*) filter (where status = 'success')`.as("ok"),
    sql<string>`count(*) filter (where status = 'error')`.as("failed"),
    sql<string>`coalesce(sum(tokens_used), 0)`.as("tokens"),
    sql<string>`coalesce(sum(pages_processed), 0)`.as("pages"),
    sql<string>`coalesce(sum(provider_cost_cents), 0)`.as("provider"),
    sql<string>`coalesce(sum(platform_fee_cents), 0)`.as("fee"),
    sql<string>`coalesce(sum(cost_cents), 0)`.as("cost"),
  ] as const;
  const totals = await base.select(cols).executeTakeFirstOrThrow();
  const models = await base.select(["model", ...cols]).groupBy("model").orderBy("model").execute();

  const total = new Decimal(totals.cost);
  const summary: UsageSummary = {
    total_requests: Number(totals.requests),
    successful_requests: Number(totals.ok),
    failed_requests: Number(totals.failed),
    total_tokens_used: Number(totals.tokens),
    total_pages_processed: Number(totals.pages),
    cost: {
      provider_cost_cents: centsToNumber(totals.provider),
      platform_fee_cents: centsToNumber(totals.fee),
      total_cents: centsToNumber(total),
      total_usd: centsToUsd(total),
      formatted: formatUsd(total),
    },
    by_model: Object.fromEntries(models.map((m) => [m.model, { requests: Number(m.requests), tokens: Number(m.tokens), cost_cents: centsToNumber(m.cost) }])),
    period: { start, end },
  };
  if (!groupBy) return summary;

  const group = (r: { requests: string; ok: string; failed: string; tokens: string; pages: string; cost: string }) => ({
    requests: Number(r.requests),
    successful_requests: Number(r.ok),
    failed_requests: Number(r.failed),
    tokens: Number(r.tokens),
    pages: Number(r.pages),
    cost_cents: centsToNumber(r.cost),
  });
  if (groupBy === "model") {
    summary.groups = models.map((m) => ({ key: m.model, ...group(m) }));
  } else {
    const unit = sql.lit(groupBy);
    // Epoch seconds of the UTC period start.
    const bucket = sql<number>`extract(epoch from date_trunc(${unit}, created_at at time zone 'UTC'))::bigint`;
    const rows = await base
      .select([bucket.as("bucket"), ...cols])
      .groupBy(bucket)
      .orderBy(bucket)
      .execute();
    summary.groups = rows.map((r) => {
      const startMs = Number(r.bucket) * 1000;
      return { start: startMs / 1000, end: addPeriod(startMs, groupBy) / 1000, ...group(r) };
    });
  }
  summary.group_by = groupBy;
  return summary;
}

function addPeriod(startMs: number, unit: "day" | "week" | "month"): number {
  const d = new Date(startMs);
  if (unit === "day") return startMs + 86_400_000;
  if (unit === "week") return startMs + 7 * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
