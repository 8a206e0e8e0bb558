/**
 * POST /v1/chat/completions end to end: edge → gRPC → extraction service →
 * real tesseract or the fake OpenRouter upstream (a test double), with URL
 * fetching from a loopback server, billing and usage logs in real Postgres.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Decimal } from "../internal/billing/index.ts";
import { call, createTestAccount, startStack, usageRows, type TestStack } from "./harness.ts";
import { FAKE_UPSTREAM_MODEL as UPSTREAM_MODEL, startFakeUpstream, type FakeUpstream, type RecordedRequest } from "./fake-upstream.ts";
import { cer } from "./cer.ts";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/ocr/${name}`, import.meta.url));
const truth = (name: string) => fixture(name).toString("utf8");
const dataUrl = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString("base64")}`;
const png = (name: string) => dataUrl("image/png", fixture(name));
const pdf = (name: string) => dataUrl("application/pdf", fixture(name));

/** Snapshot prices of UPSTREAM_MODEL, dollars per token. */
const PROMPT_USD = new Decimal("0.0000004");
const COMPLETION_USD = new Decimal("0.0000016");

let upstream: FakeUpstream;
/** A stack without any fetch allowance: loopback URLs are refused. */
let stack: TestStack;
/** A stack that may fetch from the loopback file server, with FOLIO_MAX_PAGES=5. */
let allowStack: TestStack;
let files: Server;
let filesBase: string;
const served: string[] = [];

beforeAll(async () => {
  files = createServer((req, res) => {
    served.push(req.url ?? "");
    const name = (req.url ?? "/").slice(1);
    if (!/^[a-z-]+\.(png|pdf)$/.test(name)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": name.endsWith(".png") ? "image/png" : "application/pdf" });
    res.end(fixture(name));
  });
  await new Promise<void>((resolve) => files.listen(0, "127.0.0.1", resolve));
  const { port } = files.address() as AddressInfo;
  filesBase = `http://127.0.0.1:${port}`;
  upstream = await startFakeUpstream();
  stack = await startStack({ upstream });
  allowStack = await startStack({ upstream, edgeEnv: { FOLIO_FETCH_ALLOW: `127.0.0.1:${port}`, FOLIO_MAX_PAGES: "5" } });
});
afterAll(async () => {
  await allowStack?.close();
  await stack?.close();
  await upstream?.close();
  if (files) {
    files.closeAllConnections();
    await new Promise((r) => files.close(r));
  }
});

const chat = (s: TestStack, key: string, body: unknown) => call(s.edge, "POST", "/v1/chat/completions", key, body);

async function balance(s: TestStack, key: string): Promise<number> {
  return (await call(s.edge, "GET", "/v1/account/balance", key)).body.balance_cents as number;
}

type SentPart = { type: string; text?: string; image_url?: { url: string }; file?: { filename: string; file_data: string } };
/** The content parts of every message the fake upstream received in `rec`. */
function sentParts(rec: RecordedRequest): SentPart[] {
  const body = rec.body as { messages: { role: string; content: SentPart[] | string }[] };
  return body.messages.flatMap((m) => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content));
}

/** Runs `fn` and returns the chat requests the fake upstream received meanwhile. */
async function upstreamCalls<T>(fn: () => Promise<T>): Promise<{ result: T; sent: RecordedRequest[] }> {
  const before = upstream.chatRequests().length;
  const result = await fn();
  return { result, sent: upstream.chatRequests().slice(before) };
}

