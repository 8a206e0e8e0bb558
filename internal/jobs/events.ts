/**
 * A job's events: `{id, type, sequence, created_at, data}`, numbered 1, 2,
 * 3 … per job with no gap and no repeat, in the order the job changed. An
 * event is appended in the transaction that changes the job (so a change
 * and its event are both there or neither), and its number is taken from
 * the job's row under that row's lock: two transactions that change one job
 * take numbers one after the other, and a transaction that rolls back gives
 * its number back with everything else.
 */
import type { Kysely, Selectable, Transaction } from "kysely";
import type { Database, OcrJobEventsTable } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import { enqueueEvent } from "../webhooks/index.ts";

/** The job event types of the API (DESIGN.md; webhooks deliver the same). */
export const JOB_EVENT_TYPES = ["ocr.job.started", "ocr.job.progress", "ocr.job.succeeded", "ocr.job.failed", "ocr.job.cancelled"] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

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
  return event;
}

/** The events of a job after `afterSequence` (0: from the first), in order, at most `limit`. */
export async function eventsAfter(db: Transaction<Database> | Kysely<Database>, jobId: string, afterSequence: number, limit = 100): Promise<JobEvent[]> {
  const rows = await db.selectFrom("ocr_job_events").selectAll().where("job_id", "=", jobId).where("sequence", ">", afterSequence).orderBy("sequence").limit(limit).execute();
  return rows.map(toEvent);
}

function toEvent(row: Selectable<OcrJobEventsTable>): JobEvent {
  return { id: row.id, type: row.type as JobEventType, sequence: row.sequence, created_at: Math.floor(row.created_at.getTime() / 1000), data: row.data };
}
