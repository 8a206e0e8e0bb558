/**
 * The edge's HTTP application: validation, the one error shape, auth and
 * admission, metrics, OpenAPI, and every route under routes/.
 */
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyReply, type FastifyRequest } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { Ajv, type ErrorObject } from "ajv";
import addFormats from "ajv-formats";
import { missingPermissions } from "../auth/index.ts";
import { FolioError, errorBody, toHttpError } from "../platform/errors/index.ts";
import type { App, EdgeDeps } from "./types.ts";
import { registerIdempotency } from "./idempotency.ts";
import { ErrorBody, NO_NUL } from "./schemas.ts";
import { rateLimitHeaders } from "./ratelimit-headers.ts";
import type { Admission } from "../ratelimit/index.ts";
import { routes } from "./routes/index.ts";

/** Bodies are validated strictly (no type coercion); query strings and paths are strings and get coerced. */
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ coerceTypes: coerce, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

export async function buildEdgeApp(deps: EdgeDeps): Promise<App> {
  const app = Fastify({
    loggerInstance: deps.log as unknown as FastifyBaseLogger,
    bodyLimit: deps.bodyLimitBytes,
    trustProxy: deps.trustProxy,
    // Path parameters are validated by the route schemas (a clear 400), so the
    // router's own length limit only guards against absurd URLs.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048 },
    requestIdHeader: false,
    // Errors raised by the router itself (e.g. a malformed %-escape) get the one error shape too.
    frameworkErrors: (err, _req, reply) => {
      const mapped = toHttpError(translate(err));
      void reply.code(mapped.status as never).type("application/json").send(JSON.stringify(mapped.body) as never);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === "body" ? strict : coercing).compile(schema));
  app.addSchema(ErrorBody);
  // JSON bodies; an empty body is accepted where none is expected (DELETE/GET
  // from clients that always send Content-Type) and refused elsewhere.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    const text = body as string;
    if (text.trim() === "") {
      if (req.method === "POST" || req.method === "PATCH" || req.method === "PUT") {
        done(new FolioError("invalid_request", "request body is empty; send a JSON object"), undefined);
      } else done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(new FolioError("invalid_request", `request body is not valid JSON: ${(err as Error).message}`), undefined);
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "Folio API", version: "1.0.0", description: "Document OCR: extraction, conversion, models and management. The contract is the OCR service specification; choices it leaves open are in docs/." },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key: folio_sk_…" } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });

  app.setErrorHandler((err: FastifyError | FolioError, req, reply) => {
    const mapped = toHttpError(translate(err));
    if (mapped.body.error.code === "internal_error") req.log.error({ err }, "request failed");
    else if (mapped.status >= 500) {
      // A dependency's own words (ECONNREFUSED, a SQLSTATE) are for the log, not the client.
      const cause = err.cause instanceof Error ? err.cause.message : undefined;
      req.log.warn({ code: mapped.body.error.code, msg: mapped.body.error.message, ...(cause && { cause }) }, "request failed");
    }
    // Refused before its body was read (auth, rate limit): close the connection
    // instead of leaving an unread body on a keep-alive socket.
    if (!req.raw.complete) reply.header("connection", "close");
    for (const [k, v] of Object.entries(mapped.headers)) reply.header(k, v);
    // A failure kept for the request's Idempotency-Key goes out as the bytes a retry will get.
    const kept = req.idempotency?.answer;
    if (kept && kept.status === mapped.status) return reply.status(kept.status).type("application/json; charset=utf-8").send(kept.body);
    return reply.status(mapped.status).send(mapped.body);
  });
  app.setNotFoundHandler((req, reply) => {
    const err = new FolioError("not_found", `no route ${req.method} ${req.url.split("?")[0]}`);
    return reply.status(404).send(errorBody(err));
  });

  // Auth and admission run first (onRequest), before any body is read.
  app.addHook("onRequest", async (req, reply) => {
    const { permissions: wanted, anonymous } = req.routeOptions.config;
    if (!wanted) return;
    if (anonymous && req.headers.authorization === undefined) {
      // Public route without a key: limited per client address (docs/rate-limits.md).
      const admission = await deps.limiter.admit(`ip:${req.ip}`, [{ name: "minute", count: deps.publicRequestsPerMinute, periodMs: 60_000 }]);
      if (admission.kind === "decision") admit(admission, reply);
      return;
    }
    const { principal, admission } = await deps.authenticator.authenticate(req.headers.authorization, req.ip);
    req.principal = principal;
    admit(admission, reply);
    const missing = missingPermissions(principal.permissions, wanted);
    if (missing.length) {
      throw new FolioError("permission_denied", `this API key lacks the permission(s): ${missing.join(", ")}`, { extra: { missing_permissions: missing } });
    }
  });

  /** Sets the RateLimit headers; throws the 429 when the request was refused. */
  function admit(admission: Extract<Admission, { kind: "decision" }>, reply: FastifyReply): void {
    for (const [k, v] of Object.entries(rateLimitHeaders(admission.limits))) reply.header(k, v);
    if (admission.allowed) return;
    const tightest = admission.limits.filter((l) => l.remaining === 0).map((l) => l.name);
    deps.metrics.rateLimitRejections.inc({ limit: tightest[0] ?? "unknown" });
    const seconds = Math.max(1, Math.ceil(admission.retryAfterMs / 1000));
    throw new FolioError("rate_limit_exceeded", `rate limit exceeded (${tightest.join(", ") || "limit"}); retry after ${seconds} s`, {
      retryable: true,
      headers: { "retry-after": String(seconds) },
      extra: { retry_after_seconds: seconds },
    });
  }

  app.addHook("onResponse", async (req, reply) => {
    const route = req.routeOptions.url ?? "unmatched";
    deps.metrics.httpRequests.inc({ route, method: req.method, status: String(reply.statusCode) });
    deps.metrics.httpDuration.observe({ route, method: req.method }, reply.elapsedTime / 1000);
  });

  registerIdempotency(app, deps);
  for (const register of routes) register(app, deps);
  return app;
}

/** Turns framework errors into domain errors; domain errors pass through. */
function translate(err: FastifyError | FolioError): unknown {
  if (err instanceof FolioError) return err;
  if (err.validation) return validationError(err.validation as ErrorObject[], err.validationContext);
  // Postgres refuses NUL and invalid characters in text: the input was bad, not the server.
  if (err.code === "22021" || err.code === "22P05") {
    return new FolioError("invalid_request", "text fields must not contain NUL (\\u0000) or unencodable characters");
  }
  switch (err.code) {
    case "FST_ERR_BAD_URL":
      return new FolioError("invalid_request", "the request path is not a valid URL (malformed %-escape)");
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new FolioError("payload_too_large", "request body is too large");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new FolioError("unsupported_media_type", "request bodies must be sent with Content-Type: application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new FolioError("invalid_request", "request body is empty; send a JSON object");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new FolioError("invalid_request", `request body is not valid JSON: ${err.message}`);
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
    return new FolioError("invalid_request", `request body is not valid JSON: ${err.message}`);
  }
  if (typeof err.statusCode === "number" && err.statusCode >= 400 && err.statusCode < 500) {
    return new FolioError("invalid_request", err.message);
  }
  return err;
}

function validationError(errors: ErrorObject[], context: string | undefined): FolioError {
  const e = errors[0];
  const where = context === "querystring" ? "query parameter" : context === "params" ? "path parameter" : "field";
  if (!e) return new FolioError("invalid_request", "invalid request");
  const path = e.instancePath.replace(/^\//, "").replace(/\//g, ".");
  const missing = (e.params as { missingProperty?: string }).missingProperty;
  const extra = (e.params as { additionalProperty?: string }).additionalProperty;
  if (missing) {
    const param = path ? `${path}.${missing}` : missing;
    return new FolioError("invalid_request", `missing required ${where} '${param}'`, { param });
  }
  if (extra !== undefined) {
    const param = path ? `${path}.${extra}` : extra;
    return new FolioError("invalid_request", `unknown ${where} '${param}'`, { param });
  }
  if (!path) return new FolioError("invalid_request", `request ${context ?? "body"} ${e.message ?? "is invalid"}`);
  const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues;
  const pattern = (e.params as { pattern?: string }).pattern;
  const detail = allowed
    ? `must be one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`
    : pattern === NO_NUL
      ? "must not contain NUL characters"
      : (e.message ?? "is invalid");
  return new FolioError("invalid_request", `${where} '${path}' ${detail}`, { param: path });
}

export type { FastifyRequest };