describe("POST /v1/chat/completions: the response", () => {
  it("has exactly the chat.completion shape, its id is the usage log's id, and the row records tokens and the charge", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    upstream.script(UPSTREAM_MODEL, { kind: "text", text: "The committee met on Tuesday." }, { times: 1 });
    const r = await chat(stack, acc.adminKey, {
      model: UPSTREAM_MODEL,
      temperature: 0.2, // other client-library parameters are ignored
      messages: [
        { role: "system", content: "You transcribe documents." },
        { role: "user", content: [{ type: "text", text: "Extract the text." }, { type: "image_url", image_url: { url: png("english.png") } }] },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    expect(Object.keys(b).sort()).toEqual(["choices", "created", "folio", "id", "model", "object", "usage"]);
    expect(b.object).toBe("chat.completion");
    expect(b.id).toMatch(/^req_/);
    expect(b.model).toBe(UPSTREAM_MODEL);
    expect(Number.isInteger(b.created)).toBe(true);
    expect(Math.abs(b.created - Date.now() / 1000)).toBeLessThan(60);
    expect(b.choices).toHaveLength(1);
    expect(Object.keys(b.choices[0]).sort()).toEqual(["finish_reason", "index", "message"]);
    expect(b.choices[0]).toEqual({ index: 0, message: { role: "assistant", content: "The committee met on Tuesday." }, finish_reason: "stop" });
    expect(Object.keys(b.usage).sort()).toEqual(["completion_tokens", "prompt_tokens", "total_tokens"]);
    for (const v of Object.values(b.usage)) expect(Number.isInteger(v)).toBe(true);
    expect(b.usage.prompt_tokens).toBeGreaterThan(0);
    expect(b.usage.completion_tokens).toBeGreaterThan(0);
    expect(b.usage.total_tokens).toBe(b.usage.prompt_tokens + b.usage.completion_tokens);
    expect(Object.keys(b.folio).sort()).toEqual(["conversion_cost_cents", "pages_processed", "platform_fee_cents", "provider_cost_cents", "total_cost_cents"]);
    for (const v of Object.values(b.folio)) expect(typeof v).toBe("number");
    expect(b.folio.pages_processed).toBe(1);
    expect(b.folio.conversion_cost_cents).toBe(0);
    // The fake reports usage.cost from the snapshot prices: tokens × price, exact.
    const provider = PROMPT_USD.mul(b.usage.prompt_tokens).add(COMPLETION_USD.mul(b.usage.completion_tokens)).mul(100);
    expect(b.folio.provider_cost_cents).toBeCloseTo(provider.toNumber(), 10);
    expect(b.folio.platform_fee_cents).toBeCloseTo(provider.mul(0.05).toNumber(), 10);
    expect(b.folio.total_cost_cents).toBe(Math.max(1, provider.mul(1.05).ceil().toNumber()));

    const rows = await usageRows(acc.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id: b.id,
      endpoint: "/v1/chat/completions",
      model: UPSTREAM_MODEL,
      status: "success",
      error_code: null,
      prompt_tokens: b.usage.prompt_tokens,
      completion_tokens: b.usage.completion_tokens,
      tokens_used: b.usage.total_tokens,
      pages_processed: 1,
      cost_cents: String(b.folio.total_cost_cents),
    });
    expect(rows[0]!.api_key_id).toBe(acc.adminKeyId);
    expect(await balance(stack, acc.adminKey)).toBe(10_000 - b.folio.total_cost_cents);
  });
});

describe("POST /v1/chat/completions with an upstream model (fake OpenRouter)", () => {
  it("accepts string content: sent on as a text part, the model's answer returned", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const { result: r, sent } = await upstreamCalls(() => chat(stack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: "Say hello." }] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.choices[0].message.content).toMatch(/^FAKE CHAT ANSWER \d+$/);
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body as { model: string; messages: { role: string }[] };
    expect(body.model).toBe(UPSTREAM_MODEL);
    expect(body.messages.map((m) => m.role)).toEqual(["user"]);
    expect(sentParts(sent[0]!)).toEqual([{ type: "text", text: "Say hello." }]);
    // No attachment: no page was processed, and the call is still billed (minimum 1 cent).
    expect(r.body.folio.pages_processed).toBe(0);
    expect(r.body.folio.total_cost_cents).toBe(1);
  });

  it("sends part arrays in order, images as data URLs", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const english = fixture("english.png");
    const { result: r, sent } = await upstreamCalls(() =>
      chat(stack, acc.adminKey, {
        model: UPSTREAM_MODEL,
        messages: [
          { role: "system", content: "Be exact." },
          {
            role: "user",
            content: [
              { type: "text", text: "First:" },
              { type: "image_url", image_url: { url: dataUrl("image/png", english) } },
              { type: "text", text: "Second:" },
              { type: "image_url", image_url: { url: png("scan.png"), detail: "high" } },
            ],
          },
        ],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.choices[0].message.content).toMatch(/^FAKE OCR TEXT \d+$/);
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body as { messages: { role: string; content: SentPart[] }[] };
    expect(body.messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(body.messages[0]!.content).toEqual([{ type: "text", text: "Be exact." }]);
    const parts = body.messages[1]!.content;
    expect(parts.map((p) => p.type)).toEqual(["text", "image_url", "text", "image_url"]);
    expect(parts[0]!.text).toBe("First:");
    expect(parts[1]!.image_url!.url).toBe(dataUrl("image/png", english));
    expect(parts[2]!.text).toBe("Second:");
    expect(parts[3]!.image_url!.url).toBe(png("scan.png"));
    expect(r.body.folio.pages_processed).toBe(2);
  });

  it("a PDF file part becomes one image part per page (200-DPI PNGs); pages_processed = 3", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const { result: r, sent } = await upstreamCalls(() =>
      chat(stack, acc.adminKey, {
        model: UPSTREAM_MODEL,
        messages: [{ role: "user", content: [{ type: "text", text: "Read this." }, { type: "file", file: { filename: "multipage.pdf", file_data: pdf("multipage.pdf") } }] }],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(sent).toHaveLength(1);
    const parts = sentParts(sent[0]!);
    expect(parts.map((p) => p.type)).toEqual(["text", "image_url", "image_url", "image_url"]);
    for (const p of parts.slice(1)) expect(p.image_url!.url).toMatch(/^data:image\/png;base64,iVBORw0KGgo/);
    expect((sent[0]!.body as { plugins?: unknown }).plugins).toBeUndefined();
    expect(r.body.folio.pages_processed).toBe(3);
    expect(r.body.usage.prompt_tokens).toBe(10 + Math.ceil("Read this.".length / 4) + 3 * 258);
    const rows = await usageRows(acc.accountId);
    expect(rows.map((x) => [x.status, x.pages_processed])).toEqual([["success", 3]]);
  });

  it("the file-parser plugin sends the PDF as a file part with the plugin, billed as its own component (2 $/1000 pages + 5%)", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    upstream.script(UPSTREAM_MODEL, { kind: "text", text: "Parsed." }, { times: 1 });
    const tenPages = fixture("ten-pages.pdf");
    const { result: r, sent } = await upstreamCalls(() =>
      chat(stack, acc.adminKey, {
        model: UPSTREAM_MODEL,
        messages: [{ role: "user", content: [{ type: "text", text: "Summarise." }, { type: "file", file: { filename: "ten-pages.pdf", file_data: dataUrl("application/pdf", tenPages) } }] }],
        plugins: [{ id: "file-parser", pdf: { engine: "mistral-ocr" } }],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.choices[0].message.content).toBe("Parsed.");
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body as { plugins: unknown };
    expect(body.plugins).toEqual([{ id: "file-parser", pdf: { engine: "mistral-ocr" } }]);
    const parts = sentParts(sent[0]!);
    expect(parts.map((p) => p.type)).toEqual(["text", "file"]);
    expect(parts[1]!.file).toEqual({ filename: "ten-pages.pdf", file_data: dataUrl("application/pdf", tenPages) });
    expect(r.body.folio.pages_processed).toBe(10);

    // Model component: the cost the fake reported; parser component: 10 pages × 0.2 cent.
    const reported = (sent[0]!.response!.body as { usage: { cost: number } }).usage.cost;
    const modelCents = new Decimal(String(reported)).mul(100);
    const parserCents = new Decimal(10).mul("0.2");
    expect(r.body.folio.provider_cost_cents).toBeCloseTo(modelCents.add(parserCents).toNumber(), 10);
    expect(r.body.folio.platform_fee_cents).toBeCloseTo(modelCents.add(parserCents).mul(0.05).toNumber(), 10);
    const modelCharge = Math.max(1, modelCents.mul(1.05).ceil().toNumber());
    const parserCharge = Math.max(1, parserCents.mul(1.05).ceil().toNumber()); // 2.1 → 3
    expect(parserCharge).toBe(3);
    expect(r.body.folio.total_cost_cents).toBe(modelCharge + parserCharge);
    const rows = await usageRows(acc.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: r.body.id, status: "success", pages_processed: 10, cost_cents: String(modelCharge + parserCharge) });
    expect(await balance(stack, acc.adminKey)).toBe(10_000 - modelCharge - parserCharge);
  });

  it("an upstream 500 is a 502 upstream_error, logged as an error with no charge", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    upstream.script(UPSTREAM_MODEL, { kind: "status", status: 500 }, { times: 1 });
    const { result: r, sent } = await upstreamCalls(() =>
      chat(stack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: png("english.png") } }] }] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(502);
    expect(r.body.error.code).toBe("upstream_error");
    expect(r.body.error.upstream_status).toBe(500);
    expect(sent).toHaveLength(1); // never retried
    const rows = await usageRows(acc.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: "error", error_code: "upstream_error", cost_cents: "0", prompt_tokens: 0, completion_tokens: 0, model: UPSTREAM_MODEL });
    expect(await balance(stack, acc.adminKey)).toBe(10_000);
  });

  it("an upstream 429 is a 502 upstream_error with Retry-After, logged as an error with no charge", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    upstream.script(UPSTREAM_MODEL, { kind: "rate-limited", retryAfter: "7" }, { times: 1 });
    const { result: r, sent } = await upstreamCalls(() => chat(stack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: "hi" }] }));
    expect(r.status, JSON.stringify(r.body)).toBe(502);
    expect(r.body.error).toMatchObject({ code: "upstream_error", upstream_status: 429 });
    expect(r.headers.get("retry-after")).toBe("7");
    expect(sent).toHaveLength(1);
    const rows = await usageRows(acc.accountId);
    expect(rows.map((x) => [x.status, x.error_code, x.cost_cents, x.tokens_used])).toEqual([["error", "upstream_error", "0", 0]]);
    expect(rows[0]!.id).toMatch(/^req_/);
    expect(await balance(stack, acc.adminKey)).toBe(10_000);
  });
});

