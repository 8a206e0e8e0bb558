// The upstream client's streamed completions against the fake OpenRouter
// upstream replaying recorded streams: the pieces as sent, the usage of the
// last chunk, errors inside the stream, broken and truncated streams, event
// boundaries anywhere in the bytes, and the generation record of a cut stream.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FolioError } from "../../platform/errors/index.ts";
import { fakeUpstreamForFile } from "../../../test/harness.ts";
import { UpstreamClient, type UpstreamStreamEvent, type UpstreamStreamResult } from "./upstream.ts";

const MODEL = "openai/gpt-4.1-mini";
const RECORDED = "openrouter_stream_image_claude-3.5-sonnet_2025-08-06.sse";
const MIDSTREAM_ERROR = "openrouter_stream_midstream_error.sse";
const recorded = (name: string) => readFileSync(new URL(`../../../test/fixtures/openrouter/${name}`, import.meta.url), "utf8");

const fakeUpstream = fakeUpstreamForFile();

function client(over: Partial<ConstructorParameters<typeof UpstreamClient>[0]> = {}): UpstreamClient {
  return new UpstreamClient({ baseUrl: fakeUpstream().baseUrl, apiKey: fakeUpstream().apiKey, timeoutMs: 2_000, retryDelayMs: 10, generationLookupDelaysMs: [], ...over });
}

const body = (model = MODEL) => ({ model, messages: [{ role: "user", content: [{ type: "text", text: "Read this" }] }] });

/** Every event of a stream: the pieces and the end's result. */
async function drain(events: AsyncIterable<UpstreamStreamEvent>): Promise<{ pieces: string[]; ids: string[]; end: UpstreamStreamResult }> {
  const pieces: string[] = [];
  const ids: string[] = [];
  let end: UpstreamStreamResult | undefined;
  for await (const e of events) {
    if (e.kind === "delta") {
      pieces.push(e.content);
      ids.push(e.generationId);
    } else end = e.result;
  }
  if (!end) throw new Error("the stream had no end");
  return { pieces, ids, end };
}

/** A fetch that answers `text` as an event stream, `size` bytes per network chunk. */
function fetchOf(text: string, size: number): typeof fetch {
  return async () => {
    const bytes = Buffer.from(text, "utf8");
    let at = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        controller.enqueue(new Uint8Array(bytes.subarray(at, at + size)));
        at += size;
      },
    });
    return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
}

