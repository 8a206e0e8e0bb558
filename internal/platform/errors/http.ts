import { FolioError, type ErrorCode } from "./index.ts";

/**
 * The one table from error code to HTTP status (DESIGN.md: "one error shape").
 * Conversion codes follow the spec's OCR status table; see docs/errors.md.
 */
const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  unsupported_model: 400,
  unsupported_format: 400,
  invalid_api_key: 401,
  insufficient_credits: 402,
  permission_denied: 403,
  not_found: 404,
  idempotency_in_progress: 409,
  job_not_finished: 409,
  idempotency_key_reused: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limit_exceeded: 429,
  conversion_failed: 500,
  timeout: 500,
  internal_error: 500,
  upstream_error: 502,
  conversion_not_available: 503,
  service_unavailable: 503,
};

export function httpStatusOf(code: ErrorCode): number {
  return STATUS[code];
}

export interface HttpError {
  status: number;
  headers: Record<string, string>;
  body: { error: Record<string, unknown> & { code: ErrorCode; message: string } };
}

export function errorBody(err: FolioError): HttpError["body"] {
  const error: HttpError["body"]["error"] = { ...err.extra, code: err.code, message: err.message };
  if (err.param !== undefined) error.param = err.param;
  return { error };
}

/**
 * `Retry-After` (seconds) of a 503 or 429 whose error did not set its own:
 * every one tells the client when to come back (docs/errors.md). A missing
 * conversion service is a deployment choice, not a blip: a longer wait.
 */
const DEFAULT_RETRY_AFTER: Record<number, string> = { 503: "2", 429: "1" };
const DEFAULT_RETRY_AFTER_OF_CODE: Partial<Record<ErrorCode, string>> = { conversion_not_available: "60" };

/** Maps anything thrown to an HTTP answer; unknown errors become a bare 500. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof FolioError) {
    const status = httpStatusOf(err.code);
    const headers = { ...err.headers };
    const retryAfter = DEFAULT_RETRY_AFTER_OF_CODE[err.code] ?? DEFAULT_RETRY_AFTER[status];
    if (retryAfter !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === "retry-after")) headers["retry-after"] = retryAfter;
    return { status, headers, body: errorBody(err) };
  }
  const internal = new FolioError("internal_error", "internal error");
  return { status: 500, headers: {}, body: errorBody(internal) };
}
