/**
 * The webhook outbox and its deliverer against a real receiver (node:http on
 * loopback, let through by the allow list as FOLIO_FETCH_ALLOW does), on a
 * private Postgres database and on embedded PGlite (as `folio dev` runs it).
 * Job events are appended as the job store appends them (appendEvent, in a
 * transaction each); every signature is checked with the `standardwebhooks`
 * package, as receivers check it.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { beforeAll, expect, it, vi } from "vitest";
import { insertRunningJob } from "../../test/harness.ts";
import { onBothDatabases } from "../jobs/databases.testkit.ts";
import { appendEvent, type JobEventType } from "../jobs/events.ts";
import type { DatabaseHandle, DB } from "../platform/db/index.ts";
import { createLogger } from "../platform/log/index.ts";
import { newId } from "../platform/ids/index.ts";
import { WebhookDeliverer, type DelivererOptions } from "./deliverer.ts";
import { createEndpoint, rotateSecret } from "./endpoints.ts";
import { OUTBOX_CHANNEL, webhookQueueState } from "./outbox.ts";
import { SecretBox, newSecretKey } from "./secrets.ts";
import { seeded } from "../../test/support.ts";

/** What the receiver saw of one POST. */
interface Seen {
  webhookId: string;
  jobId: string | undefined;
  type: string;
  sequence: number;
  body: string;
  /** Signatures that verified, by the secret's name. */
  verified: string[];
  answer: "ok" | "500" | "stall";
}

