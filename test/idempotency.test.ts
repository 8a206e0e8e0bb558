/**
 * Idempotency-Key on the paid POSTs, end to end: edge → gRPC → extraction
 * (real tesseract; the fake OpenRouter upstream, a test double, where a slow
 * or scripted model is needed), billing in real Postgres. Each retry must
 * get the first answer back without a second charge.
 */
import { describe, expect, it } from "vitest";
import { balanceOf, createTestAccount, usageRows, upstreamStack } from "./harness.ts";
import { ocrFixture as fixture } from "./support.ts";

const ctx = upstreamStack();

const MODEL = "openai/gpt-4.1-mini";
const png = () => fixture("english.png").toString("base64");

/** A POST with an Idempotency-Key; answers status, headers and the body's text and JSON. */
async function post(path: string, key: string, body: unknown, idempotencyKey?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
  const res = await fetch(ctx.stack.edge.url + path, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  let json: any = undefined; // eslint-disable-line @typescript-eslint/no-explicit-any -- the answers of several endpoints
  try {
    json = JSON.parse(text);
  } catch {
    /* keep the text */
  }
  return { status: res.status, headers: res.headers, text, body: json };
}

describe("Idempotency-Key on POST /v1/ocr", () => {
  it("replays the first answer to a retry with the same key and body: same id and bytes, Idempotent-Replayed, one charge and one usage row", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const body = { base64: png(), model: "local/tesseract" };
    const first = await post("/v1/ocr", acc.adminKey, body, "order-1");
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await post("/v1/ocr", acc.adminKey, body, "order-1");
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    expect(again.body.id).toBe(first.body.id);
    const rows = await usageRows(acc.accountId);
    expect(rows.map((r) => r.id)).toEqual([first.body.id]);
    expect((await balanceOf(ctx.stack.edge, acc.adminKey)).balance_cents).toBe(100 - first.body.usage.total_cost_cents);
  });

  it("takes the same body with its keys in another order as the same request", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const first = await post("/v1/ocr", acc.adminKey, { base64: png(), model: "local/tesseract" }, "k-order");
    const again = await post("/v1/ocr", acc.adminKey, { model: "local/tesseract", base64: png() }, "k-order");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
  });

  it("refuses the same key with another body (422 naming the header), and another endpoint under it too", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    expect((await post("/v1/ocr", acc.adminKey, { base64: png(), model: "local/tesseract" }, "k-1")).status).toBe(200);
    const other = await post("/v1/ocr", acc.adminKey, { base64: png(), model: "local/tesseract", options: { language: "en" } }, "k-1");
    expect(other.status, other.text).toBe(422);
    expect(other.body.error).toMatchObject({ code: "idempotency_key_reused", param: "Idempotency-Key" });
    const chat = await post("/v1/chat/completions", acc.adminKey, { model: "local/tesseract", messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] }, "k-1");
    expect(chat.status).toBe(422);
    expect(await usageRows(acc.accountId)).toHaveLength(1);
  });

  it("scopes keys to the account: another account's request under the same key runs", async () => {
    const a = await createTestAccount({ creditsCents: 100 });
    const b = await createTestAccount({ creditsCents: 100 });
    const body = { base64: png(), model: "local/tesseract" };
    const ra = await post("/v1/ocr", a.adminKey, body, "shared-key");
    const rb = await post("/v1/ocr", b.adminKey, body, "shared-key");
    expect(rb.status).toBe(200);
    expect(rb.headers.get("idempotent-replayed")).toBeNull();
    expect(rb.body.id).not.toBe(ra.body.id);
  });

  it("answers 409 with Retry-After to a retry while the first request still runs, and never runs it twice", async () => {
    const acc = await createTestAccount({ creditsCents: 500 });
    ctx.upstream.script(MODEL, { kind: "delay", ms: 1500, then: { kind: "text", text: "slow answer" } }, { times: 1 });
    const body = { base64: png(), model: MODEL };
    const firstP = post("/v1/ocr", acc.adminKey, body, "slow-1");
    await new Promise((r) => setTimeout(r, 500));
    const during = await post("/v1/ocr", acc.adminKey, body, "slow-1");
    expect(during.status, during.text).toBe(409);
    expect(during.body.error.code).toBe("idempotency_in_progress");
    expect(Number(during.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const first = await firstP;
    expect(first.status, first.text).toBe(200);
    const after = await post("/v1/ocr", acc.adminKey, body, "slow-1");
    expect(after.headers.get("idempotent-replayed")).toBe("true");
    expect(after.body.result.text).toBe("slow answer");
    expect(await usageRows(acc.accountId)).toHaveLength(1);
  });

  it("keeps a failure a retry cannot change (a page that is not an image: 400) and replays it, unbilled", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    // A PNG signature and junk: an image to the edge, undecodable to tesseract (a 400 found while reading, after the hold).
    const body = { base64: Buffer.concat([fixture("english.png").subarray(0, 8), Buffer.from("junk that is no PNG chunk")]).toString("base64"), model: "local/tesseract" };
    const first = await post("/v1/ocr", acc.adminKey, body, "bad-doc");
    expect(first.status).toBe(400);
    const again = await post("/v1/ocr", acc.adminKey, body, "bad-doc");
    expect(again.status).toBe(400);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.text).toBe(first.text);
  });

  it("gives the key back after a 402, so the same request runs once credit is added", async () => {
    const acc = await createTestAccount({ creditsCents: 0 });
    const body = { base64: png(), model: "local/tesseract" };
    const poor = await post("/v1/ocr", acc.adminKey, body, "topup-1");
    expect(poor.status).toBe(402);
    await ctx.stack.edge.deps.billing.credit(acc.accountId, 100, "test top-up");
    const rich = await post("/v1/ocr", acc.adminKey, body, "topup-1");
    expect(rich.status, rich.text).toBe(200);
    expect(rich.headers.get("idempotent-replayed")).toBeNull();
  });

  it("keeps a failure that was billed (a page read, then the provider failed): a retry replays it and is not charged again", async () => {
    const acc = await createTestAccount({ creditsCents: 500 });
    ctx.upstream.script(MODEL, { kind: "text", text: "page text" }, { times: 1 });
    ctx.upstream.script(MODEL, { kind: "status", status: 400, body: { error: { message: "bad request upstream" } } }, { times: 2 });
    const body = { base64: fixture("multipage.pdf").toString("base64"), model: MODEL };
    const first = await post("/v1/ocr", acc.adminKey, body, "billed-fail");
    expect(first.status, first.text).toBe(502);
    const rows = await usageRows(acc.accountId);
    expect(Number(rows[0]!.cost_cents), "the page read was charged").toBeGreaterThan(0);
    const balance = (await balanceOf(ctx.stack.edge, acc.adminKey)).balance_cents;
    const again = await post("/v1/ocr", acc.adminKey, body, "billed-fail");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.status).toBe(502);
    expect(again.text).toBe(first.text);
    expect((await balanceOf(ctx.stack.edge, acc.adminKey)).balance_cents).toBe(balance);
    expect(await usageRows(acc.accountId)).toHaveLength(1);
  });

  it("gives the key back after an unbilled provider failure (502), so a retry runs", async () => {
    const acc = await createTestAccount({ creditsCents: 500 });
    ctx.upstream.script(MODEL, { kind: "status", status: 400, body: { error: { message: "bad request upstream" } } }, { times: 1 });
    const body = { base64: png(), model: MODEL };
    const first = await post("/v1/ocr", acc.adminKey, body, "unbilled-fail");
    expect(first.status, first.text).toBe(502);
    ctx.upstream.script(MODEL, { kind: "text", text: "second try" }, { times: 1 });
    const again = await post("/v1/ocr", acc.adminKey, body, "unbilled-fail");
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    expect(again.body.result.text).toBe("second try");
  });

  it.each([
    ["longer than 255 characters", "k".repeat(256)],
    ["empty", ""],
  ])("refuses a key that is %s with a 400 naming the header", async (_what, value) => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await post("/v1/ocr", acc.adminKey, { base64: png(), model: "local/tesseract" }, value);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "Idempotency-Key" });
    expect(await usageRows(acc.accountId)).toHaveLength(0);
  });

  it("refuses a key with a control character (sent raw on the wire) with a 400 naming the header", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const { request } = await import("node:http");
    const url = new URL(ctx.stack.edge.url + "/v1/ocr");
    const payload = JSON.stringify({ base64: png(), model: "local/tesseract" });
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { authorization: `Bearer ${acc.adminKey}`, "content-type": "application/json", "idempotency-key": "a\tb" } },
        (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
    expect(status.status, status.body).toBe(400);
    expect(JSON.parse(status.body).error.param).toBe("Idempotency-Key");
  });

  it("runs requests without the header as before: each one charged", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const body = { base64: png(), model: "local/tesseract" };
    const a = await post("/v1/ocr", acc.adminKey, body);
    const b = await post("/v1/ocr", acc.adminKey, body);
    expect(a.body.id).not.toBe(b.body.id);
    expect(await usageRows(acc.accountId)).toHaveLength(2);
  });
});

describe("Idempotency-Key on the other paid POSTs", () => {
  it("replays a chat completion", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    ctx.upstream.script(MODEL, { kind: "text", text: "chat answer" }, { times: 1 });
    const body = { model: MODEL, messages: [{ role: "user", content: [{ type: "text", text: "Read this" }, { type: "image_url", image_url: { url: `data:image/png;base64,${png()}` } }] }] };
    const first = await post("/v1/chat/completions", acc.adminKey, body, "chat-1");
    expect(first.status, first.text).toBe(200);
    const again = await post("/v1/chat/completions", acc.adminKey, body, "chat-1");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await usageRows(acc.accountId)).toHaveLength(1);
  });

  it("replays the playground's result", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const body = { base64: png(), model: "local/tesseract", include_images: false };
    const first = await post("/v1/playground/process", acc.adminKey, body, "pg-1");
    expect(first.status, first.text).toBe(200);
    const again = await post("/v1/playground/process", acc.adminKey, body, "pg-1");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    expect(await usageRows(acc.accountId)).toHaveLength(1);
  });
});
