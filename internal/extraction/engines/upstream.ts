/**
 * The OpenRouter-compatible chat client and the engine that reads one page
 * image with an upstream vision model.
 *
 * Errors: every failure becomes a {@link FolioError} `upstream_error` (HTTP
 * 502) with `upstream_status` (the upstream's HTTP status, or null when no
 * response arrived) and, when the upstream sent one, `upstream_code`.
 * `retryable` is true for 408, 429, 5xx, timeouts, connection failures,
 * malformed or empty answers, and errors reported inside a 200 body with such
 * a code; a Retry-After header from the upstream is passed on in `headers`.
 * 401/402/403 from the upstream concern Folio's own upstream account, so the
 * message says so instead of echoing the upstream's text. No message ever
 * contains the API key.
 *
 * Retry policy (STYLE.md: retries name their reasons; never retry a paid call
 * blindly): at most ONE retry, with the same model and the same body, after a
 * short pause, and only when the upstream cannot have started (and billed)
 * the work:
 * - the connection could not be made at all (ECONNREFUSED, ENOTFOUND,
 *   EAI_AGAIN, EHOSTUNREACH, ENETUNREACH, connect timeout): the request never
 *   left this process;
 * - HTTP 502, 503 or 504: the gateway reports that no provider produced an
 *   answer, which OpenRouter does not bill.
 * Never retried: 429 (retrying makes rate limiting worse; the caller gets
 * Retry-After), 500 and other statuses, timeouts and connections that broke
 * after the request was sent (the call may have been billed), errors inside a
 * 200 body, malformed answers. A failure is never retried with another model.
 *
 * Streams (`chatCompletionStream`) follow the same policy up to the stream's
 * first byte; once it began, nothing is retried: an error chunk, a broken or
 * truncated stream end it with the error beside whatever usage it reported.
 * What a stream that was cut cost is asked of the provider's own record of
 * the generation (`generationCost`, docs/adr/0002-streamed-chat-billing.md).
 */
import { setTimeout as delay } from "node:timers/promises";
import { reportedUsdToCents, type Decimal } from "../../billing/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { CatalogModel, Engine, ExtractOptions, PageInput, PageResult } from "../types.ts";
import { buildPagePrompt } from "./prompts.ts";
import { parsePageAnswer } from "./tables.ts";
import { isRecord, parseJson, readBounded } from "../util.ts";

export interface UpstreamClientOptions {
  /** e.g. `https://openrouter.ai/api/v1` (no trailing `/chat/completions`). */
  baseUrl: string;
  apiKey: string;
  /** Time limit of one attempt, headers and body, milliseconds. */
  timeoutMs: number;
  fetchImpl?: typeof fetch;
  /** Pause before the one allowed retry, milliseconds (default 250). */
  retryDelayMs?: number;
  /** Bound on a response body (default 16 MiB). */
  maxResponseBytes?: number;
  /**
   * Pauses between the tries of a generation's cost lookup: the provider
   * records a generation a few seconds after it ends (default 0.5, 1, 2, 4 s).
   */
  generationLookupDelaysMs?: readonly number[];
}

export interface ChatCompletionResult {
  id: string;
  content: string;
  finishReason: string;
  promptTokens: number;
  completionTokens: number;
  /** `usage.cost` (dollars) in cents, exact; null when the upstream did not report it. */
  reportedCostCents: Decimal | null;
  /** The parsed response body. */
  raw: unknown;
}

/** One event of a streamed completion: a piece of the answer, then its end. */
export type UpstreamStreamEvent = { kind: "delta"; content: string; generationId: string } | { kind: "end"; result: UpstreamStreamResult };

