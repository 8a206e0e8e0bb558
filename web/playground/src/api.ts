/**
 * Calls POST /v1/playground/process with XMLHttpRequest: it is the browser
 * API that reports upload progress, and its responseText grows while the
 * NDJSON progress events arrive.
 */
import type { ApiError, PlaygroundResult, ProgressEvent, StreamEvent } from "./types.ts";

export const PROCESS_PATH = "/v1/playground/process";

export interface ProcessRequest {
  key: string;
  file?: File;
  url?: string;
  model?: string;
  strategy?: string;
  extractTables: boolean;
  language?: string;
  /** Only these pages (`"1-3,5"`, docs/conversion.md "Pages"); all when absent. */
  pages?: string;
  outputFormat: "text" | "json" | "markdown";
  /** The page's layout with its words (a local model's), drawn over each page image. */
  includeLayout?: boolean;
}

/** A failed request, from the API (status > 0) or the network (status 0). */
export class RequestFailed extends Error {
  constructor(
    readonly status: number,
    readonly error: ApiError,
    /** Seconds from the Retry-After header, when there was one. */
    readonly retryAfterSeconds?: number,
  ) {
    super(error.message);
  }
}

/** What a POST with a body reports while the body goes out. */
export interface UploadHandlers {
  uploadProgress(loaded: number, total: number): void;
  uploaded(): void;
}

export interface Handlers extends UploadHandlers {
  event(e: ProgressEvent): void;
}

/** A request under way: its answer, and a way to stop it. */
export interface Running<T> {
  done: Promise<T>;
  cancel(): void;
}

export function processDocument(req: ProcessRequest, on: Handlers): Running<PlaygroundResult> {
  const xhr = new XMLHttpRequest();
  let settled = false;
  const done = new Promise<PlaygroundResult>((resolve, reject) => {
    const fail = (e: RequestFailed) => {
      if (!settled) {
        settled = true;
        reject(e);
      }
    };
    openUpload(xhr, PROCESS_PATH, req.key, "application/x-ndjson", on);

    let consumed = 0;
    let result: PlaygroundResult | undefined;
    let streamError: RequestFailed | undefined;
    const drain = (final: boolean) => {
      if (xhr.status !== 200) return;
      const text = xhr.responseText;
      let nl: number;
      while ((nl = text.indexOf("\n", consumed)) >= 0 || (final && consumed < text.length)) {
        const end = nl >= 0 ? nl : text.length;
        const line = text.slice(consumed, end).trim();
        consumed = end + 1;
        if (!line) continue;
        let ev: StreamEvent;
        try {
          ev = JSON.parse(line) as StreamEvent;
        } catch {
          streamError = new RequestFailed(0, { code: "bad_response", message: "the server sent a line that is not JSON" });
          continue;
        }
        if (ev.event === "result") result = ev.result;
        else if (ev.event === "error") streamError = new RequestFailed(ev.status, ev.error);
        else on.event(ev);
      }
    };
    xhr.addEventListener("progress", () => drain(false));
    xhr.addEventListener("load", () => {
      if (xhr.status === 200) {
        drain(true);
        if (streamError) return fail(streamError);
        if (result) {
          settled = true;
          return resolve(result);
        }
        return fail(new RequestFailed(0, { code: "bad_response", message: "the answer ended without a result" }));
      }
      fail(errorFromResponse(xhr));
    });
    xhr.addEventListener("error", () => fail(new RequestFailed(0, { code: "network_error", message: "the server could not be reached" })));
    xhr.addEventListener("abort", () => fail(new RequestFailed(0, { code: "cancelled", message: "cancelled" })));
    sendBody(xhr, requestBody(req, undefined, req.includeLayout));
  });
  return { done, cancel: () => xhr.abort() };
}

/**
 * Opens `xhr` as a POST to `path` with the key, asking for `accept`, its
 * upload reported to `on`. The caller listens for the answer, then
 * {@link sendBody}.
 */
export function openUpload(xhr: XMLHttpRequest, path: string, key: string, accept: string, on: UploadHandlers): void {
  xhr.open("POST", path);
  xhr.setRequestHeader("authorization", `Bearer ${key}`);
  xhr.setRequestHeader("accept", accept);
  xhr.upload.addEventListener("progress", (e) => {
    if (e.lengthComputable) on.uploadProgress(e.loaded, e.total);
  });
  xhr.upload.addEventListener("load", () => on.uploaded());
}

/** Sends a {@link requestBody}: JSON says so in its content type; FormData's multipart type (with its boundary) is the browser's to set. */
export function sendBody(xhr: XMLHttpRequest, payload: FormData | string): void {
  if (typeof payload === "string") xhr.setRequestHeader("content-type", "application/json");
  xhr.send(payload);
}

/**
 * A file goes as multipart (no base64 inflation); a URL as JSON. POST
 * /v1/ocr/jobs takes the same fields in both forms (docs/jobs.md), plus
 * `metadata`.
 */
export function requestBody(req: ProcessRequest, metadata?: Record<string, string>, layout = false): FormData | string {
  if (req.file) {
    const form = new FormData();
    form.append("file", req.file, req.file.name);
    if (req.model) form.append("model", req.model);
    if (req.strategy) form.append("strategy", req.strategy);
    if (req.extractTables) form.append("extract_tables", "true");
    if (req.language) form.append("language", req.language);
    if (req.pages) form.append("pages", req.pages);
    form.append("output_format", req.outputFormat);
    if (layout) form.append("include_layout", "words");
    if (metadata) form.append("metadata", JSON.stringify(metadata));
    return form;
  }
  return JSON.stringify({
    url: req.url,
    ...(req.model ? { model: req.model } : {}),
    ...(req.strategy ? { strategy: req.strategy } : {}),
    ...(req.pages ? { pages: req.pages } : {}),
    options: { extract_tables: req.extractTables, output_format: req.outputFormat, ...(req.language ? { language: req.language } : {}), ...(layout ? { include_layout: "words" } : {}) },
    ...(metadata ? { metadata } : {}),
  });
}

export function errorFromResponse(xhr: XMLHttpRequest): RequestFailed {
  return errorFrom(xhr.status, xhr.responseText, xhr.getResponseHeader("retry-after"));
}

/** A fetch answer that is not a success, as a RequestFailed. */
export async function errorFromFetch(res: Response): Promise<RequestFailed> {
  const text = await res.text().catch(() => "");
  return errorFrom(res.status, text, res.headers.get("retry-after"));
}

/** The one error shape (`{error: {code, message, …}}`) when the body has it, else the status in words. */
function errorFrom(status: number, body: string, retryAfterHeader: string | null): RequestFailed {
  const retry = Number(retryAfterHeader);
  const retryAfter = Number.isFinite(retry) && retry > 0 ? retry : undefined;
  try {
    const parsed = JSON.parse(body) as { error?: ApiError };
    if (parsed.error && typeof parsed.error.code === "string") return new RequestFailed(status, parsed.error, retryAfter);
  } catch {
    /* not the error shape: described below */
  }
  return new RequestFailed(status, { code: "http_error", message: `the server answered HTTP ${status}` }, retryAfter);
}
