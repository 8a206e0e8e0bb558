/**
 * TEST DOUBLE — never used in production.
 *
 * A fake OpenRouter-compatible API on 127.0.0.1 (random port) for tests of the
 * catalog, the upstream client and anything built on them:
 *
 * - `GET /models` serves the recorded OpenRouter snapshot
 *   (test/fixtures/openrouter/openrouter_models_2025-05-23.json), optionally
 *   transformed by `setModels(fn)`; `modelsBehaviour()` makes it answer 500,
 *   malformed JSON, or hang until `close()`.
 * - `POST /chat/completions` checks `Authorization: Bearer <apiKey>` (401 with
 *   an OpenRouter-style body otherwise), records every request, and answers
 *   deterministically: by default `FAKE OCR TEXT <n>` (n counts answered
 *   requests from 1) when the message has an image part, with usage tokens
 *   and `usage.cost` computed exactly from the snapshot prices of the model
 *   (see {@link fakeUsage}). An unknown model gets the recorded 404 body.
 * - `script(modelId | "*", behaviour, { times })` queues scripted answers
 *   (HTTP 429 with the recorded body, 500, 502 …, an error inside a 200 body,
 *   malformed JSON, junk, table answers, a delay, a dropped connection).
 *   Entries for the model are used before "*" entries, in the order queued;
 *   `times` (default: unlimited) counts the requests an entry answers.
 * - A request with `stream: true` is answered as OpenRouter streams
 *   (`text/event-stream`, the recorded shape of
 *   openrouter_stream_image_claude-3.5-sonnet_2025-08-06.sse: processing
 *   comments, a role chunk, the content in pieces, the finish chunk, a last
 *   chunk with usage and `usage.cost`, `data: [DONE]`), with the default or
 *   scripted text; `stream`, `sse-fixture`, `stream-stall` and `stream-drop`
 *   script it (a recorded stream replayed as it is, e.g. the mid-stream error
 *   one; a stream that stops after some pieces until the client goes away,
 *   or drops its connection).
 * - `GET /generation?id=` answers OpenRouter's generation record of every
 *   streamed generation: its tokens and `total_cost`, also for a stream the
 *   client cut (`cancelled: true`, the pieces sent until then), 404 for an
 *   unknown id.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { Decimal } from "../internal/billing/index.ts";

const FIXTURES = new URL("./fixtures/openrouter/", import.meta.url);

/** The recorded `GET /models` body (fresh copy per call). */
export function loadModelsSnapshot(): { data: Record<string, unknown>[] } {
  return JSON.parse(readFileSync(new URL("openrouter_models_2025-05-23.json", FIXTURES), "utf8")) as { data: Record<string, unknown>[] };
}

/** A recorded OpenRouter body from test/fixtures/openrouter/. */
export function loadFixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), "utf8")) as unknown;
}

export type FakeBehaviour =
  /** 200 with this content (usage and cost as by default unless omitCost). */
  | { kind: "text"; text: string; omitCost?: boolean }
  /** The recorded OpenRouter 429 body ("Provider returned error"). */
  | { kind: "rate-limited"; retryAfter?: string }
  /** Any status with an OpenRouter-style error body (or the given body). */
  | { kind: "status"; status: number; body?: unknown; retryAfter?: string }
  /** HTTP 200 whose body is `{error: {code, message}}`. */
  | { kind: "error-in-200"; code?: number; message?: string }
  /** HTTP 200 with a body that is not JSON. */
  | { kind: "malformed" }
  /** HTTP 200 with `choices: []`. */
  | { kind: "empty-choices" }
  /** HTTP 200 whose content is garbage: broken fences, half JSON, control characters. */
  | { kind: "junk" }
  /** HTTP 200 answering with a table, in the metadata JSON block or as a Markdown table. */
  | { kind: "table"; format: "json" | "markdown" }
  /** Waits, then answers with `then` (default answer when absent). */
  | { kind: "delay"; ms: number; then?: FakeBehaviour }
  /** Destroys the connection after reading the request, without any response. */
  | { kind: "destroy" }
  /** A stream (whatever the request's `stream`) of `text` (default answer when absent) in pieces, `pieceDelayMs` apart. */
  | { kind: "stream"; text?: string; pieceDelayMs?: number; omitCost?: boolean }
  /**
   * A recorded stream from test/fixtures/openrouter/ (`*.sse`) replayed byte
   * for byte (after `transform`, when given), `eventDelayMs` between its events.
   */
  | { kind: "sse-fixture"; name: string; eventDelayMs?: number; transform?: (text: string) => string }
  /** A stream that sends `pieces` pieces of `text`, then nothing until the client goes away (its record then says cancelled). */
  | { kind: "stream-stall"; text: string; pieces: number }
  /** A stream that sends `pieces` pieces of `text`, then drops the connection (no usage, no [DONE]; its record stays). */
  | { kind: "stream-drop"; text: string; pieces: number };