export interface UpstreamStreamResult {
  /** The generation id (OpenRouter's "gen-…"), "" when the stream never named it. */
  id: string;
  finishReason: string;
  promptTokens: number;
  completionTokens: number;
  /** `usage.cost` (dollars) in cents, exact; null when the stream did not report it. */
  reportedCostCents: Decimal | null;
  /** The stream reported usage (OpenRouter sends it in the last chunk, with an error too). */
  usageSeen: boolean;
  /** The stream failed after it began: an error chunk, a broken or truncated stream. */
  error?: FolioError;
}

/** What the provider recorded for one generation (`GET /generation?id=`). */
export type GenerationRecord = { found: false } | { found: true; promptTokens: number; completionTokens: number; costCents: Decimal };

/** Connection error codes that prove the request never reached the upstream. */
const NOT_CONNECTED_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);
/** Statuses after which one same-model retry is safe (no provider answered, nothing billed). */
const RETRY_STATUSES = new Set([502, 503, 504]);
const DEFAULT_RETRY_DELAY_MS = 250;
const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
const DEFAULT_GENERATION_LOOKUP_DELAYS_MS = [500, 1000, 2000, 4000];
const MAX_MESSAGE_CHARS = 500;

type Failed = { ok: false; error: FolioError; retrySafe: boolean };
type Attempt = { ok: true; result: ChatCompletionResult } | Failed;
/** A request whose answer's head came. */
type Sent = { ok: true; res: Response; timeout: AbortSignal; signal: AbortSignal };
/** A streamed request that got its answer's head: an event stream, or one JSON body (an upstream that does not stream). */
type Opened = Sent | { ok: true; result: ChatCompletionResult } | Failed;

export class UpstreamClient {
  readonly #base: string;
  readonly #lookupDelaysMs: readonly number[];
  readonly #url: string;
  readonly #apiKey: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #retryDelayMs: number;
  readonly #maxBytes: number;

  constructor(opts: UpstreamClientOptions) {
    this.#base = opts.baseUrl.replace(/\/+$/, "");
    this.#url = `${this.#base}/chat/completions`;
    this.#lookupDelaysMs = opts.generationLookupDelaysMs ?? DEFAULT_GENERATION_LOOKUP_DELAYS_MS;
    this.#apiKey = opts.apiKey;
    this.#timeoutMs = opts.timeoutMs;
    this.#fetch = opts.fetchImpl ?? fetch;
    this.#retryDelayMs = opts.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
    this.#maxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  }

  /**
   * One non-streamed chat completion (`stream: false`, `usage: {include: true}` are set).
   * @param signal cancels the call; the promise then rejects with `signal.reason`
   * @throws FolioError `upstream_error` (see the file header)
   */
  async chatCompletion(body: Record<string, unknown>, signal: AbortSignal): Promise<ChatCompletionResult> {
    const payload = JSON.stringify({ ...body, stream: false, usage: { include: true } });
    const first = await this.#attempt(payload, signal);
    if (first.ok) return first.result;
    if (!first.retrySafe) throw first.error;
    await sleep(this.#retryDelayMs, signal);
    const second = await this.#attempt(payload, signal);
    if (second.ok) return second.result;
    throw second.error;
  }

  /**
   * One streamed chat completion (`stream: true`, with usage in the last
   * chunk): yields the answer's text as the upstream sends it, then one end
   * with the usage. Failures before the stream began throw (and are retried
   * once exactly like {@link chatCompletion}); a failure after it began (an
   * error chunk, a broken or truncated stream) is the end's `error`, beside
   * whatever usage the stream reported.
   * @param signal cancels the call (the caller's client went away); the
   *   generator then rejects with `signal.reason`
   * @throws FolioError `upstream_error` before the stream began
   */
  async *chatCompletionStream(body: Record<string, unknown>, signal: AbortSignal): AsyncGenerator<UpstreamStreamEvent> {
    const payload = JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true }, usage: { include: true } });
    let opened = await this.#open(payload, signal);
    if (!opened.ok && opened.retrySafe) {
      await sleep(this.#retryDelayMs, signal);
      opened = await this.#open(payload, signal);
    }
    if (!opened.ok) throw opened.error;
    if ("result" in opened) {
      // The upstream answered with one JSON completion: the same events, all at once.
      const r = opened.result;
      if (r.content) yield { kind: "delta", content: r.content, generationId: r.id };
      yield { kind: "end", result: { id: r.id, finishReason: r.finishReason, promptTokens: r.promptTokens, completionTokens: r.completionTokens, reportedCostCents: r.reportedCostCents, usageSeen: true } };
      return;
    }
    yield* this.#events(opened.res, opened.timeout, signal);
  }