describe("POST /v1/chat/completions with local/tesseract", () => {
  it("answers the text of the image", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await chat(stack, acc.adminKey, {
      model: "local/tesseract",
      messages: [{ role: "user", content: [{ type: "text", text: "Ignore the image and say hi." }, { type: "image_url", image_url: { url: png("english.png") } }] }],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.model).toBe("local/tesseract");
    expect(cer(r.body.choices[0].message.content, truth("english.txt"))).toBeLessThan(0.05);
    expect(r.body.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    // 0.001 $/page = 0.1 cent, + 5% → 1 cent minimum.
    expect(r.body.folio).toMatchObject({ pages_processed: 1, conversion_cost_cents: 0, total_cost_cents: 1 });
    expect(r.body.folio.provider_cost_cents).toBeCloseTo(0.1, 10);
    expect(r.body.folio.platform_fee_cents).toBeCloseTo(0.005, 10);
  });

  it("two images → their two texts in order, separated by a blank line", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const one = async (name: string) => {
      const r = await chat(stack, acc.adminKey, { model: "local/tesseract", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: png(name) } }] }] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.choices[0].message.content as string;
    };
    const english = await one("english.png");
    const scan = await one("scan.png");
    const r = await chat(stack, acc.adminKey, {
      model: "local/tesseract",
      messages: [
        { role: "user", content: [{ type: "image_url", image_url: { url: png("english.png") } }] },
        { role: "user", content: [{ type: "text", text: "and" }, { type: "image_url", image_url: { url: png("scan.png") } }] },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const content = r.body.choices[0].message.content as string;
    expect(content).toBe(`${english}\n\n${scan}`);
    expect(cer(content, `${truth("english.txt")}\n\n${truth("scan.txt")}`)).toBeLessThan(0.05);
    expect(r.body.folio.pages_processed).toBe(2);
  });

  it("a PDF file part → the text of every page, in order", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await chat(stack, acc.adminKey, { model: "local/tesseract", messages: [{ role: "user", content: [{ type: "file", file: { filename: "m.pdf", file_data: pdf("multipage.pdf") } }] }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const want = [1, 2, 3].map((n) => truth(`multipage.page-${n}.txt`)).join("\n\n");
    expect(cer(r.body.choices[0].message.content, want)).toBeLessThan(0.08);
    expect(r.body.folio.pages_processed).toBe(3);
  });

  it("no image → 400 naming messages, with no charge", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await chat(stack, acc.adminKey, { model: "local/tesseract", messages: [{ role: "user", content: "What does the document say?" }] });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "messages" });
    expect(await balance(stack, acc.adminKey)).toBe(100);
    for (const row of await usageRows(acc.accountId)) expect(row).toMatchObject({ status: "error", cost_cents: "0" });
  });

  it("the file-parser plugin with a local model → 400 naming plugins, before any work", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await chat(stack, acc.adminKey, {
      model: "local/tesseract",
      messages: [{ role: "user", content: [{ type: "file", file: { filename: "m.pdf", file_data: pdf("multipage.pdf") } }] }],
      plugins: [{ id: "file-parser", pdf: { engine: "pdf-text" } }],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "plugins" });
    expect(await usageRows(acc.accountId)).toEqual([]);
    expect(await balance(stack, acc.adminKey)).toBe(100);
  });
});

