// The upstream chat client against the fake OpenRouter upstream: success and
// exact cost, error mapping for every scripted behaviour, the one-retry
// policy, and the page engine.
import { describe, expect, it, vi } from "vitest";
import { createServer } from "node:net";
import { FolioError, errorBody, httpStatusOf, toHttpError } from "../../platform/errors/index.ts";
import { FAKE_TABLE_ROWS, fakeUsage, loadFixture, loadModelsSnapshot } from "../../../test/fake-upstream.ts";
import { fakeUpstreamForFile } from "../../../test/harness.ts";
import { UpstreamClient, UpstreamEngine } from "./upstream.ts";

const MODEL = "openai/gpt-4.1-mini";
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "base64");

const fakeUpstream = fakeUpstreamForFile();

function client(over: Partial<ConstructorParameters<typeof UpstreamClient>[0]> = {}): UpstreamClient {
  return new UpstreamClient({ baseUrl: fakeUpstream().baseUrl, apiKey: fakeUpstream().apiKey, timeoutMs: 2_000, retryDelayMs: 10, ...over });
}

function imageBody(model = MODEL): Record<string, unknown> {
  return {
    model,
    messages: [{ role: "user", content: [{ type: "text", text: "Read this" }, { type: "image_url", image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` } }] }],
  };
}

async function failure(p: Promise<unknown>): Promise<FolioError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof FolioError) return e;
    throw e;
  }
  throw new Error("expected the call to fail");
}

const signal = () => new AbortController().signal;
const pricing = (id: string) => loadModelsSnapshot().data.find((m) => m.id === id)?.pricing as Record<string, unknown>;

describe("UpstreamClient success", () => {
  it("posts a non-streamed completion with usage accounting and the bearer key", async () => {
    const r = await client().chatCompletion(imageBody(), signal());
    expect(r).toMatchObject({ id: "gen-fake-1", content: "FAKE OCR TEXT 1", finishReason: "stop" });
    const [req] = fakeUpstream().chatRequests();
    expect(req?.headers.authorization).toBe(`Bearer ${fakeUpstream().apiKey}`);
    expect(req?.headers["content-type"]).toBe("application/json");
    expect(req?.body).toMatchObject({ model: MODEL, stream: false, usage: { include: true } });
  });

  it("reports tokens and the exact cost in cents", async () => {
    const r = await client().chatCompletion(imageBody(), signal());
    const u = fakeUsage(pricing(MODEL), "Read this".length, 1, r.content);
    expect(r.promptTokens).toBe(u.prompt_tokens);
    expect(r.completionTokens).toBe(u.completion_tokens);
    expect(r.reportedCostCents?.toFixed()).toBe(u.cost.mul(100).toFixed());
  });

  it("returns null cost when the upstream does not report one", async () => {
    fakeUpstream().script(MODEL, { kind: "text", text: "x", omitCost: true });
    expect((await client().chatCompletion(imageBody(), signal())).reportedCostCents).toBeNull();
  });

  it("reads the recorded OpenRouter completions exactly", async () => {
    for (const [file, cents, content] of [
      ["openrouter_chat_completion_file_input_gpt-4.1-mini.json", "0.0086", /Dummy PDF file/],
      ["openrouter_chat_completion_usage_gpt-5-mini.json", "0.435825", /Mars/],
    ] as const) {
      const recorded = loadFixture(file);
      const fetchImpl = vi.fn<typeof fetch>(async () => new Response(JSON.stringify(recorded), { status: 200 }));
      const r = await client({ fetchImpl }).chatCompletion({ model: "x" }, signal());
      expect(r.reportedCostCents?.toFixed()).toBe(cents);
      expect(r.content).toMatch(content);
      expect(r.finishReason).toBe("stop");
      expect(r.raw).toEqual(recorded);
    }
  });
});

describe("UpstreamClient errors", () => {
  it("maps 429 with the recorded body to a retryable 502, passes Retry-After, and does not retry", async () => {
    fakeUpstream().script(MODEL, { kind: "rate-limited", retryAfter: "7" });
    const e = await failure(client().chatCompletion(imageBody(), signal()));
    expect(httpStatusOf(e.code)).toBe(502);
    expect(e.retryable).toBe(true);
    expect(e.headers).toEqual({ "Retry-After": "7" });
    expect(errorBody(e).error).toMatchObject({ code: "upstream_error", upstream_status: 429, upstream_code: "429" });
    expect(e.message).toMatch(/HTTP 429: Provider returned error \(Google: google\/gemini-2\.0-flash-exp:free is temporarily rate-limited/);
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
  });

  it("does not retry a 500", async () => {
    fakeUpstream().script(MODEL, { kind: "status", status: 500 });
    const e = await failure(client().chatCompletion(imageBody(), signal()));
    expect(errorBody(e).error).toMatchObject({ code: "upstream_error", upstream_status: 500 });
    expect(e.retryable).toBe(true);
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
  });

  it.each([502, 503, 504])("retries a %i exactly once with the same model and body, then succeeds", async (status) => {
    fakeUpstream().script(MODEL, { kind: "status", status }, { times: 1 });
    const r = await client().chatCompletion(imageBody(), signal());
    expect(r.content).toBe("FAKE OCR TEXT 1");
    const reqs = fakeUpstream().chatRequests();
    expect(reqs).toHaveLength(2);
    expect(reqs[1]?.body).toEqual(reqs[0]?.body);
  });

  it("gives up after one retry of a 502", async () => {
    fakeUpstream().script(MODEL, { kind: "status", status: 502 });
    const e = await failure(client().chatCompletion(imageBody(), signal()));
    expect(errorBody(e).error).toMatchObject({ upstream_status: 502 });
    expect(e.retryable).toBe(true);
    expect(fakeUpstream().chatRequests()).toHaveLength(2);
  });

  it("maps an error inside a 200 body and does not retry it", async () => {
    fakeUpstream().script(MODEL, { kind: "error-in-200", code: 502, message: "Provider returned error" });
    const e = await failure(client().chatCompletion(imageBody(), signal()));
    expect(errorBody(e).error).toMatchObject({ code: "upstream_error", upstream_status: 200, upstream_code: "502" });
    expect(e.message).toMatch(/reported an error: Provider returned error/);
    expect(e.retryable).toBe(true);
    expect(fakeUpstream().chatRequests()).toHaveLength(1);

    fakeUpstream().reset();
    fakeUpstream().script(MODEL, { kind: "error-in-200", code: 400, message: "Token limit reached" });
    expect((await failure(client().chatCompletion(imageBody(), signal()))).retryable).toBe(false);
  });

  it("maps malformed JSON and empty choices", async () => {
    fakeUpstream().script(MODEL, { kind: "malformed" }, { times: 1 });
    const m = await failure(client().chatCompletion(imageBody(), signal()));
    expect(m.message).toMatch(/malformed JSON/);
    expect(errorBody(m).error).toMatchObject({ upstream_status: 200 });

    fakeUpstream().script(MODEL, { kind: "empty-choices" }, { times: 1 });
    const e = await failure(client().chatCompletion(imageBody(), signal()));
    expect(e.message).toMatch(/no choices/);
    expect(fakeUpstream().chatRequests()).toHaveLength(2);
  });

  it("maps the recorded 404 for an unknown model, not retryable", async () => {
    const e = await failure(client().chatCompletion(imageBody("acme/gone"), signal()));
    expect(errorBody(e).error).toMatchObject({ upstream_status: 404, upstream_code: "404" });
    expect(e.message).toMatch(/No endpoints found for acme\/gone/);
    expect(e.retryable).toBe(false);
  });

  it("says a refused upstream key is a service problem and never shows the key", async () => {
    const e = await failure(client({ apiKey: "sk-or-v1-WRONG-secret" }).chatCompletion(imageBody(), signal()));
    expect(errorBody(e).error).toMatchObject({ upstream_status: 401 });
    expect(e.message).toMatch(/service problem/);
    expect(e.retryable).toBe(false);
    expect(JSON.stringify(toHttpError(e))).not.toContain("WRONG-secret");
  });

  it("redacts the key if the upstream echoes it", async () => {
    fakeUpstream().script(MODEL, { kind: "status", status: 400, body: { error: { code: 400, message: `bad key ${fakeUpstream().apiKey} in request` } } });
    const e = await failure(client().chatCompletion(imageBody(), signal()));
    expect(e.message).toContain("[redacted]");
    expect(JSON.stringify(toHttpError(e))).not.toContain(fakeUpstream().apiKey);
  });

  it("times out as a retryable error without retrying (the call may have been billed)", async () => {
    fakeUpstream().script(MODEL, { kind: "delay", ms: 1_000 });
    const e = await failure(client({ timeoutMs: 100 }).chatCompletion(imageBody(), signal()));
    expect(e.message).toMatch(/did not answer within 100 ms/);
    expect(errorBody(e).error).toMatchObject({ upstream_status: null });
    expect(e.retryable).toBe(true);
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
  });

  it("retries once when the connection cannot be made at all", async () => {
    const port = await closedPort();
    const calls: string[] = [];
    const fetchImpl: typeof fetch = (input, init) => {
      calls.push(String(input));
      return fetch(input, init);
    };
    const e = await failure(client({ baseUrl: `http://127.0.0.1:${port}`, fetchImpl }).chatCompletion(imageBody(), signal()));
    expect(e.message).toMatch(/could not connect to the model provider \(ECONNREFUSED\)/);
    expect(e.retryable).toBe(true);
    expect(calls).toHaveLength(2);
  });

  it("succeeds on the retry after a refused connection", async () => {
    let n = 0;
    const fetchImpl: typeof fetch = (input, init) => {
      n += 1;
      if (n === 1) return Promise.reject(new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) }));
      return fetch(input, init);
    };
    const r = await client({ fetchImpl }).chatCompletion(imageBody(), signal());
    expect(r.content).toBe("FAKE OCR TEXT 1");
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
  });

  it("does not retry a connection dropped after the request was sent", async () => {
    fakeUpstream().script(MODEL, { kind: "destroy" });
    const e = await failure(client().chatCompletion(imageBody(), signal()));
    expect(e.message).toMatch(/connection to the model provider failed/);
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
  });

  it("rejects with the caller's reason when cancelled, without retrying", async () => {
    fakeUpstream().script(MODEL, { kind: "delay", ms: 2_000 });
    const ac = new AbortController();
    const p = client().chatCompletion(imageBody(), ac.signal);
    setTimeout(() => ac.abort(new Error("client went away")), 50);
    await expect(p).rejects.toThrow("client went away");
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
  });

  it("cancels during the retry pause", async () => {
    fakeUpstream().script(MODEL, { kind: "status", status: 503 });
    const ac = new AbortController();
    const p = client({ retryDelayMs: 5_000 }).chatCompletion(imageBody(), ac.signal);
    setTimeout(() => ac.abort(new Error("stop")), 100);
    await expect(p).rejects.toThrow("stop");
    expect(fakeUpstream().chatRequests()).toHaveLength(1);
  });

  it("refuses an oversized response", async () => {
    fakeUpstream().script(MODEL, { kind: "text", text: "x".repeat(5_000) });
    const e = await failure(client({ maxResponseBytes: 1_000 }).chatCompletion(imageBody(), signal()));
    expect(e.message).toMatch(/could not be read/);
  });

  it("maps finish_reason error and array content", async () => {
    const respond = (body: unknown) => vi.fn<typeof fetch>(async () => new Response(JSON.stringify(body), { status: 200 }));
    const err = await failure(client({ fetchImpl: respond({ choices: [{ finish_reason: "error", message: { content: "" } }] }) }).chatCompletion({}, signal()));
    expect(err.message).toMatch(/stopped with an error/);
    const r = await client({ fetchImpl: respond({ choices: [{ message: { content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] } }] }) }).chatCompletion({}, signal());
    expect(r).toMatchObject({ content: "ab", finishReason: "unknown", id: "", promptTokens: 0, completionTokens: 0, reportedCostCents: null });
  });
});