  /** Sends a streamed request and reads its head: an event stream to read, or an error. */
  async #open(payload: string, signal: AbortSignal): Promise<Opened> {
    const sent = await this.#post(payload, signal, "text/event-stream");
    if (!sent.ok) return sent;
    const type = (sent.res.headers.get("content-type") ?? "").toLowerCase();
    if (sent.res.ok && type.startsWith("text/event-stream")) return sent;
    // An error, or an upstream that answers in one piece: a JSON body.
    const read = await this.#readJson(sent, signal);
    return read.ok ? { ok: true, result: read.result } : read;
  }

  /** Reads an event stream to its end: deltas as they come, then the end (with an error when it broke). */
  async *#events(res: Response, timeout: AbortSignal, signal: AbortSignal): AsyncGenerator<UpstreamStreamEvent> {
    const result: UpstreamStreamResult = { id: "", finishReason: "unknown", promptTokens: 0, completionTokens: 0, reportedCostCents: null, usageSeen: false };
    const events = sseData(res, this.#maxBytes);
    let done = false;
    try {
      for await (const data of events) {
        if (data === "[DONE]") {
          done = true;
          break;
        }
        const chunk = parseJson(data);
        if (!isRecord(chunk)) {
          result.error ??= this.#error("the model provider sent a malformed stream chunk", 200, { retryable: true });
          continue;
        }
        if (typeof chunk.id === "string" && chunk.id && !result.id) result.id = chunk.id;
        if (chunk.error !== undefined && chunk.error !== null) result.error ??= this.#bodyError(200, chunk.error, {});
        if (isRecord(chunk.usage)) {
          result.usageSeen = true;
          result.promptTokens = tokenCount(chunk.usage.prompt_tokens);
          result.completionTokens = tokenCount(chunk.usage.completion_tokens);
          result.reportedCostCents = reportedUsdToCents(chunk.usage.cost);
        }
        const choice: unknown = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
        if (!isRecord(choice)) continue;
        if (isRecord(choice.error)) result.error ??= this.#bodyError(200, choice.error, {});
        if (typeof choice.finish_reason === "string") {
          result.finishReason = choice.finish_reason;
          if (choice.finish_reason === "error") result.error ??= this.#error("the model provider stopped with an error", 200, { retryable: true });
        }
        const content = isRecord(choice.delta) ? messageContent(choice.delta.content) : "";
        if (content && !result.error) yield { kind: "delta", content, generationId: result.id };
      }
      if (!done && !result.usageSeen) result.error ??= this.#error("the model provider's stream ended before it was complete", 200, { retryable: true });
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      result.error ??= timeout.aborted
        ? this.#timeoutError()
        : this.#error("the connection to the model provider broke during the stream", 200, { retryable: true, cause: err });
    } finally {
      // Stops the upstream's work when the reader leaves early (the caller was cancelled).
      await events.return(undefined).catch(() => undefined);
    }
    yield { kind: "end", result };
  }

  /**
   * What the provider billed for one generation, by its own record
   * (OpenRouter's `GET /generation?id=`): asked when a stream was cut before
   * its usage chunk. The record appears a few seconds after the generation
   * ends, so a 404 is tried again after each pause of
   * `generationLookupDelaysMs`; `found: false` when it never appears.
   */
  async generationCost(id: string, signal: AbortSignal): Promise<GenerationRecord> {
    const url = `${this.#base}/generation?id=${encodeURIComponent(id)}`;
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      const found = await this.#generation(url, signal);
      if (found) return found;
      const pause = this.#lookupDelaysMs[attempt];
      if (pause === undefined) return { found: false };
      await sleep(pause, signal);
    }
  }

  /** One try of the lookup: the record, or undefined when the provider has none (yet) or did not answer. */
  async #generation(url: string, signal: AbortSignal): Promise<GenerationRecord | undefined> {
    try {
      const res = await this.#fetch(url, {
        headers: { authorization: `Bearer ${this.#apiKey}`, accept: "application/json" },
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.#timeoutMs)]),
      });
      const json = parseJson(await readBounded(res, this.#maxBytes));
      const data = isRecord(json) && isRecord(json.data) ? json.data : undefined;
      const costCents = data ? reportedUsdToCents(data.total_cost) : null;
      if (!res.ok || !data || !costCents) return undefined;
      const tokens = (native: unknown, plain: unknown) => (typeof native === "number" ? tokenCount(native) : tokenCount(plain));
      return { found: true, promptTokens: tokens(data.native_tokens_prompt, data.tokens_prompt), completionTokens: tokens(data.native_tokens_completion, data.tokens_completion), costCents };
    } catch {
      // Not reachable or not answering: the same as no record yet (tried again after the next pause).
      if (signal.aborted) throw signal.reason;
      return undefined;
    }
  }

  async #attempt(payload: string, signal: AbortSignal): Promise<Attempt> {
    const sent = await this.#post(payload, signal, "application/json");
    return sent.ok ? this.#readJson(sent, signal) : sent;
  }

  /** Posts a request: the answer's head, or why none came (a connection that failed, the time limit). */
  async #post(payload: string, signal: AbortSignal, accept: string): Promise<Sent | Failed> {
    signal.throwIfAborted();
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = AbortSignal.any([signal, timeout]);
    try {
      const res = await this.#fetch(this.#url, {
        method: "POST",
        headers: { authorization: `Bearer ${this.#apiKey}`, "content-type": "application/json", accept },
        body: payload,
        signal: combined,
      });
      return { ok: true, res, timeout, signal: combined };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (timeout.aborted) return { ok: false, error: this.#timeoutError(), retrySafe: false };
      const code = errorCode(err);
      const notConnected = code !== undefined && NOT_CONNECTED_CODES.has(code);
      const error = this.#error(
        notConnected ? `could not connect to the model provider (${code})` : `the connection to the model provider failed${code ? ` (${code})` : ""}`,
        null,
        { retryable: true, cause: err },
      );
      return { ok: false, error, retrySafe: notConnected };
    }
  }

  /** Reads an answer in one JSON body: a completion, or the error it says. */
  async #readJson({ res, timeout }: Sent, signal: AbortSignal): Promise<Attempt> {
    const headers = retryAfter(res.headers.get("retry-after"));
    let text: string;
    try {
      text = await readBounded(res, this.#maxBytes);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (timeout.aborted) return { ok: false, error: this.#timeoutError(), retrySafe: false };
      return { ok: false, error: this.#error("the model provider's answer could not be read", res.status, { retryable: true, cause: err, headers }), retrySafe: false };
    }
    const json = parseJson(text);
    if (!res.ok) return { ok: false, error: this.#statusError(res.status, json, headers), retrySafe: RETRY_STATUSES.has(res.status) };
    if (json === undefined) {
      return { ok: false, error: this.#error("the model provider answered with malformed JSON", res.status, { retryable: true, headers }), retrySafe: false };
    }
    return this.#parseSuccess(res.status, json, headers);
  }

  #parseSuccess(status: number, json: unknown, headers: Record<string, string>): Attempt {
    if (!isRecord(json)) return { ok: false, error: this.#error("the model provider answered with a body that is not an object", status, { retryable: true }), retrySafe: false };
    if (json.error !== undefined && json.error !== null) return { ok: false, error: this.#bodyError(status, json.error, headers), retrySafe: false };
    const choices = json.choices;
    if (!Array.isArray(choices) || choices.length === 0) {
      return { ok: false, error: this.#error("the model provider returned no choices", status, { retryable: true, headers }), retrySafe: false };
    }
    const choice: unknown = choices[0];
    if (!isRecord(choice)) return { ok: false, error: this.#error("the model provider returned a malformed choice", status, { retryable: true }), retrySafe: false };
    if (isRecord(choice.error)) return { ok: false, error: this.#bodyError(status, choice.error, headers), retrySafe: false };
    const finishReason = typeof choice.finish_reason === "string" ? choice.finish_reason : "unknown";
    if (finishReason === "error") {
      return { ok: false, error: this.#error("the model provider stopped with an error", status, { retryable: true, headers }), retrySafe: false };
    }
    const usage = isRecord(json.usage) ? json.usage : {};
    return {
      ok: true,
      result: {
        id: typeof json.id === "string" ? json.id : "",
        content: messageContent(isRecord(choice.message) ? choice.message.content : undefined),
        finishReason,
        promptTokens: tokenCount(usage.prompt_tokens),
        completionTokens: tokenCount(usage.completion_tokens),
        reportedCostCents: reportedUsdToCents(usage.cost),
        raw: json,
      },
    };
  }

  #statusError(status: number, json: unknown, headers: Record<string, string>): FolioError {
    const err = isRecord(json) && isRecord(json.error) ? json.error : undefined;
    if (status === 401 || status === 402 || status === 403) {
      return this.#error(
        `the model provider refused Folio's upstream account (HTTP ${status}); this is a service problem, not a problem with your request`,
        status,
        { retryable: false, headers, upstreamCode: err?.code },
      );
    }
    const detail = err ? describeUpstreamError(err) : "";
    const retryable = status === 408 || status === 429 || status >= 500;
    return this.#error(`the model provider answered HTTP ${status}${detail ? `: ${detail}` : ""}`, status, { retryable, headers, upstreamCode: err?.code });
  }

  #bodyError(status: number, raw: unknown, headers: Record<string, string>): FolioError {
    const err = isRecord(raw) ? raw : {};
    const code = err.code;
    const numeric = typeof code === "number" ? code : typeof code === "string" && /^\d{3}$/.test(code) ? Number(code) : undefined;
    const retryable = numeric === undefined || numeric === 408 || numeric === 429 || numeric >= 500;
    const detail = describeUpstreamError(err);
    return this.#error(`the model provider reported an error${detail ? `: ${detail}` : ""}`, status, { retryable, headers, upstreamCode: code });
  }

  #timeoutError(): FolioError {
    return this.#error(`the model provider did not answer within ${this.#timeoutMs} ms`, null, { retryable: true });
  }

  #error(
    message: string,
    upstreamStatus: number | null,
    o: { retryable: boolean; headers?: Record<string, string>; cause?: unknown; upstreamCode?: unknown },
  ): FolioError {
    const extra: Record<string, unknown> = { upstream_status: upstreamStatus };
    if (typeof o.upstreamCode === "number" || typeof o.upstreamCode === "string") extra.upstream_code = this.#redact(String(o.upstreamCode).slice(0, 64));
    return new FolioError("upstream_error", this.#redact(message), {
      retryable: o.retryable,
      extra,
      headers: o.headers ?? {},
      cause: o.cause,
    });
  }

  #redact(s: string): string {
    return this.#apiKey === "" ? s : s.split(this.#apiKey).join("[redacted]");
  }
}

