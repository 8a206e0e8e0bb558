/**
 * Streamed chat completions (`stream: true`) end to end with the official
 * `openai` SDK: edge → gRPC ChatStream → extraction service → the fake
 * OpenRouter upstream replaying recorded streams (a test double) or real
 * tesseract, billed in real Postgres. What is charged when a stream ends
 * well, fails inside the provider's stream, or loses its client; keep-alives;
 * errors before the first byte; an Idempotency-Key's replay.
 */
import OpenAI, { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Decimal } from "../internal/billing/index.ts";
import { call, createTestAccount, startStack, upstreamStack, usageRows, type TestAccount, type TestStack } from "./harness.ts";
import { ocrFixture, ocrTruth } from "./support.ts";
import { cer } from "./cer.ts";
import { FAKE_UPSTREAM_MODEL as UPSTREAM_MODEL, type FakeBehaviour } from "./fake-upstream.ts";

/** The model of the recorded stream openrouter_stream_image_claude-3.5-sonnet_2025-08-06.sse. */
const RECORDED_MODEL = "anthropic/claude-3.5-sonnet";
const RECORDED_STREAM = "openrouter_stream_image_claude-3.5-sonnet_2025-08-06.sse";
const MIDSTREAM_ERROR = "openrouter_stream_midstream_error.sse";

const image = (name: string) => ({ type: "image_url" as const, image_url: { url: `data:image/png;base64,${ocrFixture(name).toString("base64")}` } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The fake upstream (a test double of OpenRouter) and a stack on it. */
const env = upstreamStack();
/** Another stack on the same upstream, with keep-alives every 100 ms. */
let chatty: TestStack;
beforeAll(async () => {
  chatty = await startStack({ upstream: env.upstream, edgeEnv: { FOLIO_SSE_KEEPALIVE_SECONDS: "0.1" } });
});
afterAll(async () => {
  await chatty?.close();
});

function sdk(s: TestStack, acc: TestAccount, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ apiKey: acc.adminKey, baseURL: `${s.edge.url}/v1`, maxRetries: 0, defaultHeaders: headers });
}

/** Streams english.png through the upstream model as `acc`, with the usage chunk unless told otherwise. */
function streamPage(s: TestStack, acc: TestAccount, includeUsage = true) {
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: "user", content: [image("english.png")] }];
  return sdk(s, acc).chat.completions.create({ model: UPSTREAM_MODEL, messages, stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) });
}

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk & { folio?: Record<string, number> };

/** Iterates a streamed completion to its end; the chunks, or the error the SDK raised with the chunks before it. */
async function collect(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>): Promise<{ chunks: Chunk[]; error?: unknown }> {
  const chunks: Chunk[] = [];
  try {
    for await (const c of stream) chunks.push(c as Chunk);
    return { chunks };
  } catch (error) {
    return { chunks, error };
  }
}

