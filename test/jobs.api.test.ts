/**
 * Durable OCR jobs through the HTTP API (docs/jobs.md): a real edge, a real
 * jobs worker and the real extraction service (tesseract over gRPC), on a
 * Postgres database of this file's own (so no other file's worker takes
 * these jobs' ranges, nor these workers theirs). Submission as JSON and as a
 * streamed multipart upload, the job read back every way (job, pages,
 * result, NDJSON, events resumed with Last-Event-ID), Idempotency-Key, the
 * refusals known at once, cancel, and the money: the ledger equals the
 * pricing rule on the pages read, one usage entry per job, nothing held after.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import { describe, expect, it, vi } from "vitest";
import { Decimal, chargeComponent } from "../internal/billing/index.ts";
import { adminCreateAccount, adminCreateKey } from "../internal/cli/admin/index.ts";
import { cer } from "./cer.ts";
import { call, jobsStack } from "./harness.ts";

const FIXTURES = join(import.meta.dirname, "fixtures", "ocr");
const PDF = readFileSync(join(FIXTURES, "ten-pages.pdf"));
const PNG = readFileSync(join(FIXTURES, "english.png"));
const truth = (n: number) => readFileSync(join(FIXTURES, `ten-pages.page-${n}.txt`), "utf8");
/** local/tesseract's default price: 0.1 cent a page before the fee (docs/billing.md). */
const PAGE_CENTS = new Decimal("0.1");

/** Small limits, to see them hold: a synchronous document (and a job's image) up to 150 kB, a job's PDF upload up to 200 kB. */
const SIZES = { FOLIO_MAX_DOCUMENT_BYTES: "150000", FOLIO_JOB_MAX_BYTES: "200000" };

/** Upstream models' pages go to the OpenRouter test double; a worker reads jobs only in the tests that start one. */
const stack = jobsStack("jobs_api", {
  upstream: true,
  edgeEnv: { FOLIO_JOB_RANGE_PAGES: "3", FOLIO_MAX_PAGES: "4", ...SIZES },
  workerEnv: { FOLIO_JOB_RANGE_PAGES: "3" },
  workerAtStart: false,
});

let uniq = 0;
async function account(cents = 10_000): Promise<{ id: string; key: string }> {
  const a = await adminCreateAccount({ db: stack.database.db }, { email: `jobs-${process.pid}-${++uniq}@test.invalid`, name: "jobs", creditsCents: cents, requestsPerMinute: 10_000 });
  return { id: a.account.id, key: a.api_key.key };
}