describe("UpstreamEngine", () => {
  it("sends the page as a data URL with the prompts and returns a PageResult", async () => {
    const engine = new UpstreamEngine(MODEL, client(), 2048);
    expect(engine.id).toBe(MODEL);
    const r = await engine.extractPage({ pageNumber: 1, image: PNG, mimeType: "image/png" }, { extractTables: false, outputFormat: "text", language: "fr" }, signal());
    expect(r.text).toBe("FAKE OCR TEXT 1");
    expect(r.tables).toEqual([]);
    expect(r.confidence).toBeUndefined();
    expect(r.usage.reportedCostCents).not.toBeNull();
    const body = fakeUpstream().chatRequests()[0]?.body as { model: string; temperature: number; max_tokens: number; messages: { role: string; content: unknown }[] };
    expect(body).toMatchObject({ model: MODEL, temperature: 0, max_tokens: 2048 });
    expect(body.messages[0]).toMatchObject({ role: "system", content: expect.stringMatching(/OCR/) as string });
    expect(body.messages[1]?.content).toEqual([
      { type: "text", text: expect.stringMatching(/French \(fr\)/) as string },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG.toString("base64")}` } },
    ]);
  });

  it("parses a JSON-block table answer with confidence", async () => {
    fakeUpstream().script(MODEL, { kind: "table", format: "json" });
    const r = await new UpstreamEngine(MODEL, client()).extractPage({ pageNumber: 4, image: PNG, mimeType: "image/png" }, { extractTables: true, outputFormat: "text" }, signal());
    expect(r.tables).toEqual([
      { page_number: 4, rows: FAKE_TABLE_ROWS, markdown: "| Item | Qty | Price |\n| --- | --- | --- |\n| Apple | 2 | 1.20 |\n| Pear | 1 | 0.80 |", cells: expect.any(Array), html: expect.stringContaining("<td>Pear</td>") },
    ]);
    expect(r.confidence).toBe(0.87);
    expect(r.text).not.toContain("```");
    const body = fakeUpstream().chatRequests()[0]?.body as Record<string, unknown>;
    expect(body.max_tokens).toBeUndefined();
  });

  it("parses a Markdown table answer", async () => {
    fakeUpstream().script(MODEL, { kind: "table", format: "markdown" });
    const r = await new UpstreamEngine(MODEL, client()).extractPage({ pageNumber: 2, image: PNG, mimeType: "image/png" }, { extractTables: true, outputFormat: "markdown" }, signal());
    expect(r.tables[0]?.rows).toEqual(FAKE_TABLE_ROWS);
    expect(r.text).toMatch(/^# Fruit list/);
  });

  it("survives a junk answer", async () => {
    fakeUpstream().script(MODEL, { kind: "junk" });
    const r = await new UpstreamEngine(MODEL, client()).extractPage({ pageNumber: 1, image: PNG, mimeType: "image/png" }, { extractTables: true, outputFormat: "markdown" }, signal());
    expect(typeof r.text).toBe("string");
    expect(r.confidence).toBeUndefined();
    for (const t of r.tables) expect(t.rows.every((row) => row.every((c) => typeof c === "string"))).toBe(true);
  });

  it("propagates upstream errors as FolioError", async () => {
    fakeUpstream().script(MODEL, { kind: "rate-limited" });
    const e = await failure(new UpstreamEngine(MODEL, client()).extractPage({ pageNumber: 1, image: PNG, mimeType: "image/png" }, { extractTables: false, outputFormat: "text" }, signal()));
    expect(e.code).toBe("upstream_error");
  });
});

/** A loopback port with nothing listening. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