const contentOf = (chunks: Chunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");

async function balance(s: TestStack, acc: TestAccount): Promise<{ balance_cents: number; held_cents: number }> {
  return (await call(s.edge, "GET", "/v1/account/balance", acc.adminKey)).body as { balance_cents: number; held_cents: number };
}

/** The account's usage rows once `n` exist (a stream whose client left settles after the client is gone). */
async function settledRows(acc: TestAccount, n = 1): Promise<Awaited<ReturnType<typeof usageRows>>> {
  for (let i = 0; i < 150; i++) {
    const rows = await usageRows(acc.accountId);
    if (rows.length >= n) return rows;
    await sleep(100);
  }
  throw new Error(`no ${n} usage rows after 15 s`);
}

/** Exact cents of a usage row's decimal column. */
const cents = (v: unknown) => new Decimal(String(v));

/** A raw streamed request (fetch), for what the SDK hides: headers, comments, bytes. */
async function rawStream(s: TestStack, acc: TestAccount, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.edge.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${acc.adminKey}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A raw streamed request of the English page to the upstream model, which answers it once as `behaviour`. */
async function streamEnglishPage(s: TestStack, acc: TestAccount, behaviour: FakeBehaviour) {
  env.upstream.script(UPSTREAM_MODEL, behaviour, { times: 1 });
  return rawStream(s, acc, { model: UPSTREAM_MODEL, stream: true, messages: [{ role: "user", content: [image("english.png")] }] });
}

describe("stream: true on an upstream model", () => {
  it("relays the provider's stream as chat.completion.chunk objects, and the usage chunk reports what the answer in one piece would", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const client = sdk(env.stack, acc);
    const text = "The committee met on Tuesday to approve the budget.";
    const messages = [{ role: "user" as const, content: [{ type: "text" as const, text: "Read it." }, image("english.png")] }];
    env.upstream.script(UPSTREAM_MODEL, { kind: "stream", text }, { times: 1 });
    const stream = await client.chat.completions.create({ model: UPSTREAM_MODEL, messages, stream: true, stream_options: { include_usage: true } });
    const { chunks, error } = await collect(stream);
    expect(error).toBeUndefined();
    expect(contentOf(chunks)).toBe(text);
    // The provider's pieces arrive as pieces (a word each), not as one block.
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(5);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.id).toMatch(/^req_/);
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === UPSTREAM_MODEL)).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish?.choices[0]!.finish_reason).toBe("stop");
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);

    // The same answer in one piece: the usage and the folio fields are the same numbers.
    env.upstream.script(UPSTREAM_MODEL, { kind: "text", text }, { times: 1 });
    const whole = await client.chat.completions.create({ model: UPSTREAM_MODEL, messages });
    expect(last.usage).toEqual(whole.usage);
    expect(last.folio).toEqual((whole as unknown as { folio: Record<string, number> }).folio);

    const rows = await usageRows(acc.accountId);
    expect(rows.map((r) => [r.id, r.status])).toEqual([
      [chunks[0]!.id, "success"],
      [whole.id, "success"],
    ]);
    expect(Number(rows[0]!.cost_cents)).toBe(last.folio!.total_cost_cents);
    expect(await balance(env.stack, acc)).toMatchObject({ balance_cents: 10_000 - 2 * last.folio!.total_cost_cents!, held_cents: 0 });
  });

  it("a recorded OpenRouter stream is charged exactly its reported usage.cost", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    env.upstream.script(RECORDED_MODEL, { kind: "sse-fixture", name: RECORDED_STREAM }, { times: 1 });
    const stream = await sdk(env.stack, acc).chat.completions.create({
      model: RECORDED_MODEL,
      messages: [{ role: "user", content: [{ type: "text", text: "Describe image in three words" }, image("english.png")] }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const { chunks, error } = await collect(stream);
    expect(error).toBeUndefined();
    expect(contentOf(chunks)).toBe("Red green geometric shapes");
    const last = chunks.at(-1)!;
    expect(last.usage).toEqual({ prompt_tokens: 82, completion_tokens: 7, total_tokens: 89 });
    // usage.cost 0.000351 $ = 0.0351 cents; 5% fee; charged the 1-cent minimum.
    expect(last.folio).toEqual({ provider_cost_cents: 0.0351, platform_fee_cents: 0.001755, conversion_cost_cents: 0, total_cost_cents: 1, pages_processed: 1 });
    const rows = await usageRows(acc.accountId);
    expect(rows).toHaveLength(1);
    expect(cents(rows[0]!.provider_cost_cents).toFixed()).toBe("0.0351");
    expect(await balance(env.stack, acc)).toMatchObject({ balance_cents: 999, held_cents: 0 });
  });

  it("a PDF for the provider's parser: the parser's pages are their own component, as in the answer in one piece", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const client = sdk(env.stack, acc);
    const file = { type: "file" as const, file: { filename: "ten-pages.pdf", file_data: `data:application/pdf;base64,${ocrFixture("ten-pages.pdf").toString("base64")}` } };
    const request = {
      model: UPSTREAM_MODEL,
      messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "Summarise." }, file] }],
      plugins: [{ id: "file-parser", pdf: { engine: "mistral-ocr" } }],
    };
    env.upstream.script(UPSTREAM_MODEL, { kind: "stream", text: "Ten pages of text." }, { times: 1 });
    const { chunks, error } = await collect(await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } } as never as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming));
    expect(error).toBeUndefined();
    expect(env.upstream.chatRequests().at(-1)!.body).toMatchObject({ stream: true, plugins: [{ id: "file-parser", pdf: { engine: "mistral-ocr" } }] });
    env.upstream.script(UPSTREAM_MODEL, { kind: "text", text: "Ten pages of text." }, { times: 1 });
    const whole = (await client.chat.completions.create(request as never as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming)) as unknown as { folio: Record<string, number> };
    expect(chunks.at(-1)!.folio).toEqual(whole.folio);
    // 10 parser pages × 0.2 cent + 5% = 2.1 → 3 cents, beside the model call's own charge.
    expect(whole.folio).toMatchObject({ pages_processed: 10 });
    expect(whole.folio.total_cost_cents).toBeGreaterThanOrEqual(4);
  });

  it("without stream_options the stream has no usage chunk and no usage fields", async () => {
    const acc = await createTestAccount();
    const r = await streamEnglishPage(env.stack, acc, { kind: "stream", text: "two words" });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = r.text.split("\n\n").filter(Boolean);
    expect(events.at(-1)).toBe("data: [DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice("data: ".length)) as Record<string, unknown>);
    expect(chunks.every((c) => !("usage" in c) && !("folio" in c))).toBe(true);
    expect(chunks.map((c) => (c.choices as { delta: { content?: string } }[])[0]!.delta.content ?? "").join("")).toBe("two words");
  });
});