describe("POST /v1/chat/completions with URLs", () => {
  it("fetches an image_url http URL from an allowed loopback server and sends it on as data (local and upstream)", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const url = `${filesBase}/english.png`;
    const seen = served.length;
    const local = await chat(allowStack, acc.adminKey, { model: "local/tesseract", messages: [{ role: "user", content: [{ type: "text", text: "x" }, { type: "image_url", image_url: { url } }] }] });
    expect(local.status, JSON.stringify(local.body)).toBe(200);
    expect(cer(local.body.choices[0].message.content, truth("english.txt"))).toBeLessThan(0.05);

    const { result: up, sent } = await upstreamCalls(() => chat(allowStack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }] }] }));
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(sentParts(sent[0]!)).toEqual([{ type: "image_url", image_url: { url: png("english.png") } }]);
    expect(served.slice(seen)).toEqual(["/english.png", "/english.png"]);
  });

  it("fetches a file part's file_data URL (a PDF) from the allowed server", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const { result: r, sent } = await upstreamCalls(() =>
      chat(allowStack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "file", file: { filename: "m.pdf", file_data: `${filesBase}/multipage.pdf` } }] }] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(sentParts(sent[0]!).map((p) => p.type)).toEqual(["image_url", "image_url", "image_url"]);
    expect(r.body.folio.pages_processed).toBe(3);
  });

  it("refuses the same loopback URL without the allowance: 400 naming the part, not logged", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const seen = served.length;
    const img = await chat(stack, acc.adminKey, {
      model: UPSTREAM_MODEL,
      messages: [{ role: "user", content: [{ type: "text", text: "x" }, { type: "image_url", image_url: { url: `${filesBase}/english.png` } }] }],
    });
    expect(img.status, JSON.stringify(img.body)).toBe(400);
    expect(img.body.error).toMatchObject({ code: "invalid_request", param: "messages[0].content[1].image_url.url" });
    expect(img.body.error.message).not.toContain(filesBase.replace("http://", ""));
    const file = await chat(stack, acc.adminKey, {
      model: UPSTREAM_MODEL,
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: [{ type: "file", file: { file_data: `${filesBase}/multipage.pdf` } }] },
      ],
    });
    expect(file.status, JSON.stringify(file.body)).toBe(400);
    expect(file.body.error).toMatchObject({ code: "invalid_request", param: "messages[1].content[0].file.file_data" });
    expect(served.slice(seen)).toEqual([]);
    expect(await usageRows(acc.accountId)).toEqual([]);
  });

  it("a PDF over FOLIO_MAX_PAGES is a 400 naming its part, before the hold", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const { result: r, sent } = await upstreamCalls(() =>
      chat(allowStack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "text", text: "x" }, { type: "file", file: { file_data: pdf("ten-pages.pdf") } }] }] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "messages[0].content[1].file.file_data" });
    expect(r.body.error.message).toMatch(/10 pages/);
    expect(sent).toEqual([]);
    expect(await usageRows(acc.accountId)).toEqual([]);
  });

  // BUG: FOLIO_MAX_PAGES is "most pages processed in one request" (config, docs/ocr.md), but the chat
  // route checks it per PDF only (chat.completions.ts:126): two 3-page PDFs under a limit of 5 are
  // processed, pages_processed 6.
  it("FOLIO_MAX_PAGES bounds the pages of the whole request, not only of each PDF", async () => {
    // allowStack has FOLIO_MAX_PAGES=5; one 3-page PDF passes, two of them are 6 pages in one request.
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const part = { type: "file", file: { filename: "m.pdf", file_data: pdf("multipage.pdf") } };
    const ok = await chat(allowStack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [part] }] });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const tooMany = await chat(allowStack, acc.adminKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [part, part] }] });
    expect(tooMany.status, JSON.stringify(tooMany.body)).toBe(400);
    expect(tooMany.body.error.code).toBe("invalid_request");
  });
});

