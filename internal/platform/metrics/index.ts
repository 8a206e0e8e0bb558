/**
 * Prometheus metrics, owned (not global): each process builds one registry
 * with a `folio_` prefix and the default process metrics. Names are listed
 * in docs/metrics.md. Labels stay bounded: never account, key or request ids.
 */
import { createServer, type Server } from "node:http";
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export class Metrics {
  readonly registry = new Registry();
  readonly prefix = "folio_";

  /** @param defaultMetrics process metrics (CPU, memory, event loop); off for a second service sharing a process */
  constructor(process: string, defaultMetrics = true) {
    this.registry.setDefaultLabels({ process });
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: this.prefix });
  }

  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name: this.prefix + name, help, labelNames, registers: [this.registry] });
  }

  gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (this: Gauge<L>) => void | Promise<void>): Gauge<L> {
    return new Gauge({ name: this.prefix + name, help, labelNames, registers: [this.registry], ...(collect ? { collect } : {}) });
  }

  histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]): Histogram<L> {
    return new Histogram({ name: this.prefix + name, help, labelNames, buckets, registers: [this.registry] });
  }

  /**
   * Serves GET /metrics on its own port (0 = let the OS pick). `also` adds the
   * registries of other services running in the same process (`folio dev`).
   */
  async serve(host: string, port: number, also: Registry[] = []): Promise<{ server: Server; port: number }> {
    // Services sharing a process (folio dev) register some of the same names
    // (folio_grpc_server_calls_total in extraction and conversion), which
    // Registry.merge refuses; their series differ by the `process` label, so
    // families are aggregated per scrape instead.
    const render = async (): Promise<string> => {
      if (!also.length) return this.registry.metrics();
      const all = await Promise.all([this.registry, ...also].map((r) => r.getMetricsAsJSON()));
      return AggregatorRegistry.aggregate(all).metrics();
    };
    const server = createServer((req, res) => {
      if (req.method === "GET" && req.url?.split("?")[0] === "/metrics") {
        render().then(
          (text) => {
            res.writeHead(200, { "content-type": this.registry.contentType });
            res.end(text);
          },
          (err: unknown) => {
            res.writeHead(500, { "content-type": "text/plain" });
            res.end(String(err));
          },
        );
        return;
      }
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found: metrics are at /metrics\n");
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address();
    return { server, port: typeof address === "object" && address ? address.port : port };
  }
}

/**
 * gRPC calls seen by a process, server side (extraction, conversion) or
 * client side (the edge), by full method name and status code name.
 */
export interface GrpcObserver {
  observe(method: string, code: string, seconds: number): void;
}

const GRPC_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 180];