/** OpenRouter's record of one streamed generation (`GET /generation?id=`). */
export interface FakeGeneration {
  id: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  /** Dollars, exact. */
  cost: Decimal;
  cancelled: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body (undefined when none or not JSON). */
  body: unknown;
  /** `body.model` for chat requests. */
  model?: string;
  /** What the fake answered (status and JSON body when it sent one). */
  response?: { status: number; body?: unknown };
}

export interface FakeUpstreamOptions {
  /** The bearer key the fake accepts (default a fixed test key). */
  apiKey?: string;
}

export interface FakeUpstream {
  /** `http://127.0.0.1:<port>` — use as the upstream base URL. */
  baseUrl: string;
  apiKey: string;
  requests: RecordedRequest[];
  /** Transforms the snapshot's `data` for every later `GET /models`; `null` restores it. */
  setModels(fn: ((models: Record<string, unknown>[]) => unknown[]) | null): void;
  /** How `GET /models` answers: normally, HTTP 500, malformed JSON, or never. */
  modelsBehaviour(b: "ok" | "fail" | "malformed" | "hang"): void;
  script(modelId: string, behaviour: FakeBehaviour, opts?: { times?: number }): void;
  /** Forgets scripts and recorded requests and resets the page counter. */
  reset(): void;
  /** Chat requests only. */
  chatRequests(): RecordedRequest[];
  /** The generation records of streamed answers, by id. */
  generations: Map<string, FakeGeneration>;
  close(): Promise<void>;
}

/** A priced image model of the catalog fixture the fake answers: the upstream model the tests and the soak call. */
export const FAKE_UPSTREAM_MODEL = "openai/gpt-4.1-mini";

/** Tokens the fake charges per image part. */
export const FAKE_IMAGE_TOKENS = 258;

/**
 * The usage the fake reports: prompt tokens = 10 + ceil(chars of text parts / 4)
 * + 258 per image part; completion tokens = max(1, ceil(content length / 4));
 * cost (dollars) = prompt × prompt price + completion × completion price
 * + images × image price + request price, exact.
 */
export function fakeUsage(
  pricing: Record<string, unknown> | undefined,
  textChars: number,
  images: number,
  content: string,
): { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost: Decimal } {
  const prompt = 10 + Math.ceil(textChars / 4) + images * FAKE_IMAGE_TOKENS;
  const completion = Math.max(1, Math.ceil(content.length / 4));
  const price = (k: string) => {
    const v = pricing?.[k];
    return typeof v === "string" && /^\d+(\.\d+)?$/.test(v) ? new Decimal(v) : new Decimal(0);
  };
  const cost = price("prompt").mul(prompt).add(price("completion").mul(completion)).add(price("image").mul(images)).add(price("request"));
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cost };
}

export const FAKE_TABLE_ROWS = [
  ["Item", "Qty", "Price"],
  ["Apple", "2", "1.20"],
  ["Pear", "1", "0.80"],
];

