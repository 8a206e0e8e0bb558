/**
 * A job's events: `{id, type, sequence, created_at, data}`, numbered 1, 2,
 * 3 … per job with no gap and no repeat, in the order the job changed. An
 * event is appended in the transaction that changes the job (so a change
 * and its event are both there or neither), and its number is taken from
 * the job's row under that row's lock: two transactions that change one job
 * take numbers one after the other, and a transaction that rolls back gives
 * its number back with everything else.
 */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { Database, OcrJobEventsTable } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import { Naps } from "../platform/naps/index.ts";
import { enqueueEvent } from "../webhooks/index.ts";

/** The job event types of the API (DESIGN.md; webhooks deliver the same). */
export const JOB_EVENT_TYPES = ["ocr.job.started", "ocr.job.progress", "ocr.job.succeeded", "ocr.job.failed", "ocr.job.cancelled"] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

/** The channel a NOTIFY goes to at each event, with the job's id as payload: the event streams following the job look at once. */
export const EVENTS_CHANNEL = "folio_job_events";

/** An event as clients read it. */
export interface JobEvent {
  id: string;
  type: JobEventType;
  sequence: number;
  /** Unix seconds. */
  created_at: number;
  data: unknown;
}

/**
 * Appends an event to `jobId` in `trx` and returns it; its webhook
 * deliveries (to the account's endpoints that take its type) are queued in
 * the same transaction (webhooks/outbox.ts).
 */
export async function appendEvent(trx: Transaction<Database>, jobId: string, type: JobEventType, data: unknown): Promise<JobEvent> {
  const { sequence, account_id } = await trx
    .updateTable("ocr_jobs")
    .set((eb) => ({ next_sequence: eb("next_sequence", "+", 1) }))
    .where("id", "=", jobId)
    .returning((eb) => [eb("next_sequence", "-", 1).as("sequence"), "account_id"])
    .executeTakeFirstOrThrow();
  const row = await trx
    .insertInto("ocr_job_events")
    .values({ id: newId("evt"), job_id: jobId, sequence, type, data: JSON.stringify(data) })
    .returningAll()
    .executeTakeFirstOrThrow();
  const event = toEvent(row);
  await enqueueEvent(trx, account_id, jobId, event);
  await sql`select pg_notify(${EVENTS_CHANNEL}, ${jobId})`.execute(trx);
  return event;
}

/** How an event stream waits for a job's next event (DatabaseHandle.listen on EVENTS_CHANNEL, when there is one). */
type Listen = (onNotify: (jobId?: string) => void) => () => Promise<void>;

/**
 * The waits of the event streams this process serves: each stream follows
 * its job ({@link JobEventWaits.follow}) and waits for the job's next event
 * until a notification for that job (or one without a payload: the listening
 * connection came back, anything may have changed) or its time is up. A
 * notification that comes while the stream is reading rather than waiting is
 * kept, and its next wait ends at once: an event committed between a read
 * that found nothing and the wait after it is not left for the next look.
 * The database is listened to from the first follower on, over one
 * connection for every stream.
 */
export class JobEventWaits {
  private readonly followers = new Map<string, Set<JobFollower>>();
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly listen?: Listen) {}

  /** Whether notifications come at all: without them a stream must look often. */
  get notified(): boolean {
    return this.listen !== undefined;
  }

  /** Starts following `jobId` (before its first read of events): notifications for it from now on are seen. */
  follow(jobId: string): JobFollower {
    this.unlisten ??= this.listen?.((id) => this.wake(id));
    let set = this.followers.get(jobId);
    if (!set) this.followers.set(jobId, (set = new Set()));
    const follower = new JobFollower(() => {
      set.delete(follower);
      if (set.size === 0 && this.followers.get(jobId) === set) this.followers.delete(jobId);
    });
    set.add(follower);
    return follower;
  }

  /** A notification for `jobId`; for every job without one. */
  wake(jobId?: string): void {
    const sets = jobId === undefined ? [...this.followers.values()] : [this.followers.get(jobId)];
    for (const set of sets) for (const f of set ?? []) f.notify();
  }

  /** Stops listening; the waits under way end at their time. */
  async close(): Promise<void> {
    const unlisten = this.unlisten;
    this.unlisten = undefined;
    await unlisten?.();
  }
}

/** One event stream following a job (see {@link JobEventWaits}). */
export class JobFollower {
  private readonly naps = new Naps();
  private missed = false;

  constructor(private readonly forget: () => void) {}

  /** Whether a notification came while no wait was under way: the next wait ends at once. */
  get pending(): boolean {
    return this.missed;
  }

  /** Waits up to `ms`; ends early at a notification for the job (or one kept from before the wait), or when `signal` aborts. */
  async wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.missed) {
      this.missed = false;
      return;
    }
    await this.naps.sleep(ms, signal);
  }

  notify(): void {
    if (this.naps.sleeping) this.naps.wake();
    else this.missed = true;
  }

  /** Stops following. */
  close(): void {
    this.forget();
  }
}

/** The events of a job after `afterSequence` (0: from the first), in order, at most `limit`. */
export async function eventsAfter(db: Transaction<Database> | Kysely<Database>, jobId: string, afterSequence: number, limit = 100): Promise<JobEvent[]> {
  const rows = await db.selectFrom("ocr_job_events").selectAll().where("job_id", "=", jobId).where("sequence", ">", afterSequence).orderBy("sequence").limit(limit).execute();
  return rows.map(toEvent);
}

/** The sequence number of event `eventId` of job `jobId`; undefined when the job has no such event. */
export async function eventSequence(db: Kysely<Database>, jobId: string, eventId: string): Promise<number | undefined> {
  const row = await db.selectFrom("ocr_job_events").select("sequence").where("job_id", "=", jobId).where("id", "=", eventId).executeTakeFirst();
  return row?.sequence;
}

function toEvent(row: Selectable<OcrJobEventsTable>): JobEvent {
  return { id: row.id, type: row.type as JobEventType, sequence: row.sequence, created_at: Math.floor(row.created_at.getTime() / 1000), data: row.data };
}