function grpcObserver(m: Metrics, side: "server" | "client"): GrpcObserver {
  const calls = m.counter(`grpc_${side}_calls_total`, `gRPC calls ${side === "server" ? "handled" : "made"}, by method and status code.`, ["method", "code"]);
  const duration = m.histogram(`grpc_${side}_call_duration_seconds`, `gRPC call duration (${side} side), by method.`, ["method"], GRPC_BUCKETS);
  return {
    observe: (method, code, seconds) => {
      calls.inc({ method, code });
      duration.observe({ method }, seconds);
    },
  };
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** The edge's metrics. */
export class EdgeMetrics extends Metrics {
  readonly httpRequests = this.counter("http_requests_total", "HTTP requests answered, by route template, method and status.", ["route", "method", "status"]);
  readonly httpDuration = this.histogram("http_request_duration_seconds", "HTTP request duration, by route template and method.", ["route", "method"], LATENCY_BUCKETS);
  readonly rateLimitRejections = this.counter("ratelimit_rejections_total", "Requests refused with 429, by the limit that refused them.", ["limit"]);
  readonly idempotency = this.counter("idempotency_requests_total", "Paid requests with an Idempotency-Key, by outcome: first (runs), replayed, in_progress (409), mismatch (422).", ["outcome"]);
  readonly rateLimitBackendErrors = this.counter("ratelimit_backend_errors_total", "Redis failures noticed while admitting requests, by operation.", ["op"]);
  readonly keyCache = this.counter("key_cache_total", "API key cache lookups, by result (hit or miss).", ["result"]);
  readonly holds = this.counter("billing_holds_total", "Credit holds attempted, by outcome (taken or insufficient).", ["outcome"]);
  readonly settlements = this.counter("billing_settlements_total", "Holds settled, by usage status (success or error).", ["status"]);
  readonly insufficientCredits = this.counter("billing_insufficient_credits_total", "Requests refused with 402 insufficient_credits.");
  readonly chargedCents = this.counter("billing_charged_cents_total", "Whole cents charged, by endpoint.", ["endpoint"]);
  readonly grpc = grpcObserver(this, "client");

  constructor() {
    super("edge");
  }
}

/** The extraction service's metrics. */
export class ExtractionMetrics extends Metrics {
  readonly catalogRefreshes = this.counter("catalog_refreshes_total", "Upstream catalog refreshes, by outcome (ok or failed).", ["outcome"]);
  readonly extractions = this.counter("extraction_calls_total", "ExtractPage and Chat calls, by method, model source and outcome.", ["method", "source", "outcome"]);
  readonly pages = this.counter("pages_processed_total", "Pages extracted, by model source.", ["source"]);
  readonly upstreamCalls = this.counter("upstream_calls_total", "Calls to the upstream model API, by model and outcome (ok or error).", ["model", "outcome"]);
  readonly upstreamDuration = this.histogram("upstream_call_duration_seconds", "Upstream call latency, by model.", ["model"], [0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120]);
  readonly upstreamTokens = this.counter("upstream_tokens_total", "Tokens billed by the upstream, by model and kind (prompt or completion).", ["model", "kind"]);
  readonly upstreamCostCents = this.counter("upstream_cost_cents_total", "Exact provider cost of upstream calls in cents (before the platform fee), by model.", ["model"]);
  readonly grpc = grpcObserver(this, "server");

  constructor(catalog: () => { ageSeconds: number | null; stale: boolean; models: { source: string }[] }, defaultMetrics = true) {
    super("extraction", defaultMetrics);
    this.gauge("catalog_age_seconds", "Age of the upstream model list in use (-1 when never fetched).", [], function () {
      this.set(catalog().ageSeconds ?? -1);
    });
    this.gauge("catalog_stale", "1 when the last catalog refresh failed and an older list is served.", [], function () {
      this.set(catalog().stale ? 1 : 0);
    });
    this.gauge("catalog_models", "Models in the catalog, by source.", ["source"], function () {
      const counts: Record<string, number> = { upstream: 0, local: 0 };
      for (const m of catalog().models) counts[m.source] = (counts[m.source] ?? 0) + 1;
      for (const [source, n] of Object.entries(counts)) this.set({ source }, n);
    });
  }
}

const CONVERSION_BUCKETS = [0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180];

/** The conversion service's metrics. */
export class ConversionMetrics extends Metrics {
  readonly conversions = this.counter("conversions_total", "Conversions, by format and outcome (ok or the error code).", ["format", "outcome"]);
  readonly duration = this.histogram("conversion_duration_seconds", "Conversion time seen by the caller (queue wait + sandbox), by format and outcome.", ["format", "outcome"], CONVERSION_BUCKETS);
  readonly computeSeconds = this.counter("conversion_compute_seconds_total", "Billed sandbox compute time, by format and backend.", ["format", "backend"]);
  readonly pages = this.counter("conversion_pages_total", "Pages rendered by conversions, by format.", ["format"]);
  readonly sandboxesRunning = this.gauge("sandboxes_running", "Sandboxes running now, by backend.", ["backend"]);
  readonly grpc = grpcObserver(this, "server");

  constructor(load: () => { waiting: number }, defaultMetrics = true) {
    super("conversion", defaultMetrics);
    this.gauge("conversion_queue_depth", "Conversions waiting for a sandbox slot.", [], function () {
      this.set(load().waiting);
    });
  }
}

/** What the jobs' gauges read from the database at each scrape (the same in every replica: aggregate with max). */
export interface JobQueueState {
  jobs: Record<"queued" | "running" | "succeeded" | "failed" | "cancelled", number>;
  queuedPages: number;
  oldestQueuedSeconds: number;
}

/** What the webhook gauges read from the database at each scrape (the same in every replica: aggregate with max). */
export interface WebhookQueueState {
  /** Pending deliveries: `ready` (due, first in line, endpoint enabled: a slot may take it now), `attempting` (under a lease), `waiting` (a retry not yet due, behind an earlier event of its job, or its endpoint disabled). */
  pending: Record<"ready" | "attempting" | "waiting", number>;
  /** How long the longest-waiting ready delivery has been due (0: none): deliverers falling behind. */
  oldestReadySeconds: number;
  /** Endpoints: `healthy`, `failing` (its last attempt failed, not yet disabled), `disabled`. */
  endpoints: Record<"healthy" | "failing" | "disabled", number>;
}

/** The jobs worker's metrics (`folio worker`; docs/jobs.md). */
export class WorkerMetrics extends Metrics {
  readonly pages = this.counter("job_pages_total", "Pages of durable jobs stored by this worker, by outcome (ok or failed).", ["outcome"]);
  readonly ranges = this.counter(
    "job_ranges_total",
    "Ranges this worker finished, by outcome: stored, duplicate (another worker stored it first), abandoned (left to its lease), converted (an office document's conversion), given_up.",
    ["outcome"],
  );
  readonly rangeDuration = this.histogram("job_range_duration_seconds", "Time from a range's claim to its pages stored.", [], [0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300]);
  readonly webhookAttempts = this.counter(
    "webhook_attempts_total",
    "Webhook delivery attempts by this worker, by result (delivered, retry: failed and to be tried again, failed: given up, lost_lease) and event type.",
    ["result", "type"],
  );
  readonly webhookAttemptDuration = this.histogram("webhook_attempt_duration_seconds", "Time of one webhook delivery attempt, connection included.", [], [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30]);

  readonly webhookDeliveries = this.counter(
    "webhook_deliveries_total",
    "Webhook deliveries this worker finished, by outcome: delivered, failed (retries spent, given up), merged (a progress event superseded by a newer one before it was sent).",
    ["outcome"],
  );

  webhookAttempt(result: string, type: string, seconds: number): void {
    this.webhookAttempts.inc({ result, type });
    this.webhookAttemptDuration.observe(seconds);
    if (result === "delivered" || result === "failed") this.webhookDeliveries.inc({ outcome: result });
  }

  constructor(state: () => Promise<JobQueueState>, webhooks: () => Promise<WebhookQueueState>, defaultMetrics = true) {
    super("worker", defaultMetrics);
    // One query per scrape feeds the three gauges: a scrape reads them in one go.
    let pending: Promise<JobQueueState> | null = null;
    const read = () => (pending ??= state().finally(() => setTimeout(() => (pending = null), 100)));
    this.gauge("jobs", "Durable jobs kept (not yet past their retention), by status.", ["status"], async function () {
      const s = await read();
      for (const [status, n] of Object.entries(s.jobs)) this.set({ status }, n);
    });
    this.gauge("job_queued_pages", "Pages of durable jobs not yet read (queued or in a range being read): what the workers' autoscaler reads.", [], async function () {
      this.set((await read()).queuedPages);
    });
    this.gauge("job_oldest_queued_seconds", "Age of the oldest job still waiting for its first page to be claimed (0: none).", [], async function () {
      this.set((await read()).oldestQueuedSeconds);
    });
    {
      let pendingHooks: Promise<WebhookQueueState> | null = null;
      const readHooks = () => (pendingHooks ??= webhooks().finally(() => setTimeout(() => (pendingHooks = null), 100)));
      this.gauge("webhook_pending_deliveries", "Webhook deliveries not yet finished, by state: ready (a slot may take it now), attempting, waiting (a retry not yet due, behind an earlier event of its job, or its endpoint disabled).", ["state"], async function () {
        for (const [state, n] of Object.entries((await readHooks()).pending)) this.set({ state }, n);
      });
      this.gauge("webhook_oldest_ready_seconds", "How long the longest-waiting ready webhook delivery has been due (0: none): the deliverers falling behind.", [], async function () {
        this.set((await readHooks()).oldestReadySeconds);
      });
      this.gauge("webhook_endpoints", "Webhook endpoints by state: healthy, failing (its last attempt failed), disabled.", ["state"], async function () {
        for (const [state, n] of Object.entries((await readHooks()).endpoints)) this.set({ state }, n);
      });
    }
  }
}