export async function startFakeUpstream(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const apiKey = opts.apiKey ?? "sk-or-v1-fake-test-key-0123456789";
  const snapshot = loadModelsSnapshot();
  const rateLimitedBody = loadFixture("openrouter_error_429_provider_returned_error.json");
  const notFoundBody = loadFixture("openrouter_error_404_no_endpoints.json") as { error: { message: string } };
  let transform: ((models: Record<string, unknown>[]) => unknown[]) | null = null;
  let modelsMode: "ok" | "fail" | "malformed" | "hang" = "ok";
  let counter = 0;
  const scripts = new Map<string, { behaviour: FakeBehaviour; remaining: number }[]>();
  const requests: RecordedRequest[] = [];
  const generations = new Map<string, FakeGeneration>();

  const currentModels = (): unknown[] => {
    return transform ? transform(structuredClone(snapshot.data)) : snapshot.data;
  };
  const pricingOf = (id: string): Record<string, unknown> | undefined => {
    const hit = [...currentModels(), ...snapshot.data].find((m) => isRecord(m) && m.id === id);
    return isRecord(hit) && isRecord(hit.pricing) ? hit.pricing : undefined;
  };
  const nextScript = (model: string): FakeBehaviour | undefined => {
    for (const key of [model, "*"]) {
      const queue = scripts.get(key);
      const entry = queue?.[0];
      if (!queue || !entry) continue;
      entry.remaining -= 1;
      if (entry.remaining <= 0) queue.shift();
      return entry.behaviour;
    }
    return undefined;
  };

  const send = (res: ServerResponse, rec: RecordedRequest, status: number, body: unknown, headers: Record<string, string> = {}) => {
    rec.response = { status, body };
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };

  /**
   * Streams `content` in OpenRouter's recorded shape, a word a piece; with
   * `stallAfter`, stops after that many pieces until the client goes away.
   * The generation's record follows what was sent.
   */
  const streamChat = async (
    req: IncomingMessage,
    res: ServerResponse,
    rec: RecordedRequest,
    o: { model: string; content: string; textChars: number; images: number; pieceDelayMs?: number; omitCost?: boolean; stallAfter?: number; dropAfter?: number },
  ): Promise<void> => {
    counter += 1;
    const id = `gen-fake-stream-${counter}`;
    const gone = new Promise<void>((resolve) => req.socket.once("close", () => resolve()));
    const pieces = o.content.match(/\S+\s*|\s+/g) ?? [];
    const record = (sent: string, cancelled: boolean) => {
      const usage = fakeUsage(pricingOf(o.model), o.textChars, o.images, sent);
      generations.set(id, { id, model: o.model, promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, cost: usage.cost, cancelled });
      return usage;
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id, provider: "Fake", model: o.model, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), choices: [{ index: 0, delta, finish_reason: finish, native_finish_reason: finish, logprobs: null }], ...extra })}\n\n`;
    rec.response = { status: 200, body: { stream: id } };
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(": OPENROUTER PROCESSING\n\n");
    res.write(chunk({ role: "assistant", content: "" }, null));
    let sent = "";
    record(sent, true);
    for (const [i, piece] of pieces.entries()) {
      if (o.stallAfter !== undefined && i >= o.stallAfter) {
        await gone;
        return;
      }
      if (o.dropAfter !== undefined && i >= o.dropAfter) {
        // Let the pieces written so far reach the client before the connection goes.
        await new Promise((r) => setTimeout(r, 50));
        req.socket.destroy();
        return;
      }
      if (o.pieceDelayMs) await Promise.race([new Promise((r) => setTimeout(r, o.pieceDelayMs)), gone]);
      if (res.destroyed) return;
      res.write(chunk({ role: "assistant", content: piece }, null));
      sent += piece;
      record(sent, true);
    }
    if (o.stallAfter !== undefined) {
      await gone;
      return;
    }
    const usage = record(sent, false);
    res.write(chunk({ role: "assistant", content: "" }, "stop"));
    const usageJson: Record<string, unknown> = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens };
    if (!o.omitCost) usageJson.cost = Number(usage.cost.toString());
    res.write(chunk({ role: "assistant", content: "" }, null, { usage: usageJson }));
    res.end("data: [DONE]\n\n");
  };

  /** Replays a recorded stream byte for byte, event by event. */
  const replaySse = async (req: IncomingMessage, res: ServerResponse, rec: RecordedRequest, name: string, eventDelayMs = 0, transform?: (text: string) => string): Promise<void> => {
    const recorded = readFileSync(new URL(name, FIXTURES), "utf8");
    const text = transform ? transform(recorded) : recorded;
    rec.response = { status: 200, body: { fixture: name } };
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const event of text.split(/(?<=\n\n)/)) {
      if (res.destroyed || req.socket.destroyed) return;
      res.write(event);
      if (eventDelayMs) await new Promise((r) => setTimeout(r, eventDelayMs));
    }
    res.end();
  };

  const answerChat = async (req: IncomingMessage, res: ServerResponse, rec: RecordedRequest, behaviour: FakeBehaviour | undefined): Promise<void> => {
    const body = isRecord(rec.body) ? rec.body : {};
    const model = typeof body.model === "string" ? body.model : "";
    const { textChars, images } = countParts(body.messages);
    const streamed = body.stream === true;
    const defaultContent = () => (images > 0 ? `FAKE OCR TEXT ${counter + 1}` : `FAKE CHAT ANSWER ${counter + 1}`);
    const ok = (content: string, omitCost = false) => {
      counter += 1;
      const usage = fakeUsage(pricingOf(model), textChars, images, content);
      const usageJson: Record<string, unknown> = {
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        total_tokens: usage.total_tokens,
      };
      if (!omitCost) usageJson.cost = Number(usage.cost.toString());
      send(res, rec, 200, {
        id: `gen-fake-${counter}`,
        provider: "Fake",
        model,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        choices: [{ index: 0, finish_reason: "stop", native_finish_reason: "stop", logprobs: null, message: { role: "assistant", content, refusal: null } }],
        usage: usageJson,
      });
    };
    const b = behaviour;
    if (b === undefined) {
      if (streamed) await streamChat(req, res, rec, { model, content: defaultContent(), textChars, images });
      else ok(defaultContent());
      return;
    }
    switch (b.kind) {
      case "text":
        if (streamed) await streamChat(req, res, rec, { model, content: b.text, textChars, images, ...(b.omitCost ? { omitCost: true } : {}) });
        else ok(b.text, b.omitCost);
        return;
      case "stream":
        await streamChat(req, res, rec, { model, content: b.text ?? defaultContent(), textChars, images, ...(b.pieceDelayMs ? { pieceDelayMs: b.pieceDelayMs } : {}), ...(b.omitCost ? { omitCost: true } : {}) });
        return;
      case "sse-fixture":
        await replaySse(req, res, rec, b.name, b.eventDelayMs, b.transform);
        return;
      case "stream-stall":
        await streamChat(req, res, rec, { model, content: b.text, textChars, images, stallAfter: b.pieces });
        return;
      case "stream-drop":
        await streamChat(req, res, rec, { model, content: b.text, textChars, images, dropAfter: b.pieces });
        return;
      case "rate-limited":
        send(res, rec, 429, rateLimitedBody, b.retryAfter ? { "retry-after": b.retryAfter } : {});
        return;
      case "status":
        send(res, rec, b.status, b.body ?? { error: { code: b.status, message: `fake upstream status ${b.status}` } }, b.retryAfter ? { "retry-after": b.retryAfter } : {});
        return;
      case "error-in-200":
        send(res, rec, 200, { error: { code: b.code ?? 502, message: b.message ?? "Provider returned error" }, user_id: "user_fake" });
        return;
      case "malformed":
        rec.response = { status: 200 };
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"id": "gen-broken", "choices": [{"message": {"content": "FAKE');
        return;
      case "empty-choices":
        send(res, rec, 200, { id: "gen-empty", object: "chat.completion", model, choices: [], usage: { prompt_tokens: 1, completion_tokens: 0 } });
        return;
      case "junk":
        ok('```json\n{"tables": [{"rows": "nope"}, 42, null, {"rows": [[{"x":1}, null]]}], "confidence": "high"\n```\u0000\u0007 ```\n{{{ |||\n| a |\n|---|---|\n]]]');
        return;
      case "table":
        if (b.format === "json") {
          ok(`Fruit list\n\nItem\tQty\tPrice\nApple\t2\t1.20\nPear\t1\t0.80\n\n\`\`\`json\n${JSON.stringify({ tables: [{ rows: FAKE_TABLE_ROWS }], confidence: 0.87 })}\n\`\`\``);
        } else {
          ok("# Fruit list\n\n| Item | Qty | Price |\n| --- | ---: | ---: |\n| Apple | 2 | 1.20 |\n| Pear | 1 | 0.80 |\n");
        }
        return;
      case "delay":
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, b.ms);
          req.socket.once("close", () => {
            clearTimeout(t);
            resolve();
          });
        });
        if (res.destroyed || req.socket.destroyed) return;
        await answerChat(req, res, rec, b.then);
        return;
      case "destroy":
        rec.response = { status: 0 };
        req.socket.destroy();
        return;
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        body = text === "" ? undefined : (JSON.parse(text) as unknown);
      } catch {
        body = undefined;
      }
      const rec: RecordedRequest = { method: req.method ?? "", path, headers: req.headers, body };
      requests.push(rec);
      const authorized = req.headers.authorization === `Bearer ${apiKey}`;

      if (req.method === "GET" && path === "/models") {
        if (modelsMode === "hang") return;
        if (modelsMode === "fail") return send(res, rec, 500, { error: { code: 500, message: "fake upstream failure" } });
        if (modelsMode === "malformed") {
          rec.response = { status: 200 };
          res.writeHead(200, { "content-type": "application/json" });
          res.end('{"data": [');
          return;
        }
        return send(res, rec, 200, { data: currentModels() });
      }
      if (req.method === "GET" && path === "/generation") {
        if (!authorized) return send(res, rec, 401, { error: { code: 401, message: "No auth credentials found" } });
        const g = generations.get(new URL(req.url ?? "/", "http://fake").searchParams.get("id") ?? "");
        if (!g) return send(res, rec, 404, { error: { code: 404, message: "Generation not found" } });
        return send(res, rec, 200, {
          data: {
            id: g.id,
            model: g.model,
            streamed: true,
            cancelled: g.cancelled,
            total_cost: Number(g.cost.toString()),
            tokens_prompt: g.promptTokens,
            tokens_completion: g.completionTokens,
            native_tokens_prompt: g.promptTokens,
            native_tokens_completion: g.completionTokens,
          },
        });
      }
      if (req.method === "POST" && path === "/chat/completions") {
        if (!authorized) return send(res, rec, 401, { error: { code: 401, message: "No auth credentials found" } });
        const model = isRecord(body) && typeof body.model === "string" ? body.model : "";
        rec.model = model;
        const behaviour = nextScript(model);
        if (behaviour === undefined && pricingOf(model) === undefined) {
          return send(res, rec, 404, { ...notFoundBody, error: { code: 404, message: `No endpoints found for ${model}.` } });
        }
        answerChat(req, res, rec, behaviour).catch(() => res.destroy());
        return;
      }
      send(res, rec, 404, { error: { code: 404, message: "Not Found" } });
    });
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    setModels(fn) {
      transform = fn;
    },
    modelsBehaviour(b) {
      modelsMode = b;
    },
    script(modelId, behaviour, o = {}) {
      const queue = scripts.get(modelId) ?? [];
      queue.push({ behaviour, remaining: o.times ?? Number.POSITIVE_INFINITY });
      scripts.set(modelId, queue);
    },
    reset() {
      scripts.clear();
      requests.length = 0;
      generations.clear();
      counter = 0;
      transform = null;
      modelsMode = "ok";
    },
    chatRequests() {
      return requests.filter((r) => r.path === "/chat/completions");
    },
    generations,
    close() {
      return new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
}

function countParts(messages: unknown): { textChars: number; images: number } {
  let textChars = 0;
  let images = 0;
  if (!Array.isArray(messages)) return { textChars, images };
  for (const m of messages) {
    if (!isRecord(m)) continue;
    if (typeof m.content === "string") textChars += m.content.length;
    else if (Array.isArray(m.content)) {
      for (const p of m.content) {
        if (!isRecord(p)) continue;
        if (p.type === "text" && typeof p.text === "string") textChars += p.text.length;
        if (p.type === "image_url") images += 1;
      }
    }
  }
  return { textChars, images };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
