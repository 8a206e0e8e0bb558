/**
 * The queue of durable OCR jobs: page ranges in Postgres, leased to workers
 * one at a time, handed out fairly across accounts
 * (docs/adr/0005-durable-jobs-queue.md).
 *
 * A job's pages are cut into ranges of a few pages; a worker claims a
 * range, holds it under a lease it renews while it reads, and completes it
 * in the transaction that stores the pages (and charges them). A worker
 * that dies stops renewing; once the lease expires any worker claims the
 * range again. Nothing here keeps state in memory: every replica sees the
 * same queue, and PGlite (one connection) runs the same statements.
 */
import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../platform/db/index.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** A range a worker holds: pages `firstPage`…`lastPage` of `jobId`. */
export interface LeasedRange {
  jobId: string;
  accountId: string;
  firstPage: number;
  lastPage: number;
  /** 1 on the first claim; more when earlier holders lost their lease. */
  attempts: number;
}

/**
 * The ranges of `pageCount` pages, 1-based [first, last] pairs: the first
 * page alone (a client sees a page as soon as one is read, not after a
 * whole range), then `rangePages` at a time.
 */
export function cutRanges(pageCount: number, rangePages: number): [number, number][] {
  if (!Number.isInteger(pageCount) || pageCount < 1) throw new RangeError(`a job has at least one page, not ${pageCount}`);
  if (!Number.isInteger(rangePages) || rangePages < 1) throw new RangeError(`a range has at least one page, not ${rangePages}`);
  const out: [number, number][] = [[1, 1]];
  for (let first = 2; first <= pageCount; first += rangePages) out.push([first, Math.min(pageCount, first + rangePages - 1)]);
  return out;
}

/** The channel a NOTIFY goes to when ranges become claimable: idle worker slots listening on it look at once. */
export const QUEUE_CHANNEL = "folio_job_ranges";

/** Tells listening workers that ranges wait (delivered when the caller's transaction commits). */
async function notifyWorkers(db: Db): Promise<void> {
  await sql`select pg_notify(${QUEUE_CHANNEL}, '')`.execute(db);
}

/** Queues the pages of a job (whose page count is now known) as ranges to claim, and tells the workers. */
export async function addRanges(db: Db, job: { id: string; accountId: string }, pageCount: number, rangePages: number): Promise<void> {
  const rows = cutRanges(pageCount, rangePages).map(([first, last]) => ({ job_id: job.id, account_id: job.accountId, first_page: first, last_page: last, status: "pending" as const }));
  // A few thousand rows at most (FOLIO_JOB_MAX_PAGES / rangePages); in batches to stay under the parameter limit.
  for (let i = 0; i < rows.length; i += 1000) await db.insertInto("ocr_job_ranges").values(rows.slice(i, i + 1000)).execute();
  await notifyWorkers(db);
}

/** A range (aliased `r`) is claimable when it waits, or when its holder's lease ran out. */
const claimable = sql<boolean>`(r.status = 'pending' or (r.status = 'leased' and r.lease_expires_at < now()))`;

/**
 * Claims the next range for `worker` under a lease of `leaseMs`, or
 * undefined when nothing waits. Fair across accounts: the account holding
 * the fewest live leases goes first (ties: the account whose oldest open
 * job is oldest), and within it the oldest job's lowest range. So a
 * one-page job of one account is claimed as soon as a worker is free, even
 * while another account's 2,000-page job has ranges waiting. With
 * `unservedOnly` (a worker's express slot), only accounts holding no live
 * lease are considered.
 */
export async function claimRange(db: Kysely<Database>, worker: string, leaseMs: number, opts: { unservedOnly?: boolean } = {}): Promise<LeasedRange | undefined> {
  const live = sql<number>`count(*) filter (where r.status = 'leased' and r.lease_expires_at >= now())`;
  // Accounts with claimable work, fairest first. Read without locks: two workers may pick the same
  // account, and then take two of its ranges (SKIP LOCKED below) or move on to the next account.
  const accounts = await db
    .selectFrom("ocr_job_ranges as r")
    .innerJoin("ocr_jobs as j", "j.id", "r.job_id")
    .select("r.account_id")
    .where("r.status", "<>", "done")
    .groupBy("r.account_id")
    .having(sql<boolean>`bool_or(${claimable})`)
    .$if(opts.unservedOnly === true, (q) => q.having(sql<boolean>`${live} = 0`))
    .orderBy(live)
    .orderBy(sql`min(j.created_at)`)
    .limit(8)
    .execute();
  for (const { account_id } of accounts) {
    const claimed = await db.transaction().execute(async (trx) => {
      const next = await trx
        .selectFrom("ocr_job_ranges as r")
        .innerJoin("ocr_jobs as j", "j.id", "r.job_id")
        .select(["r.job_id", "r.first_page"])
        .where("r.account_id", "=", account_id)
        .where(claimable)
        .where("j.status", "in", ["queued", "running"])
        .orderBy("j.created_at")
        .orderBy("r.job_id")
        .orderBy("r.first_page")
        .limit(1)
        .forUpdate("r")
        .skipLocked()
        .executeTakeFirst();
      if (!next) return undefined;
      return trx
        .updateTable("ocr_job_ranges")
        .set({
          status: "leased",
          lease_owner: worker,
          lease_expires_at: sql`now() + ${leaseMs} * interval '1 millisecond'`,
          attempts: sql`attempts + 1`,
        })
        .where("job_id", "=", next.job_id)
        .where("first_page", "=", next.first_page)
        .returning(["job_id", "account_id", "first_page", "last_page", "attempts"])
        .executeTakeFirstOrThrow();
    });
    if (claimed) return { jobId: claimed.job_id, accountId: claimed.account_id, firstPage: claimed.first_page, lastPage: claimed.last_page, attempts: claimed.attempts };
  }
  return undefined;
}

