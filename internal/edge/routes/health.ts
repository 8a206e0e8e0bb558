import type { App, EdgeDeps } from "../types.ts";

/** Liveness and readiness (readiness checks Postgres and Redis). */
export default function register(app: App, deps: EdgeDeps): void {
  app.get("/healthz", { schema: { hide: true } }, async () => ({ status: "ok" }));
  app.get("/readyz", { schema: { hide: true } }, async (_req, reply) => {
    try {
      return { status: "ok", checks: await deps.checkReady() };
    } catch (err) {
      return reply.status(503).send({ error: { code: "service_unavailable", message: `not ready: ${err instanceof Error ? err.message : String(err)}` } });
    }
  });
}
