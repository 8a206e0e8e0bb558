/**
 * What domain code uses of tracing: Folio's tracer, span helpers and W3C
 * trace context for handing to a sandbox. Only `@opentelemetry/api`, so it
 * costs nothing when the SDK (sdk.ts, started by register.ts) is not running.
 */
import { SpanStatusCode, context, propagation, trace, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import { FolioError } from "../errors/index.ts";

export { SpanStatusCode, type Span };

/** Folio's own tracer (a no-op when the SDK is not running). */
export function tracer(): Tracer {
  return trace.getTracer("folio");
}

/**
 * Runs `fn` inside a new active span named `name`; a failure marks the span
 * with the Folio error code (never the message: it may quote input).
 */
export function inSpan<R>(name: string, attributes: Attributes, fn: (span: Span) => Promise<R>): Promise<R> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof FolioError ? err.code : "internal_error" });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The W3C `traceparent` of the active span, when there is one (to hand to a sandbox). */
export function currentTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}
