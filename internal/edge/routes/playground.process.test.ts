/**
 * POST /v1/playground/process end to end: multipart and JSON bodies, the
 * NDJSON progress stream, page images, timings and the cost breakdown, with
 * billing and usage logs in real Postgres, real tesseract, real runsc
 * conversion, and the fake OpenRouter upstream (a test double) for tables and
 * a mid-request 402. Also: the multipart parser stays scoped to this route.
 */
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceOf, call, createTestAccount, createTestKey, startStack, usageRows, type TestStack } from "../../../test/harness.ts";
import { startFakeUpstream, type FakeUpstream } from "../../../test/fake-upstream.ts";
import { cer } from "../../../test/cer.ts";
import { pngInfo } from "../../sandbox/testdocs.ts";
import { streamPdfPages } from "../../documents/index.ts";
import { parsePgm } from "../../formats/index.ts";
import { PLAYGROUND_PATH } from "./playground.process.ts";

const fixture = (path: string) => readFileSync(new URL(`../../../test/fixtures/${path}`, import.meta.url));
const ENGLISH = fixture("ocr/english.png");
const DOCX = fixture("convert/two-pages.docx");
const PDF = fixture("ocr/multipage.pdf");
const SUPPORTED = ["PNG", "JPEG", "WEBP", "TIFF", "GIF", "PDF", "DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"];

let upstream: FakeUpstream;
let stack: TestStack;
/** A stack whose edge accepts documents of at most 2 KiB. */
let small: TestStack;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  stack = await startStack({ upstream, conversion: { FOLIO_SANDBOX: "runsc" } });
  small = await startStack({ edgeEnv: { FOLIO_MAX_DOCUMENT_BYTES: "2048" } });
});
afterAll(async () => {
  await stack?.close();
  await small?.close();
  await upstream?.close();
});

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** Sends a multipart form: `file` as a file part (when given) and text fields. */
async function upload(edge: { url: string }, key: string | undefined, file: { bytes: Buffer; name: string; type?: string } | null, fields: Record<string, string> = {}, accept?: string): Promise<Answer> {
  const form = new FormData();
  if (file) form.append("file", new Blob([new Uint8Array(file.bytes)], { type: file.type ?? "application/octet-stream" }), file.name);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const headers: Record<string, string> = {};
  if (key) headers.authorization = `Bearer ${key}`;
  if (accept) headers.accept = accept;
  const res = await fetch(edge.url + PLAYGROUND_PATH, { method: "POST", headers, body: form });
  return answer(res);
}

async function postJson(edge: { url: string }, key: string, body: unknown, accept?: string): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  if (accept) headers.accept = accept;
  return answer(await fetch(edge.url + PLAYGROUND_PATH, { method: "POST", headers, body: JSON.stringify(body) }));
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* NDJSON or not JSON: keep the text */
  }
  return { status: res.status, headers: res.headers, text, body };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const events = (text: string): any[] => text.trim().split("\n").map((l) => JSON.parse(l) as unknown);
const show = (a: Answer) => `${a.status} ${a.text.slice(0, 600)}`;

