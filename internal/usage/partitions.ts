/**
 * The monthly partitions of `usage_logs` (migration 0003, docs/usage.md
 * "Partitions and retention"): each edge makes sure this month and the next
 * {@link MONTHS_AHEAD} have their partition, and drops months past the
 * retention, when it starts and every hour after. Rows no partition covers
 * land in `usage_logs_default`; a month created later takes its rows from
 * there. One edge at a time does the work (a transaction-scoped advisory
 * lock); the others find it done.
 */
import { sql } from "kysely";
import type { DB } from "../platform/db/index.ts";

/** Months after the current one that always have their partition. */
export const MONTHS_AHEAD = 2;

/** pg_advisory_xact_lock key of partition upkeep ("usage" in ASCII). */
const LOCK = 0x7573616765;

export interface PartitionReport {
  created: string[];
  dropped: string[];
  /** Rows deleted past the retention from the default partition. */
  deletedRows: number;
}

const monthStart = (y: number, m: number) => new Date(Date.UTC(y, m, 1));
const partitionName = (month: Date) => `usage_logs_${month.toISOString().slice(0, 7).replace("-", "_")}`;

export class UsagePartitions {
  constructor(
    private readonly db: DB,
    /** Whole months kept before the current one; 0 keeps everything. */
    private readonly retentionMonths: number,
  ) {}

  /** Creates the partitions due and drops the expired ones, as of `now`. */
  async upkeep(now = new Date()): Promise<PartitionReport> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${LOCK})`.execute(trx);
      const report: PartitionReport = { created: [], dropped: [], deletedRows: 0 };
      report.created = await createMonths(trx, now, MONTHS_AHEAD);
      if (this.retentionMonths > 0) await dropBefore(trx, monthStart(now.getUTCFullYear(), now.getUTCMonth() - this.retentionMonths), report);
      return report;
    });
  }

  /** Creates the partitions of `from`'s month and the `more` after it that do not exist yet (a bulk load of history). */
  async ensureMonths(from: Date, more: number): Promise<string[]> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${LOCK})`.execute(trx);
      return createMonths(trx, from, more);
    });
  }
}

async function createMonths(db: DB, from: Date, more: number): Promise<string[]> {
  const created: string[] = [];
  for (let m = 0; m <= more; m++) {
    const month = monthStart(from.getUTCFullYear(), from.getUTCMonth() + m);
    if (await createMonth(db, month)) created.push(partitionName(month));
  }
  return created;
}

/**
 * Creates `month`'s partition unless it exists. Rows of that month waiting
 * in the default partition move into it: deleted there and inserted again
 * through `usage_logs`, so the rollups' trigger takes them out and puts
 * them back, and the sums do not change.
 */
async function createMonth(db: DB, month: Date): Promise<boolean> {
  const name = partitionName(month);
  const { rows } = await sql<{ exists: boolean }>`select to_regclass(${name}) is not null as exists`.execute(db);
  if (rows[0]!.exists) return false;
  const from = month.toISOString();
  const to = monthStart(month.getUTCFullYear(), month.getUTCMonth() + 1).toISOString();
  await sql`create temporary table usage_logs_moving (like usage_logs) on commit drop`.execute(db);
  await sql`with moved as (delete from usage_logs_default where created_at >= ${from} and created_at < ${to} returning *)
    insert into usage_logs_moving select * from moved`.execute(db);
  await sql`create table ${sql.id(name)} partition of usage_logs for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(db);
  await sql`insert into usage_logs select * from usage_logs_moving`.execute(db);
  await sql`drop table usage_logs_moving`.execute(db);
  return true;
}

/** Drops every month partition that ends by `cutoff`, older rows of the default partition, and their rollups. */
async function dropBefore(db: DB, cutoff: Date, report: PartitionReport): Promise<void> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'usage_logs'::regclass and c.relname ~ '^usage_logs_[0-9]{4}_[0-9]{2}$'
    order by c.relname`.execute(db);
  for (const { name } of rows) {
    const [y, m] = name.slice("usage_logs_".length).split("_").map(Number) as [number, number];
    if (monthStart(y, m) > cutoff) continue; // m is 1-based: monthStart(y, m) is the month after, the partition's end
    await sql`drop table ${sql.id(name)}`.execute(db);
    report.dropped.push(name);
  }
  const deleted = await sql`delete from usage_logs_default where created_at < ${cutoff.toISOString()}`.execute(db);
  report.deletedRows = Number(deleted.numAffectedRows ?? 0);
  // In batches: every statement stays well within the pool's statement timeout.
  for (;;) {
    const gone = await sql`delete from usage_rollups where ctid in (select ctid from usage_rollups where period < ${cutoff.toISOString()} limit ${ROLLUP_BATCH})`.execute(db);
    if (Number(gone.numAffectedRows ?? 0) < ROLLUP_BATCH) return;
  }
}

const ROLLUP_BATCH = 10_000;

/**
 * Builds an account's rollups from its rows, in one GROUP BY per grain, for
 * rows written with the trigger off (a bulk load); the account must have
 * none yet. Migration 0003 does the same for the rows it moves.
 */
export async function buildRollups(db: DB, accountId: string): Promise<void> {
  for (const grain of ["hour", "day"]) {
    await sql`
      insert into usage_rollups
      select account_id, ${sql.lit(grain)}, date_trunc(${sql.lit(grain)}, created_at, 'UTC'), model, coalesce(api_key_id, ''), status, count(*),
             sum(tokens_used), sum(pages_processed), sum(provider_cost_cents), sum(platform_fee_cents), sum(cost_cents)
      from usage_logs where account_id = ${accountId}
      group by 1, 2, 3, 4, 5, 6`.execute(db);
  }
}