describe("UpstreamClient.chatCompletionStream", () => {
  it("asks for a stream with usage, and relays the recorded stream's pieces and last-chunk usage exactly", async () => {
    fakeUpstream().script(MODEL, { kind: "sse-fixture", name: RECORDED }, { times: 1 });
    const { pieces, ids, end } = await drain(client().chatCompletionStream(body(), new AbortController().signal));
    expect(fakeUpstream().chatRequests()[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true }, usage: { include: true } });
    expect(pieces).toEqual(["Re", "d green", " geometric", " shapes"]);
    expect(new Set(ids)).toEqual(new Set(["gen-1754441344-pyQnLz9c6qI7tV48Fjp4"]));
    expect(end).toMatchObject({ id: "gen-1754441344-pyQnLz9c6qI7tV48Fjp4", finishReason: "stop", promptTokens: 82, completionTokens: 7, usageSeen: true });
    expect(end.reportedCostCents?.toFixed()).toBe("0.0351");
    expect(end.error).toBeUndefined();
  });

  it.each([1, 7, 64])("finds the same events when the bytes arrive %i at a time, with CRLF line ends", async (size) => {
    const text = recorded(RECORDED).replace(/\n/g, "\r\n");
    const { pieces, end } = await drain(client({ fetchImpl: fetchOf(text, size) }).chatCompletionStream(body(), new AbortController().signal));
    expect(pieces.join("")).toBe("Red green geometric shapes");
    expect(end).toMatchObject({ promptTokens: 82, completionTokens: 7, usageSeen: true });
  });

  it("an event whose JSON is split over several data lines is joined, whatever the chunking", async () => {
    // Lines of one event's data are joined with a newline: split where JSON allows whitespace.
    const event = (json: string) => `data: ${json.slice(0, json.indexOf(",") + 1)}\r\ndata: ${json.slice(json.indexOf(",") + 1)}\r\n\r\n`;
    const chunk = (content: string) => JSON.stringify({ id: "gen-x", choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    const usage = JSON.stringify({ id: "gen-x", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2, cost: 0.00001 } });
    const text = `: OPENROUTER PROCESSING\r\n\r\n${event(chunk("split "))}${event(chunk("lines"))}${event(usage)}data: [DONE]\r\n\r\n`;
    for (const size of [1, 2, 3, 5, 11]) {
      const { pieces, end } = await drain(client({ fetchImpl: fetchOf(text, size) }).chatCompletionStream(body(), new AbortController().signal));
      expect(pieces, `${size} bytes at a time`).toEqual(["split ", "lines"]);
      expect(end).toMatchObject({ promptTokens: 3, completionTokens: 2, usageSeen: true });
      expect(end.error).toBeUndefined();
    }
  });

  it("an error chunk inside the stream ends it with upstream_error, keeping the usage the chunk reported", async () => {
    fakeUpstream().script(MODEL, { kind: "sse-fixture", name: MIDSTREAM_ERROR }, { times: 1 });
    const { pieces, end } = await drain(client().chatCompletionStream(body(), new AbortController().signal));
    expect(pieces).toEqual([]); // the recording's deltas are reasoning, no content
    expect(end.error).toBeInstanceOf(FolioError);
    expect(end.error).toMatchObject({ code: "upstream_error", extra: { upstream_status: 200, upstream_code: "400" } });
    expect(end.error!.message).toContain("Token limit reached");
    expect(end).toMatchObject({ usageSeen: true, promptTokens: 43, completionTokens: 10 });
    expect(end.reportedCostCents?.toFixed()).toBe("0");
  });

  it("a stream cut before its usage and [DONE] ends with an error and no usage", async () => {
    const text = recorded(RECORDED);
    const cut = text.slice(0, text.indexOf('"content":" shapes"'));
    const { pieces, end } = await drain(client({ fetchImpl: fetchOf(cut.slice(0, cut.lastIndexOf("\n\n") + 2), 50) }).chatCompletionStream(body(), new AbortController().signal));
    expect(pieces.join("")).toBe("Red green geometric");
    expect(end.usageSeen).toBe(false);
    expect(end.error).toMatchObject({ code: "upstream_error", message: "the model provider's stream ended before it was complete" });
  });

  it("refusals before the stream are thrown as before: 429 with Retry-After, not retried; 503 retried once", async () => {
    fakeUpstream().script(MODEL, { kind: "rate-limited", retryAfter: "4" }, { times: 1 });
    const err = await drain(client().chatCompletionStream(body(), new AbortController().signal)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "upstream_error", extra: { upstream_status: 429 }, headers: { "Retry-After": "4" } });
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
    fakeUpstream().script(MODEL, { kind: "status", status: 503 }, { times: 1 });
    fakeUpstream().script(MODEL, { kind: "stream", text: "after a retry" }, { times: 1 });
    const { pieces } = await drain(client().chatCompletionStream(body(), new AbortController().signal));
    expect(pieces.join("")).toBe("after a retry");
    expect(fakeUpstream().chatRequests()).toHaveLength(3);
  });

  it("an upstream that answers one JSON completion gives the same events at once", async () => {
    fakeUpstream().script(MODEL, { kind: "text", text: "all in one" }, { times: 1 });
    // The fake streams when asked to; this fetch drops `stream` so it answers in one piece, as some upstreams do.
    const plain: typeof fetch = (url, init) => fetch(url, { ...init, body: JSON.stringify({ ...(JSON.parse(String(init?.body)) as object), stream: false }) });
    const { pieces, end } = await drain(client({ fetchImpl: plain }).chatCompletionStream(body(), new AbortController().signal));
    expect(pieces).toEqual(["all in one"]);
    expect(end).toMatchObject({ finishReason: "stop", usageSeen: true });
    expect(end.reportedCostCents!.gt(0)).toBe(true);
  });

  it("cancelling stops the upstream's stream, whose record then says what was generated", async () => {
    fakeUpstream().script(MODEL, { kind: "stream-stall", text: "alpha beta gamma delta", pieces: 2 }, { times: 1 });
    const ac = new AbortController();
    const got: string[] = [];
    let id = "";
    const err = await (async () => {
      for await (const e of client().chatCompletionStream(body(), ac.signal)) {
        if (e.kind !== "delta") continue;
        got.push(e.content);
        id = e.generationId;
        if (got.length === 2) ac.abort(new Error("client gone"));
      }
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(err)).toContain("client gone");
    expect(got).toEqual(["alpha ", "beta "]);
    const record = await client().generationCost(id, new AbortController().signal);
    expect(record).toMatchObject({ found: true, completionTokens: Math.ceil("alpha beta ".length / 4) });
    if (record.found) expect(record.costCents.toFixed()).toBe(fakeUpstream().generations.get(id)!.cost.mul(100).toFixed());
  });
});

describe("UpstreamClient.generationCost", () => {
  it("an unknown generation: found false after the configured tries", async () => {
    const started = Date.now();
    const r = await client({ generationLookupDelaysMs: [20, 20] }).generationCost("gen-nobody", new AbortController().signal);
    expect(r).toEqual({ found: false });
    expect(fakeUpstream().requests.filter((q) => q.path === "/generation")).toHaveLength(3);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
