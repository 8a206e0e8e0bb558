/**
 * Where the rows of a time range are read from (docs/usage.md "How
 * summaries stay fast"): whole UTC days and hours from `usage_rollups`, only
 * the partial hours at the range's edges from `usage_logs`. The rollups
 * change in the transaction of every usage row, so one statement over both
 * sees the same rows as a statement over `usage_logs` alone would.
 */
import { sql, type RawBuilder } from "kysely";
import type { DB } from "../platform/db/index.ts";

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Half-open ranges [from, to) of epoch milliseconds, by where they are read. */
export interface Cover {
  raw: [number, number][];
  hours: [number, number][];
  days: [number, number][];
}

const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;

/** Splits [fromMs, toMs) into raw edges (under two hours in all), whole hours (under two days) and whole days. */
export function cover(fromMs: number, toMs: number, useDays = true): Cover {
  const c: Cover = { raw: [], hours: [], days: [] };
  const hours = carve(fromMs, toMs, HOUR, c.raw);
  if (hours && !useDays) c.hours.push(hours);
  const days = hours && useDays && carve(hours[0], hours[1], DAY, c.hours);
  if (days) c.days.push(days);
  return c;
}

/**
 * The whole `unit`s within [a, b), or null when there is none; what lies
 * outside them (or all of [a, b) then) goes to `rest`.
 */
function carve(a: number, b: number, unit: number, rest: [number, number][]): [number, number] | null {
  const lo = ceilTo(a, unit);
  const hi = floorTo(b, unit);
  const add = (x: number, y: number) => {
    if (x < y) rest.push([x, y]);
  };
  if (lo >= hi) {
    add(a, b);
    return null;
  }
  add(a, lo);
  add(hi, b);
  return [lo, hi];
}

/** The filters of the usage list (and its export and count). */
export interface RowFilter {
  status?: "success" | "error" | undefined;
  model?: string | undefined;
  apiKeyId?: string | undefined;
}

function filters(f: RowFilter): RawBuilder<unknown> {
  const parts = [
    f.status ? sql`and status = ${f.status}` : sql``,
    f.model ? sql`and model = ${f.model}` : sql``,
    f.apiKeyId ? sql`and api_key_id = ${f.apiKeyId}` : sql``,
  ];
  return sql.join(parts, sql` `);
}

// A Date, not ISO text: pg writes years past 9999 as Postgres reads them ("10000-01-01…"), toISOString as "+010000-…", which it refuses.
const at = (ms: number) => new Date(ms);

/**
 * One SELECT (a UNION ALL) of the account's usage in [fromMs, toMs) as rows
 * of `grain` ('raw', 'hour' or 'day'), `t` (the row's time, or its hour's or
 * day's start), model, status,
 * requests, tokens, pages, provider, fee, cost: raw rows count 1 each,
 * rollup rows their sums.
 */
export function usageSources(accountId: string, fromMs: number, toMs: number, f: RowFilter = {}, useDays = true): RawBuilder<unknown> {
  const c = cover(fromMs, toMs, useDays);
  const where = filters(f);
  const raw = c.raw.map(
    ([a, b]) => sql`select 'raw' as grain, created_at as t, model, status, 1::bigint as requests, tokens_used::bigint as tokens, pages_processed::bigint as pages,
      provider_cost_cents as provider, platform_fee_cents as fee, cost_cents as cost
      from usage_logs where account_id = ${accountId} and created_at >= ${at(a)} and created_at < ${at(b)} ${where}`,
  );
  const rolled = (grain: "hour" | "day", ranges: [number, number][]) =>
    ranges.map(
      ([a, b]) => sql`select ${grain}::text as grain, period as t, model, status, requests, tokens, pages, provider_cost_cents as provider, platform_fee_cents as fee, cost_cents as cost
        from usage_rollups where account_id = ${accountId} and grain = ${grain} and period >= ${at(a)} and period < ${at(b)} ${where}`,
    );
  return sql.join([...raw, ...rolled("hour", c.hours), ...rolled("day", c.days)], sql` union all `);
}

/** The account's rows in [start, end] (Unix seconds, `end` a whole second included) that pass the filters. */
export function usageRows(db: DB, accountId: string, start: number, end: number, f: RowFilter) {
  let q = db
    .selectFrom("usage_logs")
    .where("account_id", "=", accountId)
    .where("created_at", ">=", new Date(start * 1000))
    .where("created_at", "<", new Date((end + 1) * 1000));
  if (f.status) q = q.where("status", "=", f.status);
  if (f.model) q = q.where("model", "=", f.model);
  if (f.apiKeyId) q = q.where("api_key_id", "=", f.apiKeyId);
  return q;
}