describe("an upstream error inside the stream", () => {
  /** The recorded mid-stream error, with text before the error and a cost in its usage (the recording's model is free). */
  const billedError = (text: string) =>
    text
      .replace('"content":"","reasoning":"We need"', '"content":"Hello","reasoning":"We need"')
      .replace('"content":"","reasoning":" to respond', '"content":" world","reasoning":" to respond')
      .replace('"cost":0,', '"cost":0.0001234,');

  it("ends the stream with an error event in OpenAI's format and charges what the provider reported billing", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    env.upstream.script(UPSTREAM_MODEL, { kind: "sse-fixture", name: MIDSTREAM_ERROR, transform: billedError }, { times: 1 });
    const stream = await streamPage(env.stack, acc);
    const { chunks, error } = await collect(stream);
    expect(contentOf(chunks)).toBe("Hello world");
    expect(error, String(error)).toBeInstanceOf(APIError);
    expect((error as APIError).error).toMatchObject({ code: "upstream_error", upstream_status: 200, upstream_code: "400" });
    expect((error as APIError).message).toContain("Token limit reached");
    // The usage chunk before the error says what was charged: the provider's 0.01234 cents, the minimum charge.
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 43, completion_tokens: 10, total_tokens: 53 });
    expect(usage.folio).toMatchObject({ provider_cost_cents: 0.01234, total_cost_cents: 1 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((r) => [r.status, Number(r.cost_cents)])).toEqual([["error", 1]]);
    expect(cents(rows[0]!.provider_cost_cents).toFixed()).toBe("0.01234");
    expect(await balance(env.stack, acc)).toMatchObject({ balance_cents: 999, held_cents: 0 });
  });

  it("a provider connection dropped mid-stream: an error event, charged the provider's record of the generation", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    env.upstream.script(UPSTREAM_MODEL, { kind: "stream-drop", text: "alpha beta gamma delta", pieces: 2 }, { times: 1 });
    const stream = await streamPage(env.stack, acc);
    const { chunks, error } = await collect(stream);
    expect(contentOf(chunks)).toBe("alpha beta ");
    expect((error as APIError).error).toMatchObject({ code: "upstream_error", message: "the connection to the model provider broke during the stream" });
    const generation = [...env.upstream.generations.values()].at(-1)!;
    const provider = generation.cost.mul(100);
    expect(chunks.at(-1)!.folio).toMatchObject({ provider_cost_cents: provider.toNumber(), total_cost_cents: 1 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((r) => [r.status, Number(r.cost_cents)])).toEqual([["error", 1]]);
    expect(cents(rows[0]!.provider_cost_cents).toFixed()).toBe(provider.toFixed());
  });

  it("the recorded error before any text is a plain 502 (nothing was sent yet), charged its cost of 0", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    env.upstream.script(UPSTREAM_MODEL, { kind: "sse-fixture", name: MIDSTREAM_ERROR }, { times: 1 });
    const err = await sdk(env.stack, acc)
      .chat.completions.create({ model: UPSTREAM_MODEL, messages: [{ role: "user", content: [image("english.png")] }], stream: true })
      .then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(502);
    expect((err as APIError).error).toMatchObject({ code: "upstream_error", upstream_status: 200 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((r) => [r.status, Number(r.cost_cents)])).toEqual([["error", 0]]);
    expect(await balance(env.stack, acc)).toMatchObject({ balance_cents: 1000, held_cents: 0 });
  });

  it("the same recorded error after keep-alives opened the stream is an error event", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    // 23 events, 50 ms apart: the 100 ms keep-alive opens the stream long before the error.
    const r = await streamEnglishPage(chatty, acc, { kind: "sse-fixture", name: MIDSTREAM_ERROR, eventDelayMs: 50 });
    expect(r.status).toBe(200);
    expect(r.text.startsWith(": keep-alive\n\n")).toBe(true);
    const data = r.text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
    expect(data.at(-1)).toBe("[DONE]");
    expect(JSON.parse(data.at(-2)!)).toMatchObject({ error: { code: "upstream_error", upstream_code: "400" } });
    expect((await usageRows(acc.accountId)).map((r) => r.status)).toEqual(["error"]);
  });
});

