/**
 * The webhooks issue's goal, through the real services (docs/webhooks.md):
 * a real edge, the real extraction service (tesseract) and a real jobs
 * worker delivering the outbox, on a Postgres database of this file's own,
 * the retry schedule and the time limit shortened through their variables
 * (FOLIO_WEBHOOK_RETRY_SECONDS, FOLIO_WEBHOOK_TIMEOUT_SECONDS). The receiver
 * (node:http on loopback, let through with FOLIO_FETCH_ALLOW) answers 500 to
 * 30 % of attempts and stalls past the time limit on 10 % (a seeded draw:
 * the same run each time). Three jobs of four pages run at once.
 *
 * Every event of every job is delivered (a progress event may be merged
 * into a newer one instead, never a started or final one), each job's events
 * reach the receiver in `sequence` order (a retry repeats its own), every
 * signature verifies with the `standardwebhooks` package, and every attempt
 * of an event carries the same `webhook-id` and the same body.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { newSecretKey } from "../internal/webhooks/index.ts";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { call, jobsStack } from "./harness.ts";
import { closeServer, seeded } from "./support.ts";

const PDF = readFileSync(join(import.meta.dirname, "fixtures", "ocr", "ten-pages.pdf"));
const TIMEOUT_SECONDS = 1;

interface Attempt {
  webhookId: string;
  headers: Record<string, string>;
  body: string;
  event: { id: string; type: string; sequence: number; data: { id: string } };
  answer: "ok" | "500" | "stall";
}


let server: Server;
const attempts: Attempt[] = [];
const draw = seeded(23);

/** What the edge and the worker both get: the key that seals endpoint secrets, and the receiver on loopback let through. */
const SHARED = { FOLIO_WEBHOOK_SECRET_KEY: newSecretKey(), FOLIO_FETCH_ALLOW: "127.0.0.1" };
// Registered first, so run last (after-all hooks run the last registered first): the receiver outlives the worker delivering to it.
afterAll(() => closeServer(server));
const stack = jobsStack("webhooks_goal", {
  edgeEnv: SHARED,
  workerEnv: {
    ...SHARED,
    FOLIO_JOB_RANGE_PAGES: "1",
    FOLIO_WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
    FOLIO_WEBHOOK_RETRY_SECONDS: Array(15).fill("0.2").join(","),
  },
});

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const r = draw();
      // The first attempt fails and the third stalls whatever the draw: both kinds are always met.
      const n = attempts.length + 1;
      const answer = n === 1 ? "500" : n === 3 ? "stall" : r < 0.3 ? "500" : r < 0.4 ? "stall" : "ok";
      attempts.push({ webhookId: String(req.headers["webhook-id"]), headers: req.headers as Record<string, string>, body, event: JSON.parse(body) as Attempt["event"], answer });
      if (answer === "ok") res.writeHead(204).end();
      else if (answer === "500") res.writeHead(500).end("try later");
      else setTimeout(() => res.writeHead(204).end(), TIMEOUT_SECONDS * 1000 + 500).unref();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
}, 60_000);

describe("webhooks against a receiver that fails 30 % of attempts and stalls on 10 %", () => {
  it("delivers every event of three concurrent jobs, in sequence order per job, signed, each retry with the same webhook-id", async () => {
    const made = await adminCreateAccount({ db: stack.database.db }, { email: "webhooks-goal@test.invalid", name: "webhooks goal", creditsCents: 10_000 });
    const key = made.api_key.key;
    const endpoint = await call(stack.edge, "POST", "/v1/webhook-endpoints", key, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const wh = new Webhook(endpoint.body.secret as string);
    const jobs = await Promise.all(
      [1, 2, 3].map(async () => {
        const r = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: PDF.toString("base64"), model: "local/tesseract", pages: "1-4" });
        expect(r.status, JSON.stringify(r.body)).toBe(202);
        return r.body.id as string;
      }),
    );
    for (const id of jobs) await vi.waitFor(async () => expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe("succeeded"), { timeout: 180_000, interval: 250 });
    await vi.waitFor(
      async () => expect(await stack.database.db.selectFrom("webhook_deliveries").select(["event_id", "status"]).where("status", "in", ["pending", "failed"]).execute()).toEqual([]),
      { timeout: 120_000, interval: 250 },
    );

    // The receiver's answers were what the test says: failures and stalls among them.
    expect(attempts.filter((a) => a.answer === "500").length).toBeGreaterThan(0);
    expect(attempts.filter((a) => a.answer === "stall").length).toBeGreaterThan(0);

    const deliveries = await stack.database.db.selectFrom("webhook_deliveries").select(["event_id", "status"]).execute();
    const statusOf = new Map(deliveries.map((d) => [d.event_id, d.status]));
    for (const jobId of jobs) {
      const events = await stack.database.db.selectFrom("ocr_job_events").select(["id", "sequence", "type"]).where("job_id", "=", jobId).orderBy("sequence").execute();
      expect(events.map((e) => e.type)).toContain("ocr.job.succeeded");
      for (const e of events) {
        if (e.type === "ocr.job.progress") expect(["delivered", "merged"], `${jobId} ${e.type} #${e.sequence}`).toContain(statusOf.get(e.id));
        else expect(statusOf.get(e.id), `${jobId} ${e.type} #${e.sequence}`).toBe("delivered");
        // Delivered: the receiver answered one of its attempts 2xx in time.
        if (statusOf.get(e.id) === "delivered") expect(attempts.some((a) => a.event.id === e.id && a.answer === "ok"), `${e.type} #${e.sequence} answered ok`).toBe(true);
      }
      // In order: the sequences the receiver saw for this job never go down (a retry repeats its own).
      const seen = attempts.filter((a) => a.event.data.id === jobId).map((a) => a.event.sequence);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
    }
    // Every attempt signed as the receiver checks it; every attempt of an event the same id and body.
    for (const a of attempts) {
      expect(() => wh.verify(a.body, a.headers), `${a.event.type} #${a.event.sequence}`).not.toThrow();
      expect(a.webhookId).toBe(a.event.id);
    }
    const retried = new Map<string, Attempt[]>();
    for (const a of attempts) retried.set(a.webhookId, [...(retried.get(a.webhookId) ?? []), a]);
    expect([...retried.values()].some((xs) => xs.length > 1), "no event was retried").toBe(true);
    for (const xs of retried.values()) expect(new Set(xs.map((x) => x.body)).size).toBe(1);
  }, 300_000);
});
