import { createServer, type Server } from "node:http";
import { KubeConfig } from "@kubernetes/client-node";
import { OperatorMetrics, startOperator, type RunningOperator } from "../../operator/index.ts";
import { operatorSchema, parseConfig, type Env } from "../../platform/config/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { stopOnSignal } from "./services.ts";

/**
 * Runs the operator until SIGINT/SIGTERM: credentials from the kubeconfig or
 * the pod's service account (KubeConfig.loadFromDefault), /healthz and
 * /readyz on FOLIO_OPERATOR_HEALTH_PORT, /metrics on FOLIO_METRICS_PORT when
 * enabled. On a signal it finishes the reconcile in hand, releases the
 * Lease (a successor takes over at once) and exits.
 */
export async function runOperator(env: Env): Promise<void> {
  const config = parseConfig(operatorSchema, env);
  const log = createLogger(config.LOG_LEVEL);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const metrics = config.FOLIO_METRICS_ENABLED ? new OperatorMetrics(true) : undefined;
  const operator = await startOperator({ config, log, kubeConfig, metricsEnabled: config.FOLIO_METRICS_ENABLED, ...(metrics ? { metrics } : {}) });
  const health = await serveHealth(operator, "0.0.0.0", config.FOLIO_OPERATOR_HEALTH_PORT);
  const served = metrics ? await metrics.serve(config.FOLIO_METRICS_HOST, config.FOLIO_METRICS_PORT) : undefined;
  log.info({ identity: operator.identity, healthPort: health.port, metricsPort: served?.port ?? null }, "operator running");
  stopOnSignal(log, async () => {
    await operator.close();
    await Promise.all([closeServer(health.server), served ? closeServer(served.server) : undefined]);
  });
}

/**
 * /healthz: the process answers (a wedged event loop does not). /readyz:
 * every watch has listed its resource once; leader and follower alike, since
 * a follower is a ready standby. Both answer JSON with the operator's state.
 */
export async function serveHealth(operator: Pick<RunningOperator, "health">, host: string, port: number): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const path = req.url?.split("?")[0];
    if (req.method !== "GET" || (path !== "/healthz" && path !== "/readyz")) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found: /healthz and /readyz\n");
      return;
    }
    const state = operator.health();
    const ok = path === "/healthz" || state.ready;
    res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
    res.end(JSON.stringify({ status: ok ? "ok" : "not ready", ...state }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return { server, port: typeof address === "object" && address ? address.port : port };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
