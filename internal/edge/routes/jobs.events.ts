/**
 * GET /v1/ocr/jobs/{id}/events: the job's events as server-sent events
 * (docs/jobs.md). Each is `id: <sequence>`, `event: <type>` and `data:` the
 * event (`{id, type, sequence, created_at, data}`); the stream replays what
 * the client has not seen (all, or after `Last-Event-ID`, a sequence number
 * or an event id) and follows new events until the job's final event, then
 * ends. Events are read from Postgres, so any replica answers, whichever
 * replica or worker made them.
 */
import { Type } from "typebox";
import { eventSequence, eventsAfter, type JobEvent } from "../../jobs/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { EVENT_STREAM } from "../sse.ts";
import { openStreamedAnswer } from "../streamed.ts";
import { keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JobParams, ownedJob } from "./jobs.shared.ts";

/**
 * How often a follower looks for new events on its own: with the database's
 * notifications (an event's NOTIFY wakes the job's followers at its commit),
 * only in case one was lost; without them (no listener), often (progress
 * comes at most once a second).
 */
const NOTIFIED_POLL_MS = 2_000;
const POLL_MS = 250;
const FINAL = new Set(["ocr.job.succeeded", "ocr.job.failed", "ocr.job.cancelled"]);

/** One event in SSE framing. */
export function sseJobEvent(e: JobEvent): string {
  return `id: ${e.sequence}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
}

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    `${JOBS_PATH}/:id/events`,
    keyed(["ocr:write"], {
      summary: "A durable OCR job's events, as server-sent events",
      description:
        "ocr.job.started, ocr.job.progress (at most about one a second), and one final event (ocr.job.succeeded, failed or cancelled), after which the stream ends. " +
        "Each event's SSE id is its sequence (1, 2, 3 … per job, no gap); reconnect with Last-Event-ID to get only what followed. data: {id, type, sequence, created_at, data: the job}.",
      tags: ["OCR jobs"],
      params: JobParams,
      headers: Type.Object({ "last-event-id": Type.Optional(Type.String({ maxLength: 100, description: "The last event seen: its sequence number or its id (evt_…)." })) }),
      response: { 200: { description: "text/event-stream", content: { [EVENT_STREAM]: { schema: Type.String() } } } as never },
    }),
    async (req, reply) => {
      const job = await ownedJob(deps, principalOf(req).accountId, req.params.id);
      let after = await lastSeen(deps, job.id, req.headers["last-event-id"]);
      const body = openStreamedAnswer(reply, EVENT_STREAM);
      const closed = new AbortController();
      reply.raw.on("close", () => closed.abort());
      const pollMs = deps.jobEvents.notified ? NOTIFIED_POLL_MS : POLL_MS;
      // Followed from before the first read: an event committed while a read finds nothing ends the wait after it.
      const follower = deps.jobEvents.follow(job.id);
      void (async () => {
        let quiet = 0;
        while (!closed.signal.aborted) {
          const events = await eventsAfter(deps.db, job.id, after);
          for (const e of events) {
            body.write(sseJobEvent(e));
            after = e.sequence;
            if (FINAL.has(e.type)) return;
          }
          if (events.length === 0) {
            // Proxies cut idle connections: a comment now and then keeps a long job's stream open.
            if (quiet >= deps.sseKeepAliveMs) {
              body.write(": keep-alive\n\n");
              quiet = 0;
            }
            const since = Date.now();
            await follower.wait(Math.min(pollMs, Math.max(1, deps.sseKeepAliveMs - quiet)), closed.signal);
            quiet += Date.now() - since;
          } else quiet = 0;
        }
      })()
        .finally(() => follower.close())
        .then(
          () => body.end(),
          (err: unknown) => {
            req.log.warn({ err }, "job event stream broken");
            body.destroy(err as Error);
          },
        );
      return reply;
    },
  );
}

/** The sequence the client saw last: Last-Event-ID as a number, or an event id of this job; 0 without one. */
async function lastSeen(deps: EdgeDeps, jobId: string, header: string | undefined): Promise<number> {
  if (header === undefined || header === "") return 0;
  if (/^\d{1,9}$/.test(header)) return Number(header);
  const sequence = await eventSequence(deps.db, jobId, header);
  if (sequence === undefined) throw new FolioError("invalid_request", `Last-Event-ID '${header}' is neither a sequence number nor an event of this job`, { param: "Last-Event-ID" });
  return sequence;
}
