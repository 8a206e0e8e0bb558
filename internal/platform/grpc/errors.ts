/**
 * The one mapping between domain errors and gRPC status (STYLE.md: one mapper
 * per boundary). A FolioError crosses gRPC intact: its code, param and extra
 * fields travel in trailing metadata, so the edge answers exactly what the
 * service meant. Statuses without Folio metadata (deadline, unavailable
 * service) are mapped to domain errors here too.
 */
import { Metadata, status, type ServiceError, type StatusObject } from "@grpc/grpc-js";
import { FolioError, type ErrorCode } from "../errors/index.ts";

const GRPC_STATUS: Record<ErrorCode, status> = {
  invalid_request: status.INVALID_ARGUMENT,
  unsupported_model: status.INVALID_ARGUMENT,
  unsupported_format: status.INVALID_ARGUMENT,
  unsupported_media_type: status.INVALID_ARGUMENT,
  payload_too_large: status.RESOURCE_EXHAUSTED,
  invalid_api_key: status.UNAUTHENTICATED,
  permission_denied: status.PERMISSION_DENIED,
  not_found: status.NOT_FOUND,
  idempotency_in_progress: status.ABORTED,
  job_not_finished: status.FAILED_PRECONDITION,
  idempotency_key_reused: status.ALREADY_EXISTS,
  insufficient_credits: status.FAILED_PRECONDITION,
  rate_limit_exceeded: status.RESOURCE_EXHAUSTED,
  conversion_failed: status.ABORTED,
  timeout: status.DEADLINE_EXCEEDED,
  conversion_not_available: status.UNIMPLEMENTED,
  upstream_error: status.UNAVAILABLE,
  service_unavailable: status.UNAVAILABLE,
  internal_error: status.INTERNAL,
};

// Text metadata must be printable ASCII; fields that carry user or provider
// text travel as binary ("-bin") metadata, UTF-8 encoded.
const CODE_KEY = "folio-error-code";
const PARAM_KEY = "folio-error-param-bin";
const EXTRA_KEY = "folio-error-extra-bin";
const RETRYABLE_KEY = "folio-error-retryable";
const HEADERS_KEY = "folio-error-headers-bin";

const utf8 = (v: string) => Buffer.from(v, "utf8");
const text = (v: string | Buffer | undefined) => (v === undefined ? undefined : Buffer.isBuffer(v) ? v.toString("utf8") : v);

/** Server side: anything thrown by a handler → a gRPC status object. */
export function toGrpcStatus(err: unknown): Partial<StatusObject> {
  const e = err instanceof FolioError ? err : new FolioError("internal_error", "internal error");
  const metadata = new Metadata();
  metadata.set(CODE_KEY, e.code);
  if (e.param !== undefined) metadata.set(PARAM_KEY, utf8(e.param));
  if (Object.keys(e.extra).length) metadata.set(EXTRA_KEY, utf8(JSON.stringify(e.extra)));
  if (Object.keys(e.headers).length) metadata.set(HEADERS_KEY, utf8(JSON.stringify(e.headers)));
  if (e.retryable) metadata.set(RETRYABLE_KEY, "1");
  return { code: GRPC_STATUS[e.code], details: e.message, metadata };
}

/** Client side: a failed call → the FolioError the service meant (or the closest one). */
export function fromGrpcError(err: ServiceError, what: string): FolioError {
  const md = err.metadata;
  const code = md?.get(CODE_KEY)[0];
  if (typeof code === "string" && Object.hasOwn(GRPC_STATUS, code)) {
    const param = text(md.get(PARAM_KEY)[0]);
    const extra = text(md.get(EXTRA_KEY)[0]);
    const headers = text(md.get(HEADERS_KEY)[0]);
    return new FolioError(code as ErrorCode, err.details, {
      param: typeof param === "string" ? param : undefined,
      extra: typeof extra === "string" ? (JSON.parse(extra) as Record<string, unknown>) : undefined,
      headers: typeof headers === "string" ? (JSON.parse(headers) as Record<string, string>) : undefined,
      retryable: md.get(RETRYABLE_KEY)[0] === "1",
      cause: err,
    });
  }
  switch (err.code) {
    case status.DEADLINE_EXCEEDED:
      return new FolioError("service_unavailable", `${what} did not answer in time`, { retryable: true, cause: err });
    case status.UNAVAILABLE:
      return new FolioError("service_unavailable", `${what} is unavailable`, { retryable: true, cause: err });
    // The server ended the call: it shut down or was killed mid-call (grpc-js reports that as
    // CANCELLED, without Folio metadata). A retry reaches it once it is back, or another replica.
    // Calls the edge cancels itself never report this: the caller that aborted reports its own reason.
    case status.CANCELLED:
      return new FolioError("service_unavailable", `${what} went away during the call`, { retryable: true, cause: err });
    case status.RESOURCE_EXHAUSTED:
      return new FolioError("payload_too_large", `${what} refused the message size: ${err.details}`, { cause: err });
    default:
      return new FolioError("internal_error", `${what} failed`, { cause: err });
  }
}