/** A receiver whose answer to each POST `decide` picks (a stall answers after `stallMs`); it checks signatures with each of `secrets`. */
async function receiver(secrets: Record<string, string>, decide: (seen: Omit<Seen, "answer">) => Seen["answer"], stallMs = 700): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = { "webhook-id": String(req.headers["webhook-id"]), "webhook-timestamp": String(req.headers["webhook-timestamp"]), "webhook-signature": String(req.headers["webhook-signature"]) };
      const verified = Object.entries(secrets).flatMap(([name, secret]) => {
        try {
          new Webhook(secret).verify(body, headers);
          return [name];
        } catch {
          return [];
        }
      });
      const event = JSON.parse(body) as { type: string; sequence: number; data?: { id?: string } };
      const partial = { webhookId: headers["webhook-id"], jobId: event.data?.id, type: event.type, sequence: event.sequence, body, verified };
      const answer = decide(partial);
      seen.push({ ...partial, answer });
      if (answer === "ok") res.writeHead(204).end();
      else if (answer === "500") res.writeHead(500).end("try later");
      else setTimeout(() => res.writeHead(204).end(), stallMs).unref();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks?source=folio`,
    seen,
    close: () => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}


const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const box = SecretBox.fromBase64(newSecretKey());

onBothDatabases("webhook deliveries on %s", "webhooks_outbox", (_name, opened) => {
  let handle: DatabaseHandle;
  let db: DB;
  beforeAll(() => {
    ({ handle, db } = opened);
  });

  async function account(): Promise<string> {
    const id = newId("acc");
    await db.insertInto("accounts").values({ id, email: `${id}@test.invalid`, name: "webhooks", plan: "test", requests_per_minute: 60, requests_per_day: 1000 }).execute();
    return id;
  }

  const job = (accountId: string) => insertRunningJob(db, accountId, { pageCount: 10 });

  /** Appends an event as the job store does: in a transaction of its own, the job's state as data. */
  const append = (jobId: string, type: JobEventType, pages: number) =>
    db.transaction().execute((trx) => appendEvent(trx, jobId, type, { id: jobId, object: "ocr.job", status: type === "ocr.job.succeeded" ? "succeeded" : "running", pages_completed: pages }));

  /** Runs `during` while a deliverer (these options, `extra` over them) runs, and stops it after, also when `during` throws. */
  async function delivering(extra: Partial<DelivererOptions>, during: () => Promise<unknown>): Promise<void> {
    const d = new WebhookDeliverer({ db, secrets: box, log: createLogger("silent"), concurrency: 4, timeoutMs: 300, retrySeconds: Array(12).fill(0.05), pollMs: 20, allow: ["127.0.0.1"], ...extra });
    d.start();
    try {
      await during();
    } finally {
      await d.stop();
    }
  }

  const settled = async () => {
    await vi.waitFor(async () => expect(await db.selectFrom("webhook_deliveries").select("id").where("status", "=", "pending").execute()).toEqual([]), { timeout: 60_000, interval: 100 });
  };

  it("delivers every event of three concurrent jobs, in sequence order per job, signed, through 500s and stalls, each retry with the same webhook-id", async () => {
    const accountId = await account();
    const random = seeded(7);
    const secrets: Record<string, string> = {};
    let n = 0;
    // 30 % 500s and 10 % stalls, drawn; the second attempt fails and the fourth stalls whatever the draw
    // (how many attempts there are depends on how many progress events were merged).
    const rx = await receiver(
      secrets,
      () => {
        const r = random();
        n++;
        return n === 2 ? "500" : n === 4 ? "stall" : r < 0.3 ? "500" : r < 0.4 ? "stall" : "ok";
      },
      2500,
    );
    try {
      const made = await createEndpoint(db, box, { accountId, url: rx.url, events: ["*"] });
      secrets.endpoint = made.secret;
      const jobs = await Promise.all([job(accountId), job(accountId), job(accountId)]);
      // A 1 s limit: on a loaded machine a 0.3 s one also cut attempts that never stalled, before the receiver had read them.
      await delivering({ timeoutMs: 1000 }, async () => {
        // The three jobs change side by side while deliveries run.
        await Promise.all(
          jobs.map(async (jobId, j) => {
            await append(jobId, "ocr.job.started", 0);
            for (let p = 1; p <= 6; p++) {
              await sleep(20 + j * 7);
              await append(jobId, "ocr.job.progress", p);
            }
            await append(jobId, "ocr.job.succeeded", 6);
          }),
        );
        await settled();
      });
      const rows = await db.selectFrom("webhook_deliveries").selectAll().where("endpoint_id", "=", made.endpoint.id).orderBy("job_id").orderBy("sequence").execute();
      expect(rows.filter((r) => r.status === "failed")).toEqual([]);
      for (const jobId of jobs) {
        const mine = rows.filter((r) => r.job_id === jobId);
        expect(mine).toHaveLength(8);
        // Started and succeeded are never merged; every event is delivered or merged into a newer progress event.
        expect(mine.filter((r) => r.type !== "ocr.job.progress").map((r) => r.status)).toEqual(["delivered", "delivered"]);
        expect(mine.every((r) => r.status === "delivered" || (r.status === "merged" && r.type === "ocr.job.progress"))).toBe(true);
        // The newest progress event is never merged away.
        expect(mine.filter((r) => r.type === "ocr.job.progress").at(-1)?.status).toBe("delivered");
        // In order: the receiver never saw an event of this job after a later one.
        const arrivals = rx.seen.filter((s) => s.jobId === jobId).map((s) => s.sequence);
        expect(arrivals).toEqual([...arrivals].sort((a, b) => a - b));
        const accepted = rx.seen.filter((s) => s.jobId === jobId && s.answer === "ok").map((s) => s.sequence);
        expect(new Set(accepted).size, "each event accepted once").toBe(accepted.length);
        expect(accepted).toEqual(mine.filter((r) => r.status === "delivered").map((r) => r.sequence));
      }
      // Every attempt is signed with the endpoint's secret and verifies with the standardwebhooks package.
      for (const s of rx.seen) {
        expect(s.verified, `the attempt of ${s.webhookId} verifies`).toEqual(["endpoint"]);
        const row = rows.find((r) => r.event_id === s.webhookId);
        expect(row, `webhook-id ${s.webhookId} is an event id`).toBeDefined();
        expect(s.body, "every attempt of an event sends the same body").toBe(row!.body);
      }
      const retried = rx.seen.filter((s, i) => rx.seen.findIndex((t) => t.webhookId === s.webhookId) !== i);
      expect(retried.length, "some events were attempted again").toBeGreaterThan(0);
      expect(rx.seen.some((s) => s.answer === "stall")).toBe(true);
      // The attempts are listed: each with its number, status or error.
      const attempts = await db.selectFrom("webhook_attempts").selectAll().where("endpoint_id", "=", made.endpoint.id).execute();
      // Every attempt the receiver saw is listed; one the limit cut before the receiver had read (or answered) it is listed too,
      // without a status. No status is listed that the receiver did not answer.
      expect(attempts.length).toBeGreaterThanOrEqual(rx.seen.length);
      expect(attempts.filter((a) => a.http_status === 500).length).toBeLessThanOrEqual(rx.seen.filter((s) => s.answer === "500").length);
      expect(attempts.filter((a) => a.http_status !== null).length).toBeLessThanOrEqual(rx.seen.filter((s) => s.answer !== "stall").length);
      expect(attempts.some((a) => a.http_status === 500)).toBe(true);
      expect(attempts.some((a) => a.http_status === null && /no answer within 1 s/.test(a.error ?? ""))).toBe(true);
      expect(attempts.filter((a) => a.attempt > 1).length).toBeGreaterThan(0);
    } finally {
      await rx.close();
    }
  }, 120_000);

  it("signs with what the receiver holds: the standardwebhooks package verifies every delivery, and both secrets during a rotation's overlap", async () => {
    const accountId = await account();
    const secrets: Record<string, string> = {};
    const rx = await receiver(secrets, () => "ok");
    try {
      const made = await createEndpoint(db, box, { accountId, url: rx.url, events: ["ocr.job.succeeded"] });
      secrets.old = made.secret;
      const jobId = await job(accountId);
      await delivering({}, async () => {
        await append(jobId, "ocr.job.started", 0); // not subscribed: not queued
        await append(jobId, "ocr.job.succeeded", 10);
        await vi.waitFor(() => expect(rx.seen).toHaveLength(1), { timeout: 10_000, interval: 20 });
        expect(rx.seen[0]).toMatchObject({ type: "ocr.job.succeeded", sequence: 2, verified: ["old"] });
        const rotated = (await rotateSecret(db, box, accountId, made.endpoint.id, 3600))!;
        secrets.new = rotated.secret;
        const second = await job(accountId);
        await append(second, "ocr.job.succeeded", 10);
        await vi.waitFor(() => expect(rx.seen).toHaveLength(2), { timeout: 10_000, interval: 20 });
        expect(rx.seen[1]!.verified.sort()).toEqual(["new", "old"]);
        // The overlap over: only the new secret signs.
        await db.updateTable("webhook_endpoints").set({ previous_secret_expires_at: new Date(Date.now() - 1000) }).where("id", "=", made.endpoint.id).execute();
        const third = await job(accountId);
        await append(third, "ocr.job.succeeded", 10);
        await vi.waitFor(() => expect(rx.seen).toHaveLength(3), { timeout: 10_000, interval: 20 });
        expect(rx.seen[2]!.verified).toEqual(["new"]);
      });
      // The secret is stored sealed, not in clear.
      const stored = await db.selectFrom("webhook_endpoints").select(["secret", "previous_secret"]).where("id", "=", made.endpoint.id).executeTakeFirstOrThrow();
      expect(stored.secret).not.toContain(secrets.new!.slice(6));
      expect(stored.previous_secret).not.toContain(secrets.old!.slice(6));
      expect(box.open(stored.secret, made.endpoint.id)).toBe(secrets.new);
      expect(() => box.open(stored.secret, "we_another")).toThrow();
    } finally {
      await rx.close();
    }
  }, 60_000);

  it("disables an endpoint whose every attempt failed for 5 days, saying since when; a success ends a failing streak", async () => {
    const accountId = await account();
    let answer: Seen["answer"] = "500";
    const rx = await receiver({}, () => answer);
    try {
      const made = await createEndpoint(db, box, { accountId, url: rx.url, events: ["*"] });
      const since = new Date(Date.now() - 5 * 86_400_000 - 60_000);
      await db.updateTable("webhook_endpoints").set({ failing_since: since }).where("id", "=", made.endpoint.id).execute();
      await delivering({ retrySeconds: [] }, async () => {
        await append(await job(accountId), "ocr.job.failed", 0);
        await settled();
      });
      const off = await db.selectFrom("webhook_endpoints").select(["disabled", "disabled_reason"]).where("id", "=", made.endpoint.id).executeTakeFirstOrThrow();
      expect(off.disabled).toBe(true);
      expect(off.disabled_reason).toContain(since.toISOString().slice(0, 19));
      // Disabled: nothing more is queued for it.
      expect(await db.selectFrom("webhook_deliveries").select("id").where("endpoint_id", "=", made.endpoint.id).execute()).toHaveLength(1);
      await append(await job(accountId), "ocr.job.failed", 0);
      expect(await db.selectFrom("webhook_deliveries").select("id").where("endpoint_id", "=", made.endpoint.id).execute()).toHaveLength(1);

      // Enabled again and answering: the streak ends.
      await db.updateTable("webhook_endpoints").set({ disabled: false, disabled_reason: null, failing_since: since }).where("id", "=", made.endpoint.id).execute();
      answer = "ok";
      await delivering({}, async () => {
        await append(await job(accountId), "ocr.job.succeeded", 10);
        await settled();
      });
      expect(await db.selectFrom("webhook_endpoints").select(["disabled", "failing_since"]).where("id", "=", made.endpoint.id).executeTakeFirstOrThrow()).toEqual({ disabled: false, failing_since: null });
    } finally {
      await rx.close();
    }
  }, 60_000);

  it("gives a delivery up when its retries are spent, and refuses a private address not allowed", async () => {
    const accountId = await account();
    const rx = await receiver({}, () => "500");
    try {
      const failing = await createEndpoint(db, box, { accountId, url: rx.url, events: ["*"] });
      const jobId = await job(accountId);
      await delivering({ retrySeconds: [0.05, 0.05] }, async () => {
        await append(jobId, "ocr.job.failed", 0);
        await settled();
      });
      const row = await db.selectFrom("webhook_deliveries").select(["status", "attempts"]).where("endpoint_id", "=", failing.endpoint.id).executeTakeFirstOrThrow();
      expect(row).toEqual({ status: "failed", attempts: 3 });
      expect(rx.seen).toHaveLength(3);
      expect(new Set(rx.seen.map((s) => s.webhookId)).size).toBe(1);
      const endpoint = await db.selectFrom("webhook_endpoints").select(["failing_since", "disabled"]).where("id", "=", failing.endpoint.id).executeTakeFirstOrThrow();
      expect(endpoint.failing_since).not.toBeNull();
      expect(endpoint.disabled).toBe(false);

      // Loopback without the allow list: refused before any connection, and said so in the attempt.
      const before = rx.seen.length;
      const second = await job(accountId);
      await delivering({ allow: [], retrySeconds: [] }, async () => {
        await append(second, "ocr.job.failed", 0);
        await settled();
      });
      expect(rx.seen.length).toBe(before);
      const attempt = await db.selectFrom("webhook_attempts").select(["http_status", "error"]).where("endpoint_id", "=", failing.endpoint.id).orderBy("created_at", "desc").executeTakeFirstOrThrow();
      expect(attempt.http_status).toBeNull();
      expect(attempt.error).toMatch(/loopback/);
    } finally {
      await rx.close();
    }
  }, 60_000);

  it("counts the outbox as the metrics show it, and wakes at a commit's notification instead of waiting for the next poll", async () => {
    const accountId = await account();
    const rx = await receiver({}, () => "ok");
    try {
      const { endpoint } = await createEndpoint(db, box, { accountId, url: rx.url, events: ["*"] });
      const jobId = await job(accountId);
      const before = await webhookQueueState(db);
      await append(jobId, "ocr.job.started", 0);
      await append(jobId, "ocr.job.progress", 1);
      // The first is ready; the second waits behind it (in order per job and endpoint).
      const queued = await webhookQueueState(db);
      expect(queued.pending.ready - before.pending.ready).toBe(1);
      expect(queued.pending.waiting - before.pending.waiting).toBe(1);
      expect(queued.endpoints.healthy).toBeGreaterThanOrEqual(1);
      await delivering({}, settled);
      expect((await webhookQueueState(db)).pending).toEqual({ ready: 0, attempting: 0, waiting: 0 });

      // Slots that would poll once a minute: the event's NOTIFY at its commit wakes them (on PGlite too).
      const listen = handle.listen!;
      expect(listen, `${_name} has a listener`).toBeDefined();
      await delivering({ pollMs: 60_000, listen: (onNotify) => listen(OUTBOX_CHANNEL, onNotify) }, async () => {
        await sleep(1_000);
        const seen = rx.seen.length;
        await append(jobId, "ocr.job.succeeded", 1);
        await vi.waitFor(() => expect(rx.seen.length).toBe(seen + 1), { timeout: 10_000, interval: 20 });
        expect(rx.seen.at(-1)!.type).toBe("ocr.job.succeeded");
      });
      expect(endpoint.id).toMatch(/^we_/);
    } finally {
      await rx.close();
    }
  }, 60_000);
});