async function settled(key: string, id: string, status = "succeeded") {
  await vi.waitFor(async () => expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe(status), { timeout: 120_000, interval: 200 });
  return (await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body;
}

/** The job's debits, its usage entries and the account's money. */
async function money(accountId: string, jobId: string) {
  const { db } = stack.database;
  const debited = await db.selectFrom("ledger_entries").select(sql<string>`coalesce(-sum(amount_cents), 0)`.as("n")).where("request_id", "=", jobId).executeTakeFirstOrThrow();
  const usage = await db.selectFrom("usage_logs").selectAll().where("id", "=", jobId).execute();
  const acc = await db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", accountId).executeTakeFirstOrThrow();
  return { debited: Number(debited.n), usage, balance: Number(acc.balance_cents), held: Number(acc.held_cents) };
}

/** Reads a whole server-sent event stream: the events with their SSE ids. */
async function readEvents(path: string, key: string, lastEventId?: string): Promise<{ sseId: string; type: string; data: { id: string; sequence: number; type: string; data: Record<string, unknown> } }[]> {
  const res = await fetch(stack.edge.url + path, { headers: { authorization: `Bearer ${key}`, ...(lastEventId ? { "last-event-id": lastEventId } : {}) }, signal: AbortSignal.timeout(120_000) });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((block) => block.includes("data: "))
    .map((block) => {
      const field = (name: string) => block.split("\n").find((l) => l.startsWith(`${name}: `))!.slice(name.length + 2);
      return { sseId: field("id"), type: field("event"), data: JSON.parse(field("data")) };
    });
}

describe("durable OCR jobs over HTTP", () => {
  it("reads a PDF longer than the synchronous limit: job, pages, result, NDJSON, events and money agree", async () => {
    await stack.startWorker();
    const { id: accountId, key } = await account();
    // The edge's synchronous limit is 4 pages here: /v1/ocr refuses the document, a job takes it.
    expect((await call(stack.edge, "POST", "/v1/ocr", key, { base64: PDF.toString("base64"), model: "local/tesseract" })).status).toBe(400);
    const created = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: PDF.toString("base64"), model: "local/tesseract", metadata: { case: "A-17" } });
    expect(created.status).toBe(202);
    expect(created.body).toMatchObject({ object: "ocr.job", status: "queued", model: "local/tesseract", page_count: 10, pages_completed: 0, metadata: { case: "A-17" } });
    expect(created.body.id).toMatch(/^job_/);
    expect(created.headers.get("location")).toBe(`/v1/ocr/jobs/${created.body.id}`);
    const id = created.body.id as string;

    const events = await readEvents(`/v1/ocr/jobs/${id}/events`, key);
    expect(events.map((e) => e.data.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.sseId)).toEqual(events.map((e) => String(e.data.sequence)));
    expect(events[0]!.type).toBe("ocr.job.started");
    expect(events.at(-1)!.type).toBe("ocr.job.succeeded");
    expect(events.at(-1)!.data.data).toMatchObject({ status: "succeeded", pages_completed: 10 });
    // Resumed after the first event: the rest, and nothing before.
    const resumed = await readEvents(`/v1/ocr/jobs/${id}/events`, key, "1");
    expect(resumed.map((e) => e.data.sequence)).toEqual(events.slice(1).map((e) => e.data.sequence));
    const byId = await readEvents(`/v1/ocr/jobs/${id}/events`, key, events.at(-2)!.data.id);
    expect(byId.map((e) => e.type)).toEqual(["ocr.job.succeeded"]);

    const job = await settled(key, id);
    expect(job).toMatchObject({ page_count: 10, pages_completed: 10, pages_failed: 0, metadata: { case: "A-17" } });
    expect(job.finished_at).toBeGreaterThanOrEqual(job.started_at);

    const first = await call(stack.edge, "GET", `/v1/ocr/jobs/${id}/pages?limit=4`, key);
    expect(first.body.data.map((p: { page_number: number }) => p.page_number)).toEqual([1, 2, 3, 4]);
    expect(first.body.has_more).toBe(true);
    const last = await call(stack.edge, "GET", `/v1/ocr/jobs/${id}/pages?starting_after=8&limit=4`, key);
    expect(last.body).toMatchObject({ has_more: false });
    expect(last.body.data.map((p: { page_number: number }) => p.page_number)).toEqual([9, 10]);

    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${id}/result`, key);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ id, object: "ocr.result", model: "local/tesseract", usage: { pages_processed: 10 } });
    const pages = result.body.result.pages as { page_number: number; text: string }[];
    expect(pages.map((p) => p.page_number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const p of pages) expect(cer(p.text, truth(p.page_number))).toBeLessThan(0.1);
    expect(result.body.result.text).toBe(pages.map((p) => p.text).join("\n\n"));

    const ndjson = await fetch(`${stack.edge.url}/v1/ocr/jobs/${id}/result?format=ndjson`, { headers: { authorization: `Bearer ${key}` } });
    expect(ndjson.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    const lines = (await ndjson.text()).trim().split("\n").map((l) => JSON.parse(l) as { page: { page_number: number; text: string } });
    expect(lines.map((l) => l.page.text)).toEqual(pages.map((p) => p.text));

    // Money: the pricing rule on ten pages, once; one usage entry (id: the job); nothing held.
    const m = await money(accountId, id);
    const expected = chargeComponent(PAGE_CENTS.mul(10)).chargedCents;
    expect(m.debited).toBe(expected);
    expect(job.usage.total_cost_cents).toBe(expected);
    expect(m.usage).toHaveLength(1);
    expect(m.usage[0]).toMatchObject({ endpoint: "/v1/ocr/jobs", status: "success", pages_processed: 10, cost_cents: String(expected) });
    expect(m).toMatchObject({ balance: 10_000 - expected, held: 0 });
  }, 180_000);

  it("takes a multipart upload streamed to disk, with a page selection and metadata as a form field", async () => {
    await stack.startWorker();
    const { key } = await account();
    const form = new FormData();
    form.set("file", new Blob([PDF], { type: "application/pdf" }), "ten-pages.pdf");
    form.set("model", "local/tesseract");
    form.set("pages", "2-4,9");
    form.set("metadata", JSON.stringify({ batch: "7" }));
    const res = await fetch(`${stack.edge.url}/v1/ocr/jobs`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
    const created = (await res.json()) as { id: string; page_count: number; metadata: Record<string, string> };
    expect(res.status).toBe(202);
    expect(created).toMatchObject({ page_count: 4, metadata: { batch: "7" } });
    await settled(key, created.id);
    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${created.id}/result`, key);
    const pages = result.body.result.pages as { page_number: number; text: string }[];
    expect(pages.map((p) => p.page_number)).toEqual([2, 3, 4, 9]);
    for (const p of pages) expect(cer(p.text, truth(p.page_number))).toBeLessThan(0.1);
  }, 180_000);

  it("sends an upstream model a PDF job's pages as PNG, as /v1/ocr does, and bills the reported cost", async () => {
    await stack.startWorker();
    const { id: accountId, key } = await account();
    const upstream = stack.upstream!;
    upstream.script("openai/gpt-4.1-mini", { kind: "text", text: "Hello from the model" }, { times: 3 });
    const before = upstream.chatRequests().length;
    const created = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: PDF.toString("base64"), model: "openai/gpt-4.1-mini", pages: "1-3" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const job = await settled(key, created.body.id);
    expect(job).toMatchObject({ pages_completed: 3, model: "openai/gpt-4.1-mini" });
    const sent = upstream.chatRequests().slice(before);
    expect(sent).toHaveLength(3);
    for (const r of sent) expect(JSON.stringify(r.body)).toContain("data:image/png;base64,");
    expect(job.usage.prompt_tokens).toBeGreaterThan(0);
    expect(job.usage.total_cost_cents).toBe(Math.max(1, Math.ceil(job.usage.provider_cost_cents * 1.05 - 1e-9)));
    expect((await money(accountId, created.body.id)).debited).toBe(job.usage.total_cost_cents);
  }, 120_000);

  it("bounds uploads: a PDF by the job limit, an image (read whole) by the synchronous one, each a 413 naming it", async () => {
    const { id: accountId, key } = await account();
    const upload = async (bytes: Buffer, name: string, type: string) => {
      const form = new FormData();
      form.set("file", new Blob([bytes], { type }), name);
      form.set("model", "local/tesseract");
      const res = await fetch(`${stack.edge.url}/v1/ocr/jobs`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form });
      return { status: res.status, body: (await res.json()) as { error: { code: string; message: string; param?: string; max_bytes?: number } } };
    };
    // Bytes after a PNG's end or a PDF's trailer leave each what it is.
    const bigPdf = await upload(Buffer.concat([PDF, Buffer.alloc(200_000, 0x20)]), "big.pdf", "application/pdf");
    expect(bigPdf.status).toBe(413);
    expect(bigPdf.body.error).toMatchObject({ code: "payload_too_large", param: "file", max_bytes: 200_000 });
    const bigImage = await upload(Buffer.concat([PNG, Buffer.alloc(40_000)]), "big.png", "image/png");
    expect(bigImage.status).toBe(413);
    expect(bigImage.body.error).toMatchObject({ code: "payload_too_large", param: "file", max_bytes: 150_000 });
    expect(bigImage.body.error.message).toMatch(/read whole/);
    const jobs = await stack.database.db.selectFrom("ocr_jobs").select("id").where("account_id", "=", accountId).execute();
    expect(jobs).toEqual([]);
  });

  it("reads an image as a one-page job", async () => {
    await stack.startWorker();
    const { key } = await account();
    const created = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: PNG.toString("base64"), model: "local/tesseract" });
    expect(created.body).toMatchObject({ page_count: 1 });
    await settled(key, created.body.id);
    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${created.body.id}/result`, key);
    expect(cer(result.body.result.text, readFileSync(join(FIXTURES, "english.txt"), "utf8"))).toBeLessThan(0.1);
  }, 120_000);

  it("lists each page with its tables while the job runs, the same tables the result has", async () => {
    await stack.startWorker();
    const { key } = await account();
    const table = readFileSync(join(FIXTURES, "table.png"));
    const created = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: table.toString("base64"), model: "local/tesseract", options: { extract_tables: true } });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    await settled(key, created.body.id);
    const listed = await call(stack.edge, "GET", `/v1/ocr/jobs/${created.body.id}/pages`, key);
    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${created.body.id}/result`, key);
    expect(result.body.result.tables.length).toBeGreaterThan(0);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0].tables).toEqual(result.body.result.tables);
    expect(JSON.stringify(listed.body.data[0].tables)).toMatch(/Toner cartridge/);
  }, 120_000);

  it("gives the same job for the same Idempotency-Key and body, and a 422 for another body", async () => {
    const { key } = await account();
    const body = { base64: PNG.toString("base64"), model: "local/tesseract", metadata: { n: "1" } };
    const headers = { "idempotency-key": `jobs-${process.pid}-${Date.now()}` };
    const a = await call(stack.edge, "POST", "/v1/ocr/jobs", key, body, { headers });
    const b = await call(stack.edge, "POST", "/v1/ocr/jobs", key, body, { headers });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(b.body.id).toBe(a.body.id);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    const other = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { ...body, metadata: { n: "2" } }, { headers });
    expect(other.status).toBe(422);
    const jobs = await stack.database.db.selectFrom("ocr_jobs").select("id").where(sql<boolean>`metadata @> '{"n":"1"}'::jsonb`).execute();
    expect(jobs.map((j) => j.id)).toEqual([a.body.id]);
  });

  it("refuses at once what can be known at once, with /v1/ocr's codes, and writes nothing", async () => {
    const { id: accountId, key } = await account();
    const post = (body: unknown) => call(stack.edge, "POST", "/v1/ocr/jobs", key, body);
    expect((await post({ base64: "not base64!!", model: "local/tesseract" })).body.error).toMatchObject({ code: "invalid_request", param: "base64" });
    expect((await post({ base64: Buffer.from("GIF89a\u0001\u0000\u0001\u0000").toString("base64") + "x", model: "local/tesseract" })).status).toBe(400);
    expect((await post({ base64: Buffer.from("PK\u0003\u0004 not really a zip").toString("base64") })).body.error.code).toBe("unsupported_format");
    expect((await post({ base64: PNG.toString("base64"), model: "nobody/no-such-model" })).body.error.code).toBe("unsupported_model");
    expect((await post({ base64: PDF.toString("base64"), pages: "11", model: "local/tesseract" })).body.error).toMatchObject({ code: "invalid_request", param: "pages" });
    // An office document needs the conversion service, which this edge was not given.
    const docx = readFileSync(join(import.meta.dirname, "fixtures", "convert", "one-page.docx"));
    expect((await post({ base64: docx.toString("base64"), model: "local/tesseract" })).body.error.code).toBe("conversion_not_available");
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
    expect((await post({ base64: PNG.toString("base64"), metadata: many })).body.error.code).toBe("invalid_request");
    expect((await post({ base64: PNG.toString("base64"), metadata: { k: 1 } })).body.error.code).toBe("invalid_request");
    const poor = await account(0);
    const refused = await call(stack.edge, "POST", "/v1/ocr/jobs", poor.key, { base64: PDF.toString("base64"), model: "local/tesseract" });
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe("insufficient_credits");
    const left = await stack.database.db.selectFrom("ocr_jobs").select("id").where("account_id", "in", [accountId, poor.id]).execute();
    expect(left).toEqual([]);
    expect((await stack.database.db.selectFrom("holds").select("id").where("account_id", "=", poor.id).execute()).length).toBe(0);
  });

  it("cancels a queued job: nothing read is charged, the hold goes back, the result is a 409; another account sees a 404", async () => {
    // No worker runs during this test: the job stays queued until cancelled.
    await stack.stopWorker();
    const { id: accountId, key } = await account();
    const created = await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: PDF.toString("base64"), model: "local/tesseract" });
    expect((await money(accountId, created.body.id)).held).toBeGreaterThan(0);
    // The event stream answers its head at once, before the job has any event (the keep-alive is 15 s away).
    const following = fetch(`${stack.edge.url}/v1/ocr/jobs/${created.body.id}/events`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(120_000) });
    const head = await Promise.race([following, new Promise<"no head">((r) => setTimeout(() => r("no head"), 5_000))]);
    expect(head === "no head" ? head : head.status).toBe(200);
    const stranger = await account();
    expect((await call(stack.edge, "GET", `/v1/ocr/jobs/${created.body.id}`, stranger.key)).status).toBe(404);
    expect((await call(stack.edge, "POST", `/v1/ocr/jobs/${created.body.id}/cancel`, stranger.key)).status).toBe(404);
    const cancelled = await call(stack.edge, "POST", `/v1/ocr/jobs/${created.body.id}/cancel`, key);
    expect(cancelled.body).toMatchObject({ status: "cancelled", pages_completed: 0 });
    const again = await call(stack.edge, "POST", `/v1/ocr/jobs/${created.body.id}/cancel`, key);
    expect(again.body).toMatchObject({ status: "cancelled", finished_at: cancelled.body.finished_at });
    const result = await call(stack.edge, "GET", `/v1/ocr/jobs/${created.body.id}/result`, key);
    expect(result.status).toBe(409);
    expect(result.body.error).toMatchObject({ code: "job_not_finished", status: "cancelled" });
    const m = await money(accountId, created.body.id);
    expect(m).toMatchObject({ debited: 0, held: 0, balance: 10_000 });
    expect(m.usage[0]).toMatchObject({ status: "error", error_code: "cancelled", pages_processed: 0 });
    const events = await readEvents(`/v1/ocr/jobs/${created.body.id}/events`, key);
    expect(events.map((e) => e.type)).toEqual(["ocr.job.cancelled"]);
    // The stream opened before the cancel got the final event, and ended with it.
    expect(await (await following).text()).toContain("event: ocr.job.cancelled");
  });

  it("states every job route in the OpenAPI document", async () => {
    const doc = await call(stack.edge, "GET", "/v1/openapi.json");
    const paths = Object.keys(doc.body.paths as Record<string, unknown>);
    for (const p of ["/v1/ocr/jobs", "/v1/ocr/jobs/{id}", "/v1/ocr/jobs/{id}/pages", "/v1/ocr/jobs/{id}/result", "/v1/ocr/jobs/{id}/events", "/v1/ocr/jobs/{id}/cancel"]) expect(paths).toContain(p);
    const create = doc.body.paths["/v1/ocr/jobs"].post;
    expect(Object.keys(create.requestBody.content).sort()).toEqual(["application/json", "multipart/form-data"]);
    expect(Object.keys(create.responses)).toContain("202");
  });

  it("lists the account's jobs newest first, by status, a page at a time", async () => {
    const { key } = await account();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await call(stack.edge, "POST", "/v1/ocr/jobs", key, { base64: PNG.toString("base64"), model: "local/tesseract" })).body.id);
    await call(stack.edge, "POST", `/v1/ocr/jobs/${ids[1]}/cancel`, key);
    const all = await call(stack.edge, "GET", "/v1/ocr/jobs?limit=2", key);
    expect(all.body.data.map((j: { id: string }) => j.id)).toEqual([ids[2], ids[1]]);
    expect(all.body.has_more).toBe(true);
    const next = await call(stack.edge, "GET", `/v1/ocr/jobs?limit=2&starting_after=${ids[1]}`, key);
    expect(next.body).toMatchObject({ has_more: false });
    expect(next.body.data.map((j: { id: string }) => j.id)).toEqual([ids[0]]);
    const cancelled = await call(stack.edge, "GET", "/v1/ocr/jobs?status=cancelled", key);
    expect(cancelled.body.data.map((j: { id: string }) => j.id)).toEqual([ids[1]]);
    const keyOnly = await adminCreateKey({ db: stack.database.db }, { accountId: (await stack.database.db.selectFrom("ocr_jobs").select("account_id").where("id", "=", ids[0]!).executeTakeFirstOrThrow()).account_id, permissions: ["usage:read"] });
    expect((await call(stack.edge, "GET", "/v1/ocr/jobs", keyOnly.key)).status).toBe(403);
  });
});