/**
 * Extends `worker`'s lease on a range by `leaseMs` from now. False when the
 * worker no longer holds it (the lease ran out and another worker took the
 * range, or it is done): the worker should stop reading it.
 */
export async function renewLease(db: Db, range: Pick<LeasedRange, "jobId" | "firstPage">, worker: string, leaseMs: number): Promise<boolean> {
  const r = await db
    .updateTable("ocr_job_ranges")
    .set({ lease_expires_at: sql`now() + ${leaseMs} * interval '1 millisecond'` })
    .where("job_id", "=", range.jobId)
    .where("first_page", "=", range.firstPage)
    .where("status", "=", "leased")
    .where("lease_owner", "=", worker)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Gives a range `worker` holds back to the queue at once (a worker that
 * stops mid-range): claimable again now rather than after its lease, and
 * its claim not counted as an attempt (it was not the range that failed).
 */
export async function releaseLease(db: Kysely<Database>, range: Pick<LeasedRange, "jobId" | "firstPage">, worker: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const released = await trx
      .updateTable("ocr_job_ranges")
      .set({ status: "pending", lease_owner: null, lease_expires_at: null, attempts: sql`greatest(attempts - 1, 0)` })
      .where("job_id", "=", range.jobId)
      .where("first_page", "=", range.firstPage)
      .where("status", "=", "leased")
      .where("lease_owner", "=", worker)
      .executeTakeFirst();
    if (Number(released.numUpdatedRows) > 0) await notifyWorkers(trx);
  });
}

/**
 * Marks a range done, in the caller's transaction (the one that stores its
 * pages). True when this call finished it; false when it was done already
 * (a worker that lost its lease finished second: the caller must then
 * store and charge nothing, its pages having been stored by the other).
 * Locks the range row until the transaction ends, so two finishers are
 * serialised.
 */
export async function finishRange(trx: Transaction<Database>, range: Pick<LeasedRange, "jobId" | "firstPage">): Promise<boolean> {
  const r = await trx
    .updateTable("ocr_job_ranges")
    .set({ status: "done", lease_owner: null, lease_expires_at: null })
    .where("job_id", "=", range.jobId)
    .where("first_page", "=", range.firstPage)
    .where("status", "<>", "done")
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Ranges of a job not done yet (0 when every page has been read or failed). */
export async function openRanges(db: Db, jobId: string): Promise<number> {
  const r = await db.selectFrom("ocr_job_ranges").select(sql<string>`count(*)`.as("n")).where("job_id", "=", jobId).where("status", "<>", "done").executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Pages waiting in the queue (not done), over every job: the depth the workers' autoscaler reads. */
export async function queuedPages(db: Db): Promise<number> {
  const r = await db
    .selectFrom("ocr_job_ranges")
    .select(sql<string>`coalesce(sum(last_page - first_page + 1), 0)`.as("n"))
    .where("status", "<>", "done")
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The queue as the workers' metrics show it: jobs by status, pages not yet read, the oldest queued job's wait. */
export async function queueState(db: Kysely<Database>): Promise<{ jobs: Record<"queued" | "running" | "succeeded" | "failed" | "cancelled", number>; queuedPages: number; oldestQueuedSeconds: number }> {
  const rows = await db.selectFrom("ocr_jobs").select(["status", sql<string>`count(*)`.as("n")]).groupBy("status").execute();
  const jobs = { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };
  for (const r of rows) jobs[r.status] = Number(r.n);
  const oldest = await db
    .selectFrom("ocr_jobs")
    .select(sql<string | null>`extract(epoch from now() - min(created_at))`.as("s"))
    .where("status", "=", "queued")
    .executeTakeFirst();
  return { jobs, queuedPages: await queuedPages(db), oldestQueuedSeconds: Math.max(0, Number(oldest?.s ?? 0)) };
}
