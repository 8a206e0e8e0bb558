/**
 * The webhook outbox (docs/webhooks.md): one delivery row an event and
 * endpoint, written in the transaction that writes the event, so an event
 * and its deliveries are both there or neither. Any worker claims due
 * deliveries under a lease and records each attempt; a worker killed
 * mid-delivery leaves the lease to run out and the delivery is attempted
 * again (the same `webhook-id`), never lost.
 *
 * In order per job and endpoint: a delivery is not claimed while an earlier
 * event of the same job to the same endpoint is still pending, so a
 * receiver sees `sequence` rise. A progress event still pending when a newer
 * progress event of its job waits behind it is merged into that one (marked
 * `merged`, never sent: the newer one carries the newer state); final
 * events never are.
 */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { Database, WebhookDeliveriesTable } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import type { WebhookQueueState } from "../platform/metrics/index.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** An event as it is delivered: the body of the POST, exactly as on the job's event stream. */
export interface OutboxEvent {
  id: string;
  type: string;
  sequence: number;
  /** Unix seconds. */
  created_at: number;
  data: unknown;
}

/** The channel a NOTIFY goes to when deliveries are queued: idle deliverers listening on it look at once. */
export const OUTBOX_CHANNEL = "folio_webhook_outbox";

/** The progress event type, the one kind that may be merged. */
const PROGRESS = "ocr.job.progress";

/**
 * Queues `event` (of job `jobId`, or of no job for `webhook.test`) for every
 * enabled endpoint of `accountId` that takes its type, in `trx`. Returns how
 * many deliveries were queued.
 */