/**
 * Reads one page image with an upstream vision model: the page goes as a
 * data URL next to the prompts of `prompts.ts`, at temperature 0, and the
 * answer is parsed by `tables.ts`.
 */
export class UpstreamEngine implements Engine {
  readonly id: string;
  readonly #client: UpstreamClient;
  readonly #maxTokens: number | undefined;

  /**
   * @param model the catalog model (or its id); the engine id is the model id
   * @param maxTokens caps completion tokens per page (bounds what a hold must
   *   cover); the provider's default when absent or not a positive integer
   */
  constructor(model: CatalogModel | string, client: UpstreamClient, maxTokens?: number) {
    this.id = typeof model === "string" ? model : model.id;
    this.#client = client;
    this.#maxTokens = maxTokens !== undefined && Number.isSafeInteger(maxTokens) && maxTokens > 0 ? maxTokens : undefined;
  }

  async extractPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageResult> {
    const prompt = buildPagePrompt(options);
    const body: Record<string, unknown> = {
      model: this.id,
      temperature: 0,
      messages: [
        { role: "system", content: prompt.system },
        {
          role: "user",
          content: [
            { type: "text", text: prompt.user },
            { type: "image_url", image_url: { url: `data:${page.mimeType};base64,${page.image.toString("base64")}` } },
          ],
        },
      ],
    };
    if (this.#maxTokens !== undefined) body.max_tokens = this.#maxTokens;
    const r = await this.#client.chatCompletion(body, signal);
    const parsed = parsePageAnswer(r.content, page.pageNumber, options);
    const result: PageResult = {
      text: parsed.text,
      tables: parsed.tables,
      usage: { promptTokens: r.promptTokens, completionTokens: r.completionTokens, reportedCostCents: r.reportedCostCents },
    };
    if (parsed.confidence !== undefined) result.confidence = parsed.confidence;
    return result;
  }
}

function messageContent(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p: unknown) => (isRecord(p) && typeof p.text === "string" ? p.text : typeof p === "string" ? p : ""))
      .join("");
  }
  return "";
}

