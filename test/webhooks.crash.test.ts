/**
 * Webhook deliveries survive SIGKILL of every Folio process (issue 23,
 * docs/webhooks.md): an edge, an extraction service and a worker run as real
 * `folio` processes against a Postgres database of this file's own, with a
 * real HTTP receiver on this machine. The receiver first holds every
 * delivery without answering; in the middle of a job, while it holds one,
 * every Folio process is SIGKILLed (no shutdown runs), the receiver turns
 * healthy, and all are started again. Then every event of the job reaches
 * the receiver (a progress event only may be merged into a newer one) in
 * `sequence` order, each signature verifies with the `standardwebhooks`
 * package, and the delivery held at the kill is sent again with the same
 * `webhook-id`. Nothing is left pending, nothing is given up.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import { sql } from "kysely";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { migrateToLatest, type DatabaseHandle } from "../internal/platform/db/index.ts";
import { newSecretKey } from "../internal/webhooks/index.ts";
import { startFolio, type FolioProcess } from "./folio-processes.ts";
import { call, privateDatabase } from "./harness.ts";
import { freePort } from "./support.ts";

const PDF = readFileSync(join(import.meta.dirname, "fixtures", "ocr", "ten-pages.pdf"));
const KEY = newSecretKey();

interface Received {
  id: string;
  headers: Record<string, string>;
  body: string;
  /** Answered 2xx (false: held until the connection died). */
  answered: boolean;
}

let database: DatabaseHandle & { url: string };
let running: FolioProcess[] = [];
let receiver: Server;
let healthy = false;
const received: Received[] = [];
const held = new Set<ServerResponse>();
const ports = { edge: 0, extraction: 0, extractionMetrics: 0, worker: 0, receiver: 0 };

function receive(req: IncomingMessage, res: ServerResponse): void {
  let body = "";
  req.on("data", (d: Buffer) => (body += d.toString()));
  req.on("end", () => {
    const entry: Received = { id: String(req.headers["webhook-id"]), headers: req.headers as Record<string, string>, body, answered: healthy };
    received.push(entry);
    if (healthy) res.writeHead(204).end();
    else {
      held.add(res);
      res.on("close", () => held.delete(res));
    }
  });
}

async function startAll(): Promise<void> {
  const base = { DATABASE_URL: database.url, FOLIO_WEBHOOK_SECRET_KEY: KEY, FOLIO_FETCH_ALLOW: "127.0.0.1" };
  const extraction = await startFolio(
    "extraction",
    { FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: String(ports.extraction), FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(ports.extractionMetrics) },
    `http://127.0.0.1:${ports.extractionMetrics}/metrics`,
  );
  const address = `127.0.0.1:${ports.extraction}`;
  const [edge, worker] = await Promise.all([
    startFolio(
      "edge",
      { ...base, FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_HTTP_PORT: String(ports.edge), FOLIO_METRICS_ENABLED: "false", FOLIO_EXTRACTION_ADDRESS: address, FOLIO_AUTH_FAILURES_PER_MINUTE: "0" },
      `http://127.0.0.1:${ports.edge}/healthz`,
    ),
    startFolio(
      "worker",
      {
        ...base,
        FOLIO_EXTRACTION_ADDRESS: address,
        FOLIO_METRICS_HOST: "127.0.0.1",
        FOLIO_METRICS_PORT: String(ports.worker),
        FOLIO_JOB_RANGE_PAGES: "2",
        FOLIO_WORKER_CONCURRENCY: "1",
        FOLIO_WORKER_POLL_SECONDS: "0.1",
        // A held attempt times out after 5 s and is tried again a second later; its lease
        // (timeout + 10 s) is what a restarted worker waits for.
        FOLIO_WEBHOOK_TIMEOUT_SECONDS: "5",
        FOLIO_WEBHOOK_RETRY_SECONDS: "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
        FOLIO_WEBHOOK_POLL_SECONDS: "0.1",
      },
      `http://127.0.0.1:${ports.worker}/metrics`,
    ),
  ]);
  running = [extraction, edge, worker];
}

beforeAll(async () => {
  database = await privateDatabase("webhooks_crash");
  await migrateToLatest(database.db);
  receiver = createServer(receive);
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  ports.receiver = (receiver.address() as { port: number }).port;
  ports.edge = await freePort();
  ports.extraction = await freePort();
  ports.extractionMetrics = await freePort();
  ports.worker = await freePort();
}, 60_000);
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  for (const res of held) res.destroy();
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
  await database?.close();
});

