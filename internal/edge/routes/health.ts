import { FolioError, toHttpError } from "../../platform/errors/index.ts";
import type { App, EdgeDeps } from "../types.ts";

/**
 * Liveness and readiness (readiness checks Postgres and Redis, bounded by
 * FOLIO_READY_TIMEOUT_SECONDS). /readyz answers anyone: when a dependency is
 * down it names the dependency, never its error (addresses, driver and
 * server messages), which goes to the log.
 */
export default function register(app: App, deps: EdgeDeps): void {
  /** The dependencies down at the last probe, with their errors, so that the log says each change once. */
  let lastDown = "{}";
  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { schema: { hide: true } }, async (req, reply) => {
    const checks = await deps.checkReady();
    const down = Object.keys(checks).filter((name) => checks[name] !== "ok");
    const errors = Object.fromEntries(down.map((name) => [name, (checks[name] as Error).message]));
    // A probe every few seconds while a dependency is down is not a failed request to log each time: its state is logged when it changes.
    const now = JSON.stringify(errors);
    if (now !== lastDown) {
      if (down.length > 0) req.log.warn({ down: errors }, "not ready: a dependency is down");
      else req.log.info("ready again: every dependency answers");
      lastDown = now;
    }
    if (down.length === 0) return { status: "ok", checks };
    // Answered here, not by the error handler (the log above is the record).
    const mapped = toHttpError(new FolioError("service_unavailable", `not ready: ${down.join(", ")} unavailable`));
    return reply.status(mapped.status).headers(mapped.headers).send(mapped.body);
  });
}
