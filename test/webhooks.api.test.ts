/**
 * Webhooks through the HTTP API (docs/webhooks.md): a real edge, a real jobs
 * worker delivering the outbox and the real extraction service (tesseract),
 * on a Postgres database of this file's own; a real receiver (node:http on
 * loopback, let through with FOLIO_FETCH_ALLOW) that checks every delivery
 * with the `standardwebhooks` package, as receivers do. Endpoints are made,
 * read (never their secret), changed, refused when their URL or events are
 * wrong, rotated and deleted; a job's events arrive signed and in order;
 * attempts are listed; an event is sent again with its webhook-id; a test
 * event is sent.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { newSecretKey } from "../internal/webhooks/index.ts";
import { adminCreateAccount, adminCreateKey } from "../internal/cli/admin/index.ts";
import { call, jobsStack, startTestEdge } from "./harness.ts";
import { closeServer } from "./support.ts";

const PNG = readFileSync(join(import.meta.dirname, "fixtures", "ocr", "english.png"));

interface Received {
  headers: Record<string, string>;
  body: string;
  event: { id: string; type: string; sequence: number; created_at: number; data: { id?: string; status?: string } };
}

let server: Server;
let receiverUrl: string;
const received: Received[] = [];
let admin: string;
let accountId: string;
const KEY = newSecretKey();

/** What the edge and the worker both get: the key that seals endpoint secrets, and the receiver on loopback let through. */
const SHARED = { FOLIO_WEBHOOK_SECRET_KEY: KEY, FOLIO_FETCH_ALLOW: "127.0.0.1" };
// Registered first, so run last (after-all hooks run the last registered first): the receiver outlives the worker delivering to it.
afterAll(() => closeServer(server));
const stack = jobsStack("webhooks_api", {
  edgeEnv: SHARED,
  workerEnv: { ...SHARED, FOLIO_WEBHOOK_POLL_SECONDS: "0.05", FOLIO_WEBHOOK_RETRY_SECONDS: "0.1,0.1" },
});

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ headers: req.headers as Record<string, string>, body, event: JSON.parse(body) as Received["event"] });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/folio`;
  const made = await adminCreateAccount({ db: stack.database.db }, { email: "webhooks@test.invalid", name: "webhooks", creditsCents: 10_000 });
  admin = made.api_key.key;
  accountId = made.account.id;
}, 60_000);

const verifies = (secret: string, r: Received) => {
  try {
    new Webhook(secret).verify(r.body, r.headers);
    return true;
  } catch {
    return false;
  }
};

describe("webhook endpoints", () => {
  let endpointId = "";
  let secret = "";

  it("makes an endpoint and shows its secret once; reads and lists it without the secret", async () => {
    const made = await call(stack.edge, "POST", "/v1/webhook-endpoints", admin, { url: receiverUrl, description: "local receiver" });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ object: "webhook_endpoint", url: receiverUrl, events: ["*"], description: "local receiver", disabled: false, disabled_reason: null });
    expect(made.body.id).toMatch(/^we_/);
    expect(made.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(made.headers.get("location")).toBe(`/v1/webhook-endpoints/${made.body.id}`);
    endpointId = made.body.id;
    secret = made.body.secret;
    const read = await call(stack.edge, "GET", `/v1/webhook-endpoints/${endpointId}`, admin);
    expect(read.status).toBe(200);
    expect(read.body.secret).toBeUndefined();
    expect(JSON.stringify(read.body)).not.toContain(secret.slice(6, 20));
    const list = await call(stack.edge, "GET", "/v1/webhook-endpoints", admin);
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([endpointId]);
    // The database holds it sealed.
    const row = await stack.database.db.selectFrom("webhook_endpoints").select("secret").where("id", "=", endpointId).executeTakeFirstOrThrow();
    expect(row.secret).not.toContain(secret.slice(6));
  });

  it("refuses a private address, a scheme other than http(s), an unknown event type, and a key without the webhook permissions", async () => {
    const privateUrl = await call(stack.edge, "POST", "/v1/webhook-endpoints", admin, { url: "http://10.1.2.3/hook" });
    expect(privateUrl.status).toBe(400);
    expect(privateUrl.body.error).toMatchObject({ code: "invalid_request", param: "url" });
    expect(privateUrl.body.error.message).toMatch(/private/);
    const ftp = await call(stack.edge, "POST", "/v1/webhook-endpoints", admin, { url: "ftp://example.com/hook" });
    expect(ftp.status).toBe(400);
    expect(ftp.body.error.param).toBe("url");
    const events = await call(stack.edge, "POST", "/v1/webhook-endpoints", admin, { url: receiverUrl, events: ["ocr.job.finished"] });
    expect(events.status).toBe(400);
    expect(JSON.stringify(events.body.error)).toMatch(/events/);
    const narrow = await adminCreateKey({ db: stack.database.db }, { accountId, name: "reader", permissions: ["admin", "webhooks:read"] });
    const denied = await call(stack.edge, "POST", "/v1/webhook-endpoints", narrow.key, { url: receiverUrl });
    expect(denied.status).toBe(403);
    expect(denied.body.error.missing_permissions).toEqual(["webhooks:write"]);
    expect((await call(stack.edge, "GET", "/v1/webhook-endpoints", narrow.key)).status).toBe(200);
    // Another account's key does not see this account's endpoint.
    const other = await adminCreateAccount({ db: stack.database.db }, { email: "other@test.invalid", name: "other", creditsCents: 0 });
    expect((await call(stack.edge, "GET", `/v1/webhook-endpoints/${endpointId}`, other.api_key.key)).status).toBe(404);
  });

  it("delivers a job's events in order, signed, with the job and no page text; lists the attempts", async () => {
    const job = await call(stack.edge, "POST", "/v1/ocr/jobs", admin, { base64: PNG.toString("base64"), mime_type: "image/png", model: "local/tesseract" });
    expect(job.status).toBe(202);
    const jobId = job.body.id as string;
    await vi.waitFor(() => expect(received.some((r) => r.event.type === "ocr.job.succeeded" && r.event.data.id === jobId)).toBe(true), { timeout: 60_000, interval: 50 });
    const mine = received.filter((r) => r.event.data.id === jobId);
    expect(mine[0]!.event.type).toBe("ocr.job.started");
    const sequences = mine.map((r) => r.event.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    for (const r of mine) {
      expect(verifies(secret, r), `${r.event.type} verifies`).toBe(true);
      expect(r.headers["webhook-id"]).toBe(r.event.id);
    }
    // The same events as the job's own stream, field for field.
    const stream = await fetch(`${stack.edge.url}/v1/ocr/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${admin}` } }).then((r) => r.text());
    for (const r of mine) expect(stream).toContain(JSON.stringify(r.event));
    // No page text in a body: the receiver reads pages with its key.
    const pages = await call(stack.edge, "GET", `/v1/ocr/jobs/${jobId}/pages`, admin);
    const words = (pages.body.data[0].text as string).split(/\s+/).filter((w) => w.length > 6);
    expect(words.length).toBeGreaterThan(3);
    for (const r of mine) for (const w of words) expect(r.body).not.toContain(w);
    const attempts = await call(stack.edge, "GET", `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, admin);
    expect(attempts.status).toBe(200);
    const listed = attempts.body.data.filter((a: { event_id: string }) => mine.some((r) => r.event.id === a.event_id));
    expect(listed).toHaveLength(mine.length);
    expect(listed.every((a: { http_status: number; attempt: number; object: string }) => a.http_status === 204 && a.attempt === 1 && a.object === "webhook_attempt")).toBe(true);
  }, 90_000);

  it("sends a test event, sends an event again with the same webhook-id, and signs with both secrets after a rotation", async () => {
    const before = received.length;
    const test = await call(stack.edge, "POST", `/v1/webhook-endpoints/${endpointId}/test`, admin);
    expect(test.status).toBe(202);
    await vi.waitFor(() => expect(received.length).toBe(before + 1), { timeout: 10_000, interval: 20 });
    const got = received.at(-1)!;
    expect(got.event).toMatchObject({ id: test.body.event_id, type: "webhook.test", data: { endpoint_id: endpointId } });
    expect(verifies(secret, got)).toBe(true);

    const again = await call(stack.edge, "POST", `/v1/webhook-endpoints/${endpointId}/events/${got.event.id}/redeliver`, admin);
    expect(again.status).toBe(202);
    await vi.waitFor(() => expect(received.length).toBe(before + 2), { timeout: 10_000, interval: 20 });
    expect(received.at(-1)!.headers["webhook-id"]).toBe(got.event.id);
    expect(received.at(-1)!.body).toBe(got.body);
    expect((await call(stack.edge, "POST", `/v1/webhook-endpoints/${endpointId}/events/evt_never/redeliver`, admin)).status).toBe(404);

    const rotated = await call(stack.edge, "POST", `/v1/webhook-endpoints/${endpointId}/rotate-secret`, admin);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(secret);
    expect(rotated.body.previous_secret_expires_at).toBeGreaterThan(Date.now() / 1000 + 86_000);
    await call(stack.edge, "POST", `/v1/webhook-endpoints/${endpointId}/test`, admin);
    await vi.waitFor(() => expect(received.length).toBe(before + 3), { timeout: 10_000, interval: 20 });
    const both = received.at(-1)!;
    expect(both.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(verifies(rotated.body.secret, both)).toBe(true);
    expect(verifies(secret, both)).toBe(true);
  }, 60_000);

  it("changes and disables an endpoint (nothing is queued for a disabled one), and deletes it", async () => {
    const changed = await call(stack.edge, "PATCH", `/v1/webhook-endpoints/${endpointId}`, admin, { events: ["ocr.job.succeeded", "ocr.job.failed"], description: null, disabled: true });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ events: ["ocr.job.failed", "ocr.job.succeeded"], description: null, disabled: true });
    expect((await call(stack.edge, "PATCH", `/v1/webhook-endpoints/${endpointId}`, admin, { url: "http://169.254.169.254/latest" })).status).toBe(400);
    const queued = await stack.database.db.selectFrom("webhook_deliveries").select("id").where("endpoint_id", "=", endpointId).execute();
    const job = await call(stack.edge, "POST", "/v1/ocr/jobs", admin, { base64: PNG.toString("base64"), mime_type: "image/png", model: "local/tesseract" });
    await vi.waitFor(async () => expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${job.body.id}`, admin)).body.status).toBe("succeeded"), { timeout: 60_000, interval: 100 });
    expect(await stack.database.db.selectFrom("webhook_deliveries").select("id").where("endpoint_id", "=", endpointId).execute()).toHaveLength(queued.length);
    const deleted = await call(stack.edge, "DELETE", `/v1/webhook-endpoints/${endpointId}`, admin);
    expect(deleted.body).toEqual({ id: endpointId, object: "webhook_endpoint", deleted: true });
    expect((await call(stack.edge, "GET", `/v1/webhook-endpoints/${endpointId}`, admin)).status).toBe(404);
  }, 90_000);
});

describe("the OpenAPI document", () => {
  it("states every webhook route with its permissions' answers", async () => {
    const doc = await call(stack.edge, "GET", "/v1/openapi.json");
    const paths = doc.body.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    const want: [string, string, string][] = [
      ["/v1/webhook-endpoints", "post", "201"],
      ["/v1/webhook-endpoints", "get", "200"],
      ["/v1/webhook-endpoints/{id}", "get", "200"],
      ["/v1/webhook-endpoints/{id}", "patch", "200"],
      ["/v1/webhook-endpoints/{id}", "delete", "200"],
      ["/v1/webhook-endpoints/{id}/rotate-secret", "post", "200"],
      ["/v1/webhook-endpoints/{id}/deliveries", "get", "200"],
      ["/v1/webhook-endpoints/{id}/events/{event_id}/redeliver", "post", "202"],
      ["/v1/webhook-endpoints/{id}/test", "post", "202"],
    ];
    for (const [path, method, status] of want) {
      expect(Object.keys(paths[path]?.[method]?.responses ?? {}), `${method} ${path}`).toEqual(expect.arrayContaining([status, "403"]));
    }
  });
});

describe("without FOLIO_WEBHOOK_SECRET_KEY on Postgres", () => {
  it("the endpoints API answers 503 naming the variable", async () => {
    const bare = await startTestEdge({ env: { DATABASE_URL: stack.database.url } });
    try {
      const r = await call(bare, "POST", "/v1/webhook-endpoints", admin, { url: receiverUrl });
      expect(r.status).toBe(503);
      expect(r.body.error.message).toMatch(/FOLIO_WEBHOOK_SECRET_KEY/);
    } finally {
      await bare.close();
    }
  });
});