describe("a client that goes away mid-stream", () => {
  it("upstream: the provider's call is cut, and the request is charged the provider's record of the work done", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const text = "one two three four five six seven eight nine ten";
    env.upstream.script(UPSTREAM_MODEL, { kind: "stream-stall", text, pieces: 3 }, { times: 1 });
    const before = env.upstream.generations.size;
    const stream = await streamPage(env.stack, acc, false);
    let got = "";
    for await (const c of stream) {
      got += c.choices[0]?.delta.content ?? "";
      if (got === "one two three ") break; // the SDK aborts the request
    }
    const rows = await settledRows(acc);
    const generation = [...env.upstream.generations.values()].at(-1)!;
    expect(env.upstream.generations.size).toBe(before + 1);
    // The fake saw its client (the extraction service) go: the record is of a cancelled generation of three pieces.
    expect(generation).toMatchObject({ cancelled: true, completionTokens: Math.ceil("one two three ".length / 4) });
    expect(rows.map((r) => r.status)).toEqual(["error"]);
    expect(cents(rows[0]!.provider_cost_cents).toFixed()).toBe(generation.cost.mul(100).toFixed());
    expect(Number(rows[0]!.cost_cents)).toBe(1);
    expect(await balance(env.stack, acc)).toMatchObject({ balance_cents: 999, held_cents: 0 });
  });

  it("never more than the hold: a provider record above it is charged the hold", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    env.upstream.script(UPSTREAM_MODEL, { kind: "stream-stall", text: "one two three four", pieces: 2 }, { times: 1 });
    const stream = await streamPage(env.stack, acc, false);
    for await (const c of stream) {
      if (c.choices[0]?.delta.content !== "two ") continue;
      // The provider's record says this generation cost a dollar: far above the hold (1 cent for one page of this model).
      [...env.upstream.generations.values()].at(-1)!.cost = new Decimal(1);
      break;
    }
    const rows = await settledRows(acc);
    expect(rows.map((r) => [r.status, Number(r.cost_cents)])).toEqual([["error", 1]]);
    expect(cents(rows[0]!.provider_cost_cents).toFixed()).toBe("100");
    expect(await balance(env.stack, acc)).toMatchObject({ balance_cents: 999, held_cents: 0 });
  });

  it("local engine: charged the pages already read, not the rest", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const pages = ["english.png", "scan.png", "german.png", "columns.png", "table.png", "english.png"];
    const stream = await sdk(env.stack, acc).chat.completions.create({
      model: "local/tesseract",
      messages: [{ role: "user", content: pages.map(image) }],
      stream: true,
    });
    for await (const c of stream) if (c.choices[0]?.delta.content) break;
    const rows = await settledRows(acc);
    expect(rows.map((r) => r.status)).toEqual(["error"]);
    const read = rows[0]!.pages_processed;
    expect(read).toBeGreaterThanOrEqual(1);
    expect(read).toBeLessThan(pages.length);
    // 0.001 $ a page = 0.1 cents each, exact.
    expect(cents(rows[0]!.provider_cost_cents).toFixed()).toBe(new Decimal("0.1").mul(read).toFixed());
    expect(await balance(env.stack, acc)).toMatchObject({ balance_cents: 999, held_cents: 0 });
  });
});

