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
 */
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

/** Connection error codes that prove the request never reached the upstream. */
const NOT_CONNECTED_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"]);
/** Statuses after which one same-model retry is safe (no provider answered, nothing billed). */
const RETRY_STATUSES = new Set([502, 503, 504]);
const DEFAULT_RETRY_DELAY_MS = 250;
const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
const MAX_MESSAGE_CHARS = 500;

type Attempt = { ok: true; result: ChatCompletionResult } | { ok: false; error: FolioError; retrySafe: boolean };

export class UpstreamClient {
  readonly #url: string;
  readonly #apiKey: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #retryDelayMs: number;
  readonly #maxBytes: number;

  constructor(opts: UpstreamClientOptions) {
    this.#url = `${opts.baseUrl.replace(/\/+$/, "")}/chat/completions`;
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

  async #attempt(payload: string, signal: AbortSignal): Promise<Attempt> {
    signal.throwIfAborted();
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = AbortSignal.any([signal, timeout]);
    let res: Response;
    let text: string;
    try {
      res = await this.#fetch(this.#url, {
        method: "POST",
        headers: { authorization: `Bearer ${this.#apiKey}`, "content-type": "application/json", accept: "application/json" },
        body: payload,
        signal: combined,
      });
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
    const headers = retryAfter(res.headers.get("retry-after"));
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




function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