function tokenCount(v: unknown): number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

function describeUpstreamError(err: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof err.message === "string" && err.message.trim() !== "") parts.push(err.message.trim());
  const meta = isRecord(err.metadata) ? err.metadata : undefined;
  const provider = typeof meta?.provider_name === "string" ? meta.provider_name : undefined;
  const raw = typeof meta?.raw === "string" ? meta.raw : undefined;
  if (provider || raw) parts.push(`(${[provider, raw].filter(Boolean).join(": ")})`);
  const s = parts.join(" ");
  return s.length > MAX_MESSAGE_CHARS ? `${s.slice(0, MAX_MESSAGE_CHARS)}…` : s;
}

function retryAfter(value: string | null): Record<string, string> {
  if (value === null) return {};
  const v = value.trim();
  if (/^\d{1,6}$/.test(v) || (v.length <= 40 && /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(v))) return { "Retry-After": v };
  return {};
}

function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && typeof e === "object" && e !== null; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}




/**
 * The `data` of each server-sent event of a response body, in order (comment
 * lines such as OpenRouter's `: OPENROUTER PROCESSING` are skipped), bounded
 * by `max` bytes in all.
 */
async function* sseData(res: Response, max: number): AsyncGenerator<string> {
  if (!res.body) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  let size = 0;
  let finished = false;
  // A CR that ends a network chunk may be half of a CRLF: it is read with the next chunk.
  let cr = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) throw new Error(`the stream is larger than ${max} bytes`);
      let text = cr + decoder.decode(value, { stream: true });
      cr = text.endsWith("\r") ? "\r" : "";
      if (cr) text = text.slice(0, -1);
      buffered += text.replace(/\r\n?/g, "\n");
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const event = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = event
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /, ""));
        if (data.length) yield data.join("\n");
      }
    }
    finished = true;
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
  }
}

/** Waits `ms`; rejects with the signal's own reason when it aborts first (node's timer rejects with an AbortError of its own). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => {
    throw signal.reason as Error;
  });
}