describe("POST /v1/chat/completions refuses bad requests", () => {
  const image = { type: "image_url", image_url: { url: png("english.png") } };
  it.each([
    ["an unknown model", { model: "nobody/nothing", messages: [{ role: "user", content: "hi" }] }, 400, "unsupported_model", "model"],
    ["empty messages", { model: UPSTREAM_MODEL, messages: [] }, 400, "invalid_request", "messages"],
    ["no messages", { model: UPSTREAM_MODEL }, 400, "invalid_request", "messages"],
    ["no model", { messages: [{ role: "user", content: "hi" }] }, 400, "invalid_request", "model"],
    ["an unknown part type", { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "audio", audio: {} }] }] }, 400, "invalid_request", undefined],
    [
      "a malformed data URL (bad base64)",
      { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "text", text: "x" }, { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo" } }] }] },
      400,
      "invalid_request",
      "messages[0].content[1].image_url.url",
    ],
    [
      "a data URL without base64",
      { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png,hello" } }] }] },
      400,
      "invalid_request",
      "messages[0].content[0].image_url.url",
    ],
    [
      "a data URL without a MIME type in a file part",
      { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [image, { type: "file", file: { file_data: "data:;base64,aGk=" } }] }] },
      400,
      "invalid_request",
      "messages[0].content[1].file.file_data",
    ],
    [
      "a non-http URL",
      { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "file:///etc/passwd" } }] }] },
      400,
      "invalid_request",
      "messages[0].content[0].image_url.url",
    ],
    [
      "bytes of no supported format",
      { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: dataUrl("image/png", Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 200, 201])) } }] }] },
      400,
      "unsupported_format",
      undefined,
    ],
    [
      "an office document (RTF) as a data URL",
      { model: UPSTREAM_MODEL, messages: [{ role: "user", content: [{ type: "file", file: { filename: "a.rtf", file_data: dataUrl("application/rtf", Buffer.from("{\\rtf1\\ansi Hello}")) } }] }] },
      503,
      "conversion_not_available",
      undefined,
    ],
    [
      "an office document (RTF) as an image_url on a local model",
      { model: "local/tesseract", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: dataUrl("application/rtf", Buffer.from("{\\rtf1\\ansi Hello}")) } }] }] },
      503,
      "conversion_not_available",
      undefined,
    ],
  ])("%s", async (_what, body, status, code, param) => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const { result: r, sent } = await upstreamCalls(() => chat(stack, acc.adminKey, body));
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(typeof r.body.error.message).toBe("string");
    if (param !== undefined) expect(r.body.error.param).toBe(param);
    expect(sent).toEqual([]);
    expect(await usageRows(acc.accountId)).toEqual([]);
    expect(await balance(stack, acc.adminKey)).toBe(1000);
  });

  it("402 insufficient_credits when the account has no credits, not logged, nothing sent upstream", async () => {
    const acc = await createTestAccount({ creditsCents: 0 });
    for (const model of [UPSTREAM_MODEL, "local/tesseract"]) {
      const { result: r, sent } = await upstreamCalls(() => chat(stack, acc.adminKey, { model, messages: [{ role: "user", content: [image] }] }));
      expect(r.status, JSON.stringify(r.body)).toBe(402);
      expect(r.body.error.code).toBe("insufficient_credits");
      expect(r.body.error.required_cents).toBeGreaterThanOrEqual(1);
      expect(sent).toEqual([]);
    }
    expect(await usageRows(acc.accountId)).toEqual([]);
  });

  it("401 without a key and 403 without chat:write", async () => {
    const body = { model: UPSTREAM_MODEL, messages: [{ role: "user", content: "hi" }] };
    expect((await call(stack.edge, "POST", "/v1/chat/completions", undefined, body)).status).toBe(401);
    const acc = await createTestAccount();
    const ro = await call(stack.edge, "POST", "/v1/api-keys", acc.adminKey, { name: "ro", permissions: ["models:read"] });
    expect(ro.status, JSON.stringify(ro.body)).toBe(200);
    const r = await chat(stack, ro.body.key, body);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("permission_denied");
  });
});