describe("webhook deliveries through SIGKILL of every process", () => {
  it("delivers every event of the job after a restart, in order, signed, the interrupted one again with the same webhook-id", async () => {
    await startAll();
    const edge = { url: `http://127.0.0.1:${ports.edge}` };
    const made = await adminCreateAccount({ db: database.db }, { email: `hooks-crash-${process.pid}@test.invalid`, name: "hooks crash", creditsCents: 10_000, requestsPerMinute: 10_000 });
    const key = made.api_key.key;
    const endpoint = await call(edge, "POST", "/v1/webhook-endpoints", key, { url: `http://127.0.0.1:${ports.receiver}/hooks` });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const secret = endpoint.body.secret as string;
    const created = await call(edge, "POST", "/v1/ocr/jobs", key, { base64: PDF.toString("base64"), model: "local/tesseract" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;

    // Mid-job, with an attempt held open by the receiver.
    const stored = async () => Number((await database.db.selectFrom("ocr_job_pages").select(sql<string>`count(*)`.as("n")).where("job_id", "=", id).executeTakeFirstOrThrow()).n);
    await vi.waitFor(async () => {
      expect(await stored()).toBeGreaterThanOrEqual(2);
      expect(held.size).toBeGreaterThan(0);
    }, { timeout: 120_000, interval: 20 });
    await Promise.all(running.map((p) => p.kill()));
    const heldAtKill = received.filter((r) => !r.answered).map((r) => r.id);
    expect(heldAtKill.length, "no delivery was attempted before the kill").toBeGreaterThan(0);
    const interrupted = heldAtKill.at(-1)!;
    const pendingAtKill = await database.db.selectFrom("webhook_deliveries").select(["event_id", "lease_owner"]).where("status", "=", "pending").execute();
    expect(pendingAtKill.map((d) => d.event_id)).toContain(interrupted);
    expect(await stored(), "the job was over before the kill: the test proves less than it says").toBeLessThan(10);

    healthy = true;
    await startAll();
    await vi.waitFor(async () => expect((await call(edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe("succeeded"), { timeout: 180_000, interval: 250 });
    const finished = async () =>
      (await database.db.selectFrom("webhook_deliveries").select(["event_id", "status"]).where("job_id", "=", id).execute()).filter((d) => d.status === "pending" || d.status === "failed");
    await vi.waitFor(async () => expect(await finished()).toEqual([]), { timeout: 60_000, interval: 250 });

    // Every event of the job: delivered, or (progress only) merged into a newer one.
    const events = await database.db.selectFrom("ocr_job_events").select(["id", "sequence", "type"]).where("job_id", "=", id).orderBy("sequence").execute();
    const deliveries = await database.db.selectFrom("webhook_deliveries").select(["event_id", "status"]).where("job_id", "=", id).execute();
    const statusOf = new Map(deliveries.map((d) => [d.event_id, d.status]));
    for (const e of events) {
      const status = statusOf.get(e.id);
      if (e.type === "ocr.job.progress") expect(["delivered", "merged"], `${e.type} #${e.sequence}`).toContain(status);
      else expect(status, `${e.type} #${e.sequence}`).toBe("delivered");
    }
    const answered = received.filter((r) => r.answered);
    for (const e of events.filter((e) => statusOf.get(e.id) === "delivered")) expect(answered.map((r) => r.id), `${e.type} #${e.sequence} reached the receiver`).toContain(e.id);
    expect(answered.map((r) => (JSON.parse(r.body) as { type: string }).type)).toContain("ocr.job.succeeded");

    // In sequence order, each verified with standardwebhooks; the interrupted one sent again under its id.
    const sequences = answered.map((r) => (JSON.parse(r.body) as { sequence: number }).sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    const wh = new Webhook(secret);
    for (const r of received) expect(() => wh.verify(r.body, r.headers), r.id).not.toThrow();
    expect(answered.map((r) => r.id)).toContain(interrupted);
    for (const r of answered.filter((r) => r.id === interrupted)) expect(r.body).toBe(received.find((x) => x.id === interrupted)!.body);
    const attempts = await database.db.selectFrom("webhook_attempts").select("attempt").where("event_id", "=", interrupted).execute();
    expect(attempts.some((a) => a.attempt >= 2), "the interrupted delivery's attempt after the restart is not numbered after the one held").toBe(true);
  }, 400_000);
});
