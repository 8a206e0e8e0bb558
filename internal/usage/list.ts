/**
 * GET /v1/usage: entries newest first, by offset (the spec's) or after an
 * entry (`starting_after`, a keyset page that costs the same however deep
 * it is); `total_count` from the rollups (sources.ts).
 */
import { sql } from "kysely";
import type { DB } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { toUsageEntry, type UsageEntry } from "./entries.ts";
import { usageRows, usageSources, type RowFilter } from "./sources.ts";

export interface UsageFilter extends RowFilter {
  /** Unix seconds, both included (`end` as a whole second). */
  start: number;
  end: number;
  limit: number;
  offset: number;
  /** An entry's id: the page starts with the next older entry. */
  startingAfter?: string | undefined;
}

/** From this offset on, the rollups say where the page starts (see {@link seek}). */
const SEEK_FROM_OFFSET = 1000;

export async function listUsage(db: DB, accountId: string, f: UsageFilter): Promise<{ data: UsageEntry[]; total_count: number; has_more: boolean }> {
  const cursor = f.startingAfter ? await entryPosition(db, accountId, f.startingAfter) : undefined;
  const from = f.offset >= SEEK_FROM_OFFSET ? await seek(db, accountId, f) : { beforeMs: (f.end + 1) * 1000, offset: f.offset };
  let q = usageRows(db, accountId, f.start, f.end, f)
    .selectAll()
    .where("created_at", "<", new Date(from.beforeMs));
  if (cursor) q = q.where(sql<boolean>`(created_at, id) < (${cursor}::timestamptz, ${f.startingAfter})`);
  // One more than the page: whether there is a next page, without counting.
  const [rows, total] = await Promise.all([
    q.orderBy("created_at", "desc").orderBy("id", "desc").limit(f.limit + 1).offset(from.offset).execute(),
    countUsage(db, accountId, f),
  ]);
  return { data: rows.slice(0, f.limit).map(toUsageEntry), total_count: total, has_more: rows.length > f.limit };
}

/**
 * A deep offset without walking every entry before it: the rollups count
 * the entries of each day, then of each hour of the day the offset falls
 * in, so the page's query starts at the end of that hour and skips only the
 * entries of the hour that come before it. Returns that hour's end and the
 * offset left within it. Exact: the counts are the rows' own, in the same
 * snapshot as far as any row written since would sit before the page (the
 * newest entries come first), where an offset page moves anyway.
 */
async function seek(db: DB, accountId: string, f: UsageFilter): Promise<{ beforeMs: number; offset: number }> {
  let range = { from: f.start * 1000, to: (f.end + 1) * 1000 };
  let left = f.offset;
  for (let level = 0; ; level++) {
    // Days first, then the hours of the day the offset falls in.
    const source = usageSources(accountId, range.from, range.to, f, level === 0);
    const { rows } = await sql<{ grain: string; bucket: Date; n: string; before: string }>`
      select grain, bucket, n, coalesce(sum(n) over (order by bucket desc rows between unbounded preceding and 1 preceding), 0) as before
      from (select case when grain = 'raw' then 'hour' else grain end as grain,
                   case when grain = 'raw' then date_trunc('hour', t, 'UTC') else t end as bucket, sum(requests) as n
            from (${source}) s group by 1, 2) b
      order by bucket desc`.execute(db);
    const at = rows.find((r) => Number(r.before) + Number(r.n) > left);
    // Past the last entry: an empty page, found at once.
    if (!at) return { beforeMs: range.from, offset: 0 };
    left -= Number(at.before);
    const start = at.bucket.getTime();
    const end = Math.min(range.to, start + (at.grain === "day" ? 86_400_000 : 3_600_000));
    if (at.grain !== "day") return { beforeMs: end, offset: left };
    range = { from: Math.max(range.from, start), to: end };
  }
}

/** Entries in [start, end] that pass the filters, from the rollups and the raw rows at the edges. */
async function countUsage(db: DB, accountId: string, f: UsageFilter): Promise<number> {
  const source = usageSources(accountId, f.start * 1000, (f.end + 1) * 1000, f);
  const { rows } = await sql<{ n: string }>`select coalesce(sum(requests), 0) as n from (${source}) s`.execute(db);
  return Number(rows[0]!.n);
}

/**
 * Where entry `id` of the account sits in the list's order: its `created_at`
 * as Postgres text (microseconds kept; a JavaScript Date would round them
 * to milliseconds and move the page's start).
 */
async function entryPosition(db: DB, accountId: string, id: string): Promise<string> {
  const row = await db
    .selectFrom("usage_logs")
    .select(sql<string>`created_at::text`.as("at"))
    .where("account_id", "=", accountId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (!row) throw new FolioError("invalid_request", `starting_after: no usage entry ${JSON.stringify(id)} in this account`, { param: "starting_after" });
  return row.at;
}
