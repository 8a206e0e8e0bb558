import { FolioError, toHttpError } from "../../platform/errors/index.ts";
import type { App, EdgeDeps } from "../types.ts";

/** Liveness and readiness (readiness checks Postgres and Redis, bounded by FOLIO_READY_TIMEOUT_SECONDS). */
export default function register(app: App, deps: EdgeDeps): void {
  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { schema: { hide: true } }, async (_req, reply) => {
    try {
      return { status: "ok", checks: await deps.checkReady() };
    } catch (err) {
      // Answered here, not by the error handler: a probe every few seconds while a dependency is down is not a failed request to log.
      const mapped = toHttpError(new FolioError("service_unavailable", `not ready: ${err instanceof Error ? err.message : String(err)}`));
      return reply.status(mapped.status).headers(mapped.headers).send(mapped.body);
    }
  });
}