export async function enqueueEvent(trx: Db, accountId: string, jobId: string | null, event: OutboxEvent, onlyEndpoint?: string): Promise<number> {
  let q = trx
    .selectFrom("webhook_endpoints")
    .select("id")
    .where("account_id", "=", accountId)
    .where("disabled", "=", false)
    .where(sql<boolean>`(events ? ${event.type} or events ? '*')`);
  if (onlyEndpoint) q = q.where("id", "=", onlyEndpoint);
  const endpoints = await q.execute();
  if (endpoints.length === 0) return 0;
  const body = JSON.stringify({ id: event.id, type: event.type, sequence: event.sequence, created_at: event.created_at, data: event.data });
  await trx
    .insertInto("webhook_deliveries")
    .values(
      endpoints.map((e) => ({
        id: newId("whd"),
        endpoint_id: e.id,
        account_id: accountId,
        event_id: event.id,
        type: event.type,
        job_id: jobId,
        sequence: event.sequence,
        body,
        status: "pending" as const,
      })),
    )
    .execute();
  // Sent at the commit, to every listening deliverer of any replica.
  await sql`select pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx);
  return endpoints.length;
}

/** A claimed delivery: the event's id and body as queued, and which attempt this is (1 on the first). */
export type ClaimedDelivery = Pick<Selectable<WebhookDeliveriesTable>, "id" | "endpoint_id" | "account_id" | "event_id" | "type" | "job_id" | "sequence" | "body" | "attempts">;

/** A pending delivery (aliased `d`) whose time has come and whose lease, if any, ran out. */
const due = sql<boolean>`(d.status = 'pending' and d.next_attempt_at <= now() and (d.lease_expires_at is null or d.lease_expires_at < now()))`;

/** A delivery (aliased `d`) with no earlier event of its job to its endpoint still pending. */
const notBehind = sql<boolean>`not exists (select 1 from webhook_deliveries p where p.endpoint_id = d.endpoint_id and p.job_id = d.job_id and p.sequence < d.sequence and p.status = 'pending')`;

/**
 * Claims the next due delivery for `worker` under a lease of `leaseMs`, or
 * undefined when none is due. Skips deliveries behind an earlier pending
 * event of the same job and endpoint, and endpoints that are disabled;
 * merges superseded progress events first.
 */
export async function claimDelivery(db: Kysely<Database>, worker: string, leaseMs: number, onMerged?: (n: number) => void): Promise<ClaimedDelivery | undefined> {
  // One indexed look first (webhook_deliveries_due): an idle outbox costs a poll one query, not four.
  const anyDue = await db.selectFrom("webhook_deliveries as d").select("d.id").where(due).limit(1).executeTakeFirst();
  if (!anyDue) return undefined;
  const merged = await mergeProgress(db);
  if (merged > 0) onMerged?.(merged);
  return db.transaction().execute(async (trx) => {
    const next = await trx
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_endpoints as e", "e.id", "d.endpoint_id")
      .select("d.id")
      .where(due)
      .where("e.disabled", "=", false)
      .where(notBehind)
      .orderBy("d.next_attempt_at")
      .orderBy("d.created_at")
      .limit(1)
      .forUpdate("d")
      .skipLocked()
      .executeTakeFirst();
    if (!next) return undefined;
    return trx
      .updateTable("webhook_deliveries")
      .set({ lease_owner: worker, lease_expires_at: sql`now() + ${leaseMs} * interval '1 millisecond'`, attempts: sql`attempts + 1` })
      .where("id", "=", next.id)
      .returning(["id", "endpoint_id", "account_id", "event_id", "type", "job_id", "sequence", "body", "attempts"])
      .executeTakeFirstOrThrow();
  });
}

/** Marks pending progress deliveries not being attempted, with a newer pending progress event of their job behind them, as merged; returns how many. */
async function mergeProgress(db: Db): Promise<number> {
  const r = await db
    .updateTable("webhook_deliveries as d")
    .set({ status: "merged", finished_at: sql`now()`, lease_owner: null, lease_expires_at: null })
    .where("d.status", "=", "pending")
    .where("d.type", "=", PROGRESS)
    .where(sql<boolean>`(d.lease_expires_at is null or d.lease_expires_at < now())`)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom("webhook_deliveries as n")
          .select(sql`1`.as("one"))
          .whereRef("n.endpoint_id", "=", "d.endpoint_id")
          .whereRef("n.job_id", "=", "d.job_id")
          .whereRef("n.sequence", ">", "d.sequence")
          .where("n.type", "=", PROGRESS)
          .where("n.status", "=", "pending"),
      ),
    )
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** What one attempt came to: the receiver's HTTP status, or the network error; how long it took. */
export interface AttemptOutcome {
  httpStatus?: number;
  error?: string;
  durationMs: number;
}

/** How long an endpoint may fail every attempt before it is disabled. */
export const DISABLE_AFTER_MS = 5 * 86_400_000;

export type AttemptResult = "delivered" | "retry" | "failed" | "lost_lease";

/**
 * Records an attempt of `d` and what follows: delivered on a 2xx; else the
 * next attempt after `retrySeconds[attempts - 1]`, or given up (`failed`)
 * when the schedule is spent. The endpoint's failing streak is kept, and an
 * endpoint failing for {@link DISABLE_AFTER_MS} is disabled with the reason.
 * A worker that lost its lease records its attempt and changes nothing else.
 */
export async function recordAttempt(db: Kysely<Database>, worker: string, d: ClaimedDelivery, outcome: AttemptOutcome, retrySeconds: readonly number[]): Promise<AttemptResult> {
  const ok = outcome.httpStatus !== undefined && outcome.httpStatus >= 200 && outcome.httpStatus <= 299;
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto("webhook_attempts")
      .values({
        id: newId("wha"),
        delivery_id: d.id,
        endpoint_id: d.endpoint_id,
        event_id: d.event_id,
        type: d.type,
        attempt: d.attempts,
        http_status: outcome.httpStatus ?? null,
        error: outcome.error ?? null,
        duration_ms: Math.round(outcome.durationMs),
      })
      .execute();
    const giveUp = !ok && d.attempts > retrySeconds.length;
    const result: AttemptResult = ok ? "delivered" : giveUp ? "failed" : "retry";
    const changed = await trx
      .updateTable("webhook_deliveries")
      .set({
        lease_owner: null,
        lease_expires_at: null,
        ...(result === "retry"
          ? { next_attempt_at: sql`now() + ${retrySeconds[d.attempts - 1] ?? 0} * interval '1 second'` }
          : { status: result, finished_at: sql`now()` }),
      })
      .where("id", "=", d.id)
      .where("status", "=", "pending")
      .where("lease_owner", "=", worker)
      .executeTakeFirst();
    if (Number(changed.numUpdatedRows) === 0) return "lost_lease";
    if (ok) {
      await trx.updateTable("webhook_endpoints").set({ failing_since: null }).where("id", "=", d.endpoint_id).where("failing_since", "is not", null).execute();
    } else {
      await trx.updateTable("webhook_endpoints").set({ failing_since: sql`coalesce(failing_since, now())` }).where("id", "=", d.endpoint_id).execute();
      await trx
        .updateTable("webhook_endpoints")
        .set({ disabled: true, disabled_reason: sql`'every delivery failed since ' || to_char(failing_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' (5 days): enable it again once the receiver answers'`, updated_at: sql`now()` })
        .where("id", "=", d.endpoint_id)
        .where("disabled", "=", false)
        .where(sql<boolean>`failing_since < now() - ${DISABLE_AFTER_MS} * interval '1 millisecond'`)
        .execute();
    }
    return result;
  });
}

/** Gives a claimed delivery back at once (a stopping worker), without counting the attempt. */
export async function releaseDelivery(db: Db, worker: string, d: ClaimedDelivery): Promise<void> {
  await db
    .updateTable("webhook_deliveries")
    .set({ lease_owner: null, lease_expires_at: null, attempts: sql`attempts - 1` })
    .where("id", "=", d.id)
    .where("status", "=", "pending")
    .where("lease_owner", "=", worker)
    .execute();
}

/** The outbox as the workers' metrics show it (read at each scrape; the same in every replica). */
export async function webhookQueueState(db: Kysely<Database>): Promise<WebhookQueueState> {
  const leased = sql<boolean>`(d.lease_expires_at is not null and d.lease_expires_at >= now())`;
  const ready = sql<boolean>`(${due} and not e.disabled and ${notBehind})`;
  const q = await db
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhook_endpoints as e", "e.id", "d.endpoint_id")
    .where("d.status", "=", "pending")
    .select([
      sql<string>`count(*) filter (where ${leased})`.as("attempting"),
      sql<string>`count(*) filter (where ${ready})`.as("ready"),
      sql<string>`count(*)`.as("all"),
      sql<string | null>`extract(epoch from now() - min(d.next_attempt_at) filter (where ${ready}))`.as("oldest"),
    ])
    .executeTakeFirstOrThrow();
  const e = await db
    .selectFrom("webhook_endpoints")
    .select([
      sql<string>`count(*) filter (where disabled)`.as("disabled"),
      sql<string>`count(*) filter (where not disabled and failing_since is not null)`.as("failing"),
      sql<string>`count(*) filter (where not disabled and failing_since is null)`.as("healthy"),
    ])
    .executeTakeFirstOrThrow();
  const attempting = Number(q.attempting);
  const readyN = Number(q.ready);
  return {
    pending: { ready: readyN, attempting, waiting: Number(q.all) - readyN - attempting },
    oldestReadySeconds: Math.max(0, Number(q.oldest ?? 0)),
    endpoints: { healthy: Number(e.healthy), failing: Number(e.failing), disabled: Number(e.disabled) },
  };
}