describe("POST /v1/playground/process", () => {
  it("reads an uploaded PNG with tesseract: text, the page image as received, timings and cost, billed and logged under this endpoint", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await upload(stack.edge, acc.adminKey, { bytes: ENGLISH, name: "english.png", type: "image/png" }, { model: "local/tesseract" });
    expect(r.status, show(r)).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    const b = r.body;
    expect(b).toMatchObject({ object: "playground.result", model: "local/tesseract" });
    expect(b.id).toMatch(/^req_/);
    expect(b.document).toEqual({ filename: "english.png", mime_type: "image/png", format: "PNG", kind: "image", bytes: ENGLISH.length, converted: false });
    expect(cer(b.result.text, fixture("ocr/english.txt").toString("utf8")), b.result.text).toBeLessThan(0.05);
    expect(b.result.pages).toHaveLength(1);
    const page = b.result.pages[0];
    expect(page.page_number).toBe(1);
    expect(page.confidence).toBeGreaterThan(0.5);
    expect(page.tables).toEqual([]);
    expect(page.image.mime_type).toBe("image/png");
    expect(page.image.url.startsWith("data:image/png;base64,")).toBe(true);
    expect(Buffer.from(page.image.url.split(",")[1], "base64").equals(ENGLISH)).toBe(true);
    expect(b.result.confidence).toBeCloseTo(page.confidence, 10);
    expect(b.timings.conversion_ms).toBe(0);
    expect(b.timings.extraction_ms).toBeGreaterThan(0);
    expect(b.timings.total_ms).toBeGreaterThanOrEqual(b.timings.extraction_ms);
    expect(b.usage).toMatchObject({ pages_processed: 1, tokens_used: 0, total_cost_cents: 1 });
    expect(b.cost.components).toEqual([{ component: "model", pages: 1, provider_cost_cents: 0.1, platform_fee_cents: 0.005, total_cost_cents: 1 }]);
    expect(b.cost).toMatchObject({ currency: "USD", total_cost_cents: 1, formatted: "$0.01" });

    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 99, held_cents: 0 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((x) => ({ id: x.id, endpoint: x.endpoint, status: x.status, model: x.model, cost: x.cost_cents }))).toEqual([
      { id: b.id, endpoint: PLAYGROUND_PATH, status: "success", model: "local/tesseract", cost: "1" },
    ]);
  });

  it("streams progress for a DOCX given as base64 (started, converting, extracting, page 1..2 of 2, result): PNG pages, the conversion a second cost component", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await postJson(stack.edge, acc.adminKey, { base64: DOCX.toString("base64"), filename: "two-pages.docx", model: "local/tesseract" }, "application/x-ndjson");
    expect(r.status, show(r)).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    const ev = events(r.text);
    expect(ev.map((e) => e.event), r.text.slice(0, 500)).toEqual(["started", "converting", "extracting", "page", "page", "result"]);
    expect(ev[0]).toMatchObject({ model: "local/tesseract", document: { format: "DOCX", kind: "office", bytes: DOCX.length } });
    expect(ev[1]).toEqual({ event: "converting", format: "DOCX" });
    expect(ev[2]).toEqual({ event: "extracting", page_count: 2 });
    expect(ev.slice(3, 5).map((e) => [e.completed, e.of])).toEqual([
      [1, 2],
      [2, 2],
    ]);
    const b = ev[5].result;
    expect(b.id).toBe(ev[0].id);
    expect(b.document).toMatchObject({ filename: "two-pages.docx", format: "DOCX", kind: "office", converted: true });
    expect(b.result.pages).toHaveLength(2);
    expect(b.result.text).toMatch(/quick brown fox/i);
    for (const p of b.result.pages) {
      expect(p.image.mime_type).toBe("image/png");
      const info = pngInfo(Buffer.from(p.image.url.split(",")[1], "base64"));
      expect({ w: info.width, h: info.height }).toEqual({ w: 1654, h: 2339 });
    }
    expect(b.timings.conversion_ms).toBeGreaterThan(0);
    const [model, conversion] = b.cost.components;
    expect(model).toMatchObject({ component: "model", pages: 2, total_cost_cents: 1 });
    expect(conversion).toMatchObject({ component: "conversion", total_cost_cents: 1 });
    expect(conversion.compute_time_ms).toBeGreaterThan(0);
    expect(b.cost.total_cost_cents).toBe(2);
    expect(b.usage.total_cost_cents).toBe(2);
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 48, held_cents: 0 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((x) => [x.endpoint, x.status, x.pages_processed, x.cost_cents])).toEqual([[PLAYGROUND_PATH, "success", 2, "2"]]);
  });

  it("streams progress for a PDF read by a local model (started, rasterizing, extracting, page 1..3 of 3, result): each page shown as a PNG of the grey pixels the engine read", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await upload(stack.edge, acc.adminKey, { bytes: PDF, name: "multipage.pdf", type: "application/pdf" }, { model: "local/tesseract" }, "application/x-ndjson");
    expect(r.status, show(r)).toBe(200);
    const ev = events(r.text);
    expect(ev.map((e) => e.event), r.text.slice(0, 500)).toEqual(["started", "rasterizing", "extracting", "page", "page", "page", "result"]);
    expect(ev[2]).toEqual({ event: "extracting", page_count: 3 });
    expect(ev.slice(3, 6).map((e) => [e.completed, e.of])).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    const b = ev[6].result;
    expect(b.document).toMatchObject({ filename: "multipage.pdf", mime_type: "application/pdf", format: "PDF", kind: "pdf", converted: false });
    expect(b.result.pages.map((p: { page_number: number }) => p.page_number)).toEqual([1, 2, 3]);
    const sharp = (await import("sharp")).default;
    const rendered = [];
    for await (const page of streamPdfPages(PDF, { maxPages: 10, timeoutMs: 30_000 })) rendered.push(parsePgm(page.image)!);
    for (const [i, p] of b.result.pages.entries()) {
      expect(cer(p.text, fixture(`ocr/multipage.page-${i + 1}.txt`).toString("utf8")), p.text).toBeLessThan(0.08);
      expect(p.image.mime_type).toBe("image/png");
      const png = Buffer.from(p.image.url.split(",")[1], "base64");
      expect(p.image.bytes).toBe(png.length);
      expect(png[25], "PNG colour type 0: greyscale").toBe(0);
      const { data, info } = await sharp(png).toColourspace("b-w").raw().toBuffer({ resolveWithObject: true });
      expect({ w: info.width, h: info.height, channels: info.channels }).toEqual({ w: 1654, h: 2339, channels: 1 });
      expect(data.equals(rendered[i]!.pixels), `page ${i + 1}: the PNG's pixels are the PGM's`).toBe(true);
    }
    expect(b.timings.conversion_ms).toBeGreaterThan(0);
    expect(b.cost.components).toEqual([expect.objectContaining({ component: "model", pages: 3, total_cost_cents: 1 })]);
  });

  it("answers plain JSON for the same request without Accept: application/x-ndjson", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await upload(stack.edge, acc.adminKey, { bytes: ENGLISH, name: "english.png" }, { model: "local/tesseract", include_images: "false" });
    expect(r.status, show(r)).toBe(200);
    expect(r.body.result.pages[0]).toMatchObject({ image: null, image_omitted: "not_requested" });
  });

  it("returns the model's tables per page and flattened when extract_tables is set", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    upstream.script("openai/gpt-4.1-mini", { kind: "table", format: "json" }, { times: 1 });
    const r = await upload(stack.edge, acc.adminKey, { bytes: fixture("ocr/table.png"), name: "table.png" }, { model: "openai/gpt-4.1-mini", extract_tables: "true" });
    expect(r.status, show(r)).toBe(200);
    const page = r.body.result.pages[0];
    expect(page.tables.length, JSON.stringify(page)).toBeGreaterThan(0);
    expect(page.tables[0].page_number).toBe(1);
    expect(r.body.result.tables).toEqual(page.tables);
    expect(r.body.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it("resolves a strategy and names it in the result", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const rec = await call(stack.edge, "GET", "/v1/models/recommended");
    const want = (rec.body.strategies as { strategy: string; model: string }[]).find((s) => s.strategy === "cost")!.model;
    const r = await postJson(stack.edge, acc.adminKey, { base64: ENGLISH.toString("base64"), strategy: "cost", include_images: false });
    expect(r.status, show(r)).toBe(200);
    expect(r.body).toMatchObject({ model: want, strategy: "cost" });
  });

  it("refuses before the hold with plain HTTP errors even when streaming is asked for: 402 with no credit, 400 for an unsupported format, neither logged", async () => {
    const poor = await createTestAccount({ creditsCents: 0 });
    const r = await upload(stack.edge, poor.adminKey, { bytes: ENGLISH, name: "english.png" }, { model: "local/tesseract" }, "application/x-ndjson");
    expect(r.status, show(r)).toBe(402);
    expect(r.body.error).toMatchObject({ code: "insufficient_credits", required_cents: 1 });
    const acc = await createTestAccount({ creditsCents: 5 });
    const zip = Buffer.from("504b0304140000000800", "hex");
    const bad = await upload(stack.edge, acc.adminKey, { bytes: Buffer.concat([zip, Buffer.alloc(200, 1)]), name: "data.bin" }, {}, "application/x-ndjson");
    expect(bad.status, show(bad)).toBe(400);
    expect(bad.body.error.code).toBe("unsupported_format");
    expect(bad.body.error.supported_formats).toEqual(SUPPORTED);
    expect(await usageRows(poor.accountId)).toHaveLength(0);
    expect(await usageRows(acc.accountId)).toHaveLength(0);
  });

  it("ends the stream with a 402 error event when an office document's real page count needs more credit than held; the conversion is charged", async () => {
    const model = "openai/gpt-4.1-mini";
    // The first hold (conversion + one page) is what a poor account's 402 names.
    const probe = await postJson(stack.edge, (await createTestAccount({ creditsCents: 0 })).adminKey, { base64: DOCX.toString("base64"), model });
    expect(probe.status, show(probe)).toBe(402);
    const firstHold = probe.body.error.required_cents as number;
    const acc = await createTestAccount({ creditsCents: firstHold });
    const r = await postJson(stack.edge, acc.adminKey, { base64: DOCX.toString("base64"), model }, "application/x-ndjson");
    expect(r.status, show(r)).toBe(200);
    const ev = events(r.text);
    expect(ev.map((e) => e.event)).toEqual(["started", "converting", "error"]);
    expect(ev[2]).toMatchObject({ status: 402, error: { code: "insufficient_credits" } });
    expect(ev[2].error.required_cents).toBeGreaterThan(firstHold);
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: firstHold - 1, held_cents: 0 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((x) => [x.endpoint, x.status, x.error_code, x.cost_cents])).toEqual([[PLAYGROUND_PATH, "error", "insufficient_credits", "1"]]);
  });

  it("cancels the work when the client disconnects mid-stream: the conversion is abandoned and the request settled as an error, charging nothing", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const abort = new AbortController();
    const res = await fetch(stack.edge.url + PLAYGROUND_PATH, {
      method: "POST",
      headers: { authorization: `Bearer ${acc.adminKey}`, "content-type": "application/json", accept: "application/x-ndjson" },
      body: JSON.stringify({ base64: fixture("convert/slides.pptx").toString("base64"), model: "local/tesseract" }),
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let seen = "";
    while (!seen.includes('"converting"')) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    expect(seen).toContain('"converting"');
    abort.abort();
    let rows: Awaited<ReturnType<typeof usageRows>> = [];
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      rows = await usageRows(acc.accountId);
    }
    expect(rows.map((x) => [x.endpoint, x.status, x.error_code, x.cost_cents])).toEqual([[PLAYGROUND_PATH, "error", "invalid_request", "0"]]);
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 50, held_cents: 0 });
    // The edge is still serving.
    expect((await call(stack.edge, "GET", "/healthz")).status).toBe(200);
  });

  it("validates the form like a JSON body: unknown fields, file and url together, neither, bad option values", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const png = { bytes: ENGLISH, name: "english.png" };
    const unknown = await upload(stack.edge, acc.adminKey, png, { colour: "red" });
    expect(unknown.status, show(unknown)).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: "invalid_request", param: "colour" });
    const both = await upload(stack.edge, acc.adminKey, png, { url: "https://example.com/a.png" });
    expect(both.status, show(both)).toBe(400);
    expect(both.body.error.message).toMatch(/exactly one/);
    const neither = await upload(stack.edge, acc.adminKey, null, { model: "local/tesseract" });
    expect(neither.status, show(neither)).toBe(400);
    const format = await upload(stack.edge, acc.adminKey, png, { output_format: "html" });
    expect(format.status, show(format)).toBe(400);
    expect(format.body.error).toMatchObject({ param: "output_format" });
    expect(format.body.error.message).toMatch(/"markdown"/);
    const json = await postJson(stack.edge, acc.adminKey, { base64: ENGLISH.toString("base64"), url: "https://example.com/a.png" });
    expect(json.status, show(json)).toBe(400);
    const model = await upload(stack.edge, acc.adminKey, png, { model: "nobody/nothing" });
    expect(model.status, show(model)).toBe(400);
    expect(model.body.error.code).toBe("unsupported_model");
    expect(await usageRows(acc.accountId)).toHaveLength(0);
  });

  it("refuses a file over FOLIO_MAX_DOCUMENT_BYTES with 413 payload_too_large", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const r = await upload(small.edge, acc.adminKey, { bytes: ENGLISH, name: "english.png" }, { model: "local/tesseract" });
    expect(ENGLISH.length).toBeGreaterThan(2048);
    expect(r.status, show(r)).toBe(413);
    expect(r.body.error).toMatchObject({ code: "payload_too_large", param: "file" });
  });

  it("needs a key (401) with playground:write (403), checked before the body is read", async () => {
    const none = await upload(stack.edge, undefined, { bytes: ENGLISH, name: "english.png" });
    expect(none.status, show(none)).toBe(401);
    const acc = await createTestAccount({ creditsCents: 5 });
    const ocrOnly = await createTestKey(acc.accountId, ["ocr:write"]);
    const denied = await upload(stack.edge, ocrOnly.key, { bytes: ENGLISH, name: "english.png" });
    expect(denied.status, show(denied)).toBe(403);
    expect(denied.body.error.missing_permissions).toEqual(["playground:write"]);
  });

  it("answers a refused upload (429) only once the body is in, on an open connection, so a slow client reads an answer, not a broken pipe", async () => {
    const acc = await createTestAccount({ creditsCents: 5, requestsPerMinute: 1 });
    expect((await call(stack.edge, "GET", "/v1/account/balance", acc.adminKey)).status).toBe(200);
    // A client that sends half of its upload, then stalls: the edge must not answer (and hang up) yet.
    const boundary = "folio-test-boundary";
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.png"\r\ncontent-type: image/png\r\n\r\n`),
      ENGLISH,
      Buffer.alloc(2 * 1024 * 1024, 0x20),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const { port } = new URL(stack.edge.url);
    const socket = connect(Number(port), "127.0.0.1");
    await new Promise((r) => socket.once("connect", r));
    let received = "";
    socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
    socket.write(
      `POST ${PLAYGROUND_PATH} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${acc.adminKey}\r\n` +
        `content-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${body.length}\r\n\r\n`,
    );
    socket.write(body.subarray(0, body.length >> 1));
    await new Promise((r) => setTimeout(r, 500));
    expect(received, "answered before the body was in").toBe("");
    socket.write(body.subarray(body.length >> 1));
    for (let i = 0; i < 100 && !received.includes("rate_limit_exceeded"); i++) await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    expect(received.split("\r\n")[0]).toBe("HTTP/1.1 429 Too Many Requests");
    expect(received).toMatch(/\r\nretry-after: \d+\r\n/i);
    expect(received.toLowerCase()).not.toContain("connection: close");
  });

  it("keeps multipart scoped to this route: other routes still answer 415 to a form, and this one to text/plain", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const form = new FormData();
    form.append("base64", ENGLISH.toString("base64"));
    const ocr = await fetch(stack.edge.url + "/v1/ocr", { method: "POST", headers: { authorization: `Bearer ${acc.adminKey}` }, body: form });
    expect(ocr.status, await ocr.clone().text()).toBe(415);
    expect(((await ocr.json()) as { error: { code: string } }).error.code).toBe("unsupported_media_type");
    const text = await fetch(stack.edge.url + PLAYGROUND_PATH, { method: "POST", headers: { authorization: `Bearer ${acc.adminKey}`, "content-type": "text/plain" }, body: "hello" });
    expect(text.status).toBe(415);
  });

  it("is described in the OpenAPI document with both request bodies and both answers", async () => {
    const doc = await call(stack.edge, "GET", "/v1/openapi.json");
    const op = doc.body.paths[PLAYGROUND_PATH]?.post;
    expect(op, Object.keys(doc.body.paths).join(" ")).toBeDefined();
    expect(Object.keys(op.requestBody.content).sort()).toEqual(["application/json", "multipart/form-data"]);
    expect(Object.keys(op.responses["200"].content).sort()).toEqual(["application/json", "application/x-ndjson"]);
    expect(op.responses["200"].content["application/json"].schema.properties.object.const ?? op.responses["200"].content["application/json"].schema.properties.object.enum?.[0]).toBe("playground.result");
  });
});
