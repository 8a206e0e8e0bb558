/**
 * GET /v1/usage/summary: totals, per model and per period, in one statement
 * over the rollups and the raw rows at the range's edges (sources.ts), so
 * its cost grows with the number of days asked for, not with the rows in
 * them.
 */
import { sql } from "kysely";
import type { DB } from "../platform/db/index.ts";
import { centsToNumber, centsToUsd, formatUsd } from "../billing/index.ts";
import type { GroupBy, SummaryGroup, UsageSummary } from "./entries.ts";
import { usageSources } from "./sources.ts";

interface Sums {
  requests: string;
  ok: string;
  failed: string;
  tokens: string;
  pages: string;
  provider: string;
  fee: string;
  cost: string;
}

/** One grouping set's row: `level` 0 = the totals, 1 = a model, 2 = a period. */
interface SumRow extends Sums {
  level: number;
  model: string | null;
  bucket: Date | null;
}

/** Usage of [start, end] (Unix seconds, `end` a whole second included), grouped as asked. */
export async function summarize(db: DB, accountId: string, start: number, end: number, groupBy?: GroupBy): Promise<UsageSummary> {
  const source = usageSources(accountId, start * 1000, (end + 1) * 1000);
  const unit = groupBy && groupBy !== "model" ? groupBy : undefined;
  // Weeks start on Monday (ISO), months on the 1st; UTC whatever the session's time zone.
  const bucket = unit ? sql`date_trunc(${sql.lit(unit)}, t, 'UTC')` : sql`null::timestamptz`;
  const { rows } = await sql<SumRow>`
    select case when grouping(model) = 0 then 1 when grouping(bucket) = 0 then 2 else 0 end as level, model, bucket,
      coalesce(sum(requests), 0) as requests,
      coalesce(sum(requests) filter (where status = 'success'), 0) as ok,
      coalesce(sum(requests) filter (where status = 'error'), 0) as failed,
      coalesce(sum(tokens), 0) as tokens, coalesce(sum(pages), 0) as pages,
      coalesce(sum(provider), 0) as provider, coalesce(sum(fee), 0) as fee, coalesce(sum(cost), 0) as cost
    from (select ${bucket} as bucket, s.* from (${source}) s) s
    group by grouping sets ((), (model), (bucket))
    order by level, model, bucket`.execute(db);

  const totals = rows.find((r) => r.level === 0)!;
  const models = rows.filter((r) => r.level === 1);
  const summary: UsageSummary = {
    total_requests: Number(totals.requests),
    successful_requests: Number(totals.ok),
    failed_requests: Number(totals.failed),
    total_tokens_used: Number(totals.tokens),
    total_pages_processed: Number(totals.pages),
    cost: {
      provider_cost_cents: centsToNumber(totals.provider),
      platform_fee_cents: centsToNumber(totals.fee),
      total_cents: centsToNumber(totals.cost),
      total_usd: centsToUsd(totals.cost),
      formatted: formatUsd(totals.cost),
    },
    by_model: Object.fromEntries(models.map((m) => [m.model!, { requests: Number(m.requests), tokens: Number(m.tokens), cost_cents: centsToNumber(m.cost) }])),
    period: { start, end },
  };
  if (!groupBy) return summary;
  if (groupBy === "model") {
    summary.groups = models.map((m) => ({ key: m.model!, ...group(m) }));
  } else {
    summary.groups = rows
      .filter((r) => r.level === 2)
      .map((r) => {
        const startMs = r.bucket!.getTime();
        return { start: startMs / 1000, end: addPeriod(startMs, groupBy) / 1000, ...group(r) };
      });
  }
  summary.group_by = groupBy;
  return summary;
}

function group(r: Sums): Omit<SummaryGroup, "key" | "start" | "end"> {
  return {
    requests: Number(r.requests),
    successful_requests: Number(r.ok),
    failed_requests: Number(r.failed),
    tokens: Number(r.tokens),
    pages: Number(r.pages),
    cost_cents: centsToNumber(r.cost),
  };
}

function addPeriod(startMs: number, unit: "day" | "week" | "month"): number {
  const d = new Date(startMs);
  if (unit === "day") return startMs + 86_400_000;
  if (unit === "week") return startMs + 7 * 86_400_000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
