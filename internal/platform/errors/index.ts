/**
 * Domain errors. Domain code throws a {@link FolioError} carrying a code from
 * {@link ErrorCode}; exactly one mapper per boundary turns it into a wire
 * status (see `http.ts` for HTTP, the gRPC mapper lives with the gRPC code).
 */

/** Every error code Folio returns. The HTTP status of each is in `http.ts`. */
export type ErrorCode =
  | "invalid_request"
  | "invalid_api_key"
  | "permission_denied"
  | "not_found"
  | "insufficient_credits"
  | "rate_limit_exceeded"
  | "unsupported_model"
  | "unsupported_format"
  | "conversion_failed"
  | "timeout"
  | "conversion_not_available"
  | "upstream_error"
  | "service_unavailable"
  | "payload_too_large"
  | "idempotency_key_reused"
  | "idempotency_in_progress"
  | "job_not_finished"
  | "unsupported_media_type"
  | "internal_error";

export interface FolioErrorOptions {
  /** The request field at fault, when there is one (`param` in the body). */
  param?: string;
  /** Extra fields placed in the error body next to code and message. */
  extra?: Record<string, unknown>;
  /** Whether the same call may succeed if repeated later unchanged. */
  retryable?: boolean;
  /** Response headers the boundary should add (e.g. Retry-After). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class FolioError extends Error {
  readonly code: ErrorCode;
  readonly param: string | undefined;
  readonly extra: Record<string, unknown>;
  readonly retryable: boolean;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: FolioErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "FolioError";
    this.code = code;
    this.param = options.param;
    this.extra = options.extra ?? {};
    this.retryable = options.retryable ?? false;
    this.headers = options.headers ?? {};
  }
}

/** Shorthand for the most common case: a request field that is wrong. */
export function invalid(param: string, message: string): FolioError {
  return new FolioError("invalid_request", message, { param });
}

export function notFound(what: string, id: string): FolioError {
  return new FolioError("not_found", `${what} '${id}' was not found`);
}

export { errorBody, httpStatusOf, toHttpError, type HttpError } from "./http.ts";