describe("the extraction service going away mid-stream", () => {
  it("ends the stream with a service_unavailable error event; nothing is charged when nobody can say what the provider billed", async () => {
    const own = await startStack({ upstream: env.upstream });
    try {
      const acc = await createTestAccount({ creditsCents: 1000 });
      env.upstream.script(UPSTREAM_MODEL, { kind: "stream-stall", text: "first second third", pieces: 1 }, { times: 1 });
      const stream = await streamPage(own, acc, false);
      const it = stream[Symbol.asyncIterator]();
      expect((await it.next()).value?.choices[0]?.delta.content).toBe("first ");
      const closing = own.extraction.close(); // the stalled call is cut after the server's 5 s grace
      const rest = await collect({ [Symbol.asyncIterator]: () => it });
      await closing;
      expect(rest.error).toBeInstanceOf(APIError);
      expect((rest.error as APIError).error).toMatchObject({ code: "service_unavailable" });
      const rows = await settledRows(acc);
      expect(rows.map((r) => [r.status, Number(r.cost_cents)])).toEqual([["error", 0]]);
      expect(await balance(own, acc)).toMatchObject({ balance_cents: 1000, held_cents: 0 });
    } finally {
      await own.edge.close();
    }
  }, 20_000);
});

describe("stream: true on a local engine", () => {
  it("sends a chunk per page as each is read; the usage chunk is the answer in one piece's", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const client = sdk(env.stack, acc);
    const messages = [{ role: "user" as const, content: [image("english.png"), image("scan.png")] }];
    const { chunks, error } = await collect(await client.chat.completions.create({ model: "local/tesseract", messages, stream: true, stream_options: { include_usage: true } }));
    expect(error).toBeUndefined();
    const pieces = chunks.map((c) => c.choices[0]?.delta.content ?? "").filter(Boolean);
    expect(pieces).toHaveLength(2);
    expect(cer(pieces[0]!, ocrTruth("english.txt"))).toBeLessThan(0.05);
    expect(pieces[1]!.startsWith("\n\n")).toBe(true);
    expect(cer(pieces[1]!.trim(), ocrTruth("scan.txt"))).toBeLessThan(0.1);
    const whole = await client.chat.completions.create({ model: "local/tesseract", messages });
    expect(contentOf(chunks)).toBe(whole.choices[0]!.message.content);
    expect(chunks.at(-1)!.folio).toEqual((whole as unknown as { folio: Record<string, number> }).folio);
    expect(chunks.at(-1)!.folio).toMatchObject({ pages_processed: 2, total_cost_cents: 1 });
    expect((await usageRows(acc.accountId)).map((r) => [r.status, r.pages_processed])).toEqual([
      ["success", 2],
      ["success", 2],
    ]);
  });

  it("a PDF's pages are rendered and read one by one, a chunk each", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const file = { type: "file" as const, file: { filename: "multipage.pdf", file_data: `data:application/pdf;base64,${ocrFixture("multipage.pdf").toString("base64")}` } };
    const { chunks, error } = await collect(
      await sdk(env.stack, acc).chat.completions.create({ model: "local/tesseract", messages: [{ role: "user", content: [file] }], stream: true, stream_options: { include_usage: true } }),
    );
    expect(error).toBeUndefined();
    const pieces = chunks.map((c) => c.choices[0]?.delta.content ?? "").filter(Boolean);
    expect(pieces).toHaveLength(3);
    for (const [i, piece] of pieces.entries()) expect(cer(piece.trim(), ocrTruth(`multipage.page-${i + 1}.txt`)), `page ${i + 1}`).toBeLessThan(0.1);
    expect(chunks.at(-1)!.folio).toMatchObject({ pages_processed: 3, total_cost_cents: 1 });
  });

  it("keeps a slow stream alive with comments at the configured interval, which the SDK ignores", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const body = { model: "local/tesseract", stream: true, messages: [{ role: "user", content: [image("english.png"), image("german.png")] }] };
    const started = Date.now();
    const r = await rawStream(chatty, acc, body);
    const elapsed = Date.now() - started;
    const events = r.text.split("\n\n").filter(Boolean);
    const keepAlives = events.filter((e) => e === ": keep-alive").length;
    // Tesseract takes far longer than 100 ms per page: silence was filled.
    expect(keepAlives, `${elapsed} ms, ${keepAlives} keep-alives`).toBeGreaterThanOrEqual(2);
    expect(events.every((e) => e === ": keep-alive" || e.startsWith("data: "))).toBe(true);
    const { chunks, error } = await collect(
      await sdk(chatty, acc).chat.completions.create({ model: "local/tesseract", stream: true, messages: [{ role: "user", content: [image("english.png")] }] }),
    );
    expect(error).toBeUndefined();
    expect(cer(contentOf(chunks), ocrTruth("english.txt"))).toBeLessThan(0.05);
  });
});

