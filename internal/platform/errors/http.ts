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

/** Maps anything thrown to an HTTP answer; unknown errors become a bare 500. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof FolioError) {
    return { status: httpStatusOf(err.code), headers: err.headers, body: errorBody(err) };
  }
  const internal = new FolioError("internal_error", "internal error");
  return { status: 500, headers: {}, body: errorBody(internal) };
}
