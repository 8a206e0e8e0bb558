/**
 * `Idempotency-Key` on the paid POSTs (docs/idempotency.md): routes declare
 * `config.idempotent`; before their handler runs, a request with the header
 * claims the key for its account, or is answered at once (the stored answer
 * replayed with `Idempotent-Replayed: true`; 422 for another request under
 * the key; 409 while the first is still running). The claim rides to the
 * paid-request flow, which stores the answer with the charge; whatever the
 * flow did not store is settled here when the answer is sent: an unbilled
 * answer a retry cannot change is stored, any other gives the key back.
 */
import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { giveBack, keepsFailure, type IdempotencyClaim, type PaidIdempotency } from "../billing/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { uploadOf } from "./multipart.ts";
import type { App, EdgeDeps } from "./types.ts";

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
export const REPLAYED_HEADER = "Idempotent-Replayed";
const MAX_KEY_LENGTH = 255;

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route takes an Idempotency-Key (a paid POST). */
    idempotent?: boolean;
    /**
     * The content type a replay of a stored answer goes out with, for the
     * request's body and the answer's status, when not JSON (a streamed chat's
     * answer is kept as the event stream its client got).
     */
    replayType?: (body: unknown, status: number) => string | undefined;
  }
  interface FastifyRequest {
    idempotency?: IdempotencyClaim;
  }
}

/** The header's value, or undefined when absent; a 400 naming the header when it is not a usable key. */
export function idempotencyKeyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const raw = headers[IDEMPOTENCY_HEADER.toLowerCase()];
  if (raw === undefined) return undefined;
  const bad = (why: string) => new FolioError("invalid_request", `${IDEMPOTENCY_HEADER} ${why}`, { param: IDEMPOTENCY_HEADER });
  if (Array.isArray(raw)) throw bad("was sent more than once");
  if (raw.length === 0) throw bad("is empty");
  if (raw.length > MAX_KEY_LENGTH) throw bad(`is ${raw.length} characters long; the limit is ${MAX_KEY_LENGTH}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(raw)) throw bad("contains control characters");
  return raw;
}

/**
 * What makes two requests the same: the route and the body (JSON with its
 * keys sorted, so their order does not matter; an uploaded file by its
 * bytes' hash, with the name it was uploaded under).
 */
export function fingerprintOf(req: FastifyRequest): string {
  // isMultipart exists only where the multipart plugin is registered (the playground).
  const upload = typeof req.isMultipart === "function" && req.isMultipart() ? uploadOf(req) : undefined;
  return createHash("sha256")
    .update(`${req.method} ${req.routeOptions.url ?? req.url}\n`)
    .update(canonicalJson(req.body ?? null))
    .update(upload ? `\n${JSON.stringify(upload)}` : "")
    .digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Buffer.isBuffer(value)) return JSON.stringify({ sha256: createHash("sha256").update(value).digest("hex") });
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The request's claim as the paid-request flow takes it (`{}` without a key,
 * to spread into its options); the answer is stored as the route's response
 * schema serialises it, the bytes the client gets (or by `serialize`, for a
 * route whose answer may be a stream).
 */
export function idempotent(deps: EdgeDeps, req: FastifyRequest, reply: FastifyReply, serialize?: (body: unknown) => string): { idempotency?: PaidIdempotency } {
  if (!req.idempotency) return {};
  return { idempotency: { store: deps.idempotency, claim: req.idempotency, serialize: serialize ?? ((body) => String(reply.serialize(body))) } };
}

export function registerIdempotency(app: App, deps: EdgeDeps): void {
  // After validation (and the multipart form's parsing): the body is known.
  app.addHook("preHandler", async (req, reply) => {
    if (!req.routeOptions.config.idempotent || !req.principal) return;
    const key = idempotencyKeyOf(req.headers);
    if (key === undefined) return;
    const outcome = await deps.idempotency.claim(req.principal.accountId, key, fingerprintOf(req));
    switch (outcome.kind) {
      case "run":
        deps.metrics.idempotency.inc({ outcome: "first" });
        req.idempotency = outcome.claim;
        return;
      case "replay":
        deps.metrics.idempotency.inc({ outcome: "replayed" });
        reply.header(REPLAYED_HEADER, "true").header("content-type", req.routeOptions.config.replayType?.(req.body, outcome.answer.status) ?? "application/json; charset=utf-8");
        return reply.status(outcome.answer.status).send(outcome.answer.body);
      case "mismatch":
        deps.metrics.idempotency.inc({ outcome: "mismatch" });
        throw new FolioError("idempotency_key_reused", `this ${IDEMPOTENCY_HEADER} was used for a different request in the last 24 hours; use a new key for a new request`, {
          param: IDEMPOTENCY_HEADER,
        });
      case "in_progress":
        deps.metrics.idempotency.inc({ outcome: "in_progress" });
        throw new FolioError("idempotency_in_progress", `a request with this ${IDEMPOTENCY_HEADER} is still running; retry after ${outcome.retryAfterSeconds} s to get its answer`, {
          retryable: true,
          headers: { "retry-after": String(outcome.retryAfterSeconds) },
        });
    }
  });

  // The answer the flow did not store: kept when a retry cannot change it, else the key is given back.
  // A streamed answer (the playground's NDJSON) starts before the work ends: it is left to onResponse.
  app.addHook("onSend", async (req, reply, payload) => {
    const claim = req.idempotency;
    if (!claim || claim.finished || typeof payload !== "string") return payload;
    const status = reply.statusCode;
    try {
      if (status < 300 || keepsFailure(status, 0)) await deps.idempotency.complete(claim, { status, body: payload, requestId: null });
      else await deps.idempotency.release(claim);
    } catch (err) {
      // The database is gone (this answer is likely its 503): the answer still goes out, and the key is
      // given back once the database answers again (a retry then runs).
      req.log.warn({ err }, "idempotency key not settled; giving it back in the background");
      giveBack(() => deps.idempotency.release(claim));
    }
    return payload;
  });
  // Whatever is still claimed once the answer is out (a stream that failed unbilled) is given back.
  app.addHook("onResponse", async (req) => {
    const claim = req.idempotency;
    if (claim && !claim.finished) await deps.idempotency.release(claim).catch((err: unknown) => req.log.warn({ err }, "idempotency key not released"));
  });
}