describe("errors before the first byte keep their JSON answers", () => {
  it.each([
    ["an unknown model", { model: "nobody/nothing" }, 400, "unsupported_model"],
    ["the file-parser plugin on a local engine", { model: "local/tesseract", plugins: [{ id: "file-parser", pdf: { engine: "mistral-ocr" } }] }, 400, "invalid_request"],
  ])("%s: %s", async (_what, extra, status, code) => {
    const acc = await createTestAccount();
    const r = await rawStream(env.stack, acc, { stream: true, messages: [{ role: "user", content: [image("english.png")] }], ...extra });
    expect(r.status).toBe(status);
    expect(r.headers.get("content-type")).toContain("application/json");
    expect(JSON.parse(r.text)).toMatchObject({ error: { code } });
  });

  it("no credit: 402 insufficient_credits through the SDK, nothing logged", async () => {
    const acc = await createTestAccount({ creditsCents: 0 });
    const err = await sdk(env.stack, acc)
      .chat.completions.create({ model: UPSTREAM_MODEL, messages: [{ role: "user", content: [image("english.png")] }], stream: true })
      .then(() => undefined, (e: unknown) => e);
    expect((err as APIError).status).toBe(402);
    expect((err as APIError).error).toMatchObject({ code: "insufficient_credits" });
    expect(await usageRows(acc.accountId)).toEqual([]);
  });

  it("the provider refusing before its stream (429): 502 upstream_error with the upstream's Retry-After, charged 0", async () => {
    const acc = await createTestAccount();
    const r = await streamEnglishPage(env.stack, acc, { kind: "rate-limited", retryAfter: "7" });
    expect(r.status).toBe(502);
    expect(r.headers.get("retry-after")).toBe("7");
    expect(JSON.parse(r.text)).toMatchObject({ error: { code: "upstream_error", upstream_status: 429 } });
    expect((await usageRows(acc.accountId)).map((r) => [r.status, Number(r.cost_cents)])).toEqual([["error", 0]]);
  });
});

describe("Idempotency-Key on a streamed request", () => {
  it("a retry gets the same stream again, byte for byte, as an event stream, charged once", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const body = { model: UPSTREAM_MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: "user", content: [image("english.png")] }] };
    const headers = { "Idempotency-Key": `stream-${Date.now()}` };
    env.upstream.script(UPSTREAM_MODEL, { kind: "stream", text: "kept for the retry" }, { times: 1 });
    const first = await rawStream(env.stack, acc, body, headers);
    const again = await rawStream(env.stack, acc, body, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(again.text).toBe(first.text);
    // The SDK reads the replay like any stream.
    const { chunks, error } = await collect(await sdk(env.stack, acc, headers).chat.completions.create(body as never as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming));
    expect(error).toBeUndefined();
    expect(contentOf(chunks)).toBe("kept for the retry");
    const rows = await usageRows(acc.accountId);
    expect(rows).toHaveLength(1);
    expect(chunks.at(-1)!.folio!.total_cost_cents).toBe(Number(rows[0]!.cost_cents));
  });

  it("a client that goes away under a key does not stop the work: the retry gets the whole answer", async () => {
    const acc = await createTestAccount({ creditsCents: 1000 });
    const headers = { "Idempotency-Key": `gone-${Date.now()}` };
    const body = { model: UPSTREAM_MODEL, stream: true as const, messages: [{ role: "user" as const, content: [image("english.png")] }] };
    env.upstream.script(UPSTREAM_MODEL, { kind: "stream", text: "slow words arrive one by one", pieceDelayMs: 100 }, { times: 1 });
    const stream = await sdk(env.stack, acc, headers).chat.completions.create(body);
    for await (const c of stream) if (c.choices[0]?.delta.content) break;
    const rows = await settledRows(acc);
    expect(rows.map((r) => r.status)).toEqual(["success"]);
    const { chunks } = await collect(await sdk(env.stack, acc, headers).chat.completions.create(body));
    expect(contentOf(chunks)).toBe("slow words arrive one by one");
    expect(await usageRows(acc.accountId)).toHaveLength(1);
  });
});
