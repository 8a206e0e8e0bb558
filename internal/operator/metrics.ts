/**
 * The operator's metrics: its own registry with the `folio_` prefix (STYLE.md
 * 9). Labels stay bounded: outcomes, reasons, resources and phases, never
 * sandbox names.
 */
import { Metrics } from "../platform/metrics/index.ts";
import type { SandboxPhase } from "./types.ts";

export type ReconcileOutcome = "ok" | "requeued" | "error";

export class OperatorMetrics extends Metrics {
  readonly reconciles = this.counter("operator_reconciles_total", "Reconciles of a ConversionSandbox key, by outcome (ok, requeued, error).", ["outcome"]);
  readonly reconcileErrors = this.counter(
    "operator_reconcile_errors_total",
    "Reconciles that failed and were retried with back-off, by kind (conflict, api, not_leader, unexpected).",
    ["kind"],
  );
  readonly reconcileDuration = this.histogram("operator_reconcile_duration_seconds", "Time one reconcile took.", [], [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
  readonly watchRestarts = this.counter(
    "operator_watch_restarts_total",
    "Watches ended and started again, by resource and reason (gone: 410 and a relist; error: back-off; idle: the watchdog; closed: the server ended it).",
    ["resource", "reason"],
  );
  readonly jobsCreated = this.counter("operator_jobs_created_total", "Sandbox Jobs created.");
  readonly sandboxOutcomes = this.counter(
    "operator_sandbox_outcomes_total",
    "Sandboxes that finished, by phase (Succeeded, Failed) and failure reason (DeadlineExceeded, OOMKilled, ImagePullFailed, ConversionFailed, PodFailed, JobFailed, ...; empty when Succeeded).",
    ["phase", "reason"],
  );
  readonly sandboxesDeleted = this.counter("operator_sandboxes_deleted_total", "Finished ConversionSandboxes deleted after the retention period.");
  readonly leader = this.gauge("operator_leader", "1 while this replica holds the leader Lease, else 0.");
  readonly poolJobsCreated = this.counter("operator_pool_jobs_created_total", "Warm pool Jobs created, by pool.", ["pool"]);
  readonly poolJobsDeleted = this.counter(
    "operator_pool_jobs_deleted_total",
    "Warm pool Jobs deleted, by pool and why (finished: replaced after its document; overdue: held a document past its deadline; orphaned: its conversion replica stopped reporting).",
    ["pool", "why"],
  );
  /** Pods of each pool by state; set by every reconcile of the pool. */
  readonly poolPods = this.gauge(
    "operator_pool_pods",
    "Warm pool pods by pool and state (active: not finished; ready: container running; idle: waiting for a document, as the conversion replicas report; wanted: idle pods the operator aims for).",
    ["pool", "state"],
  );
  /** Read at scrape time; set by the running operator ({@link OperatorMetrics.observe}). */
  private phases: () => Partial<Record<SandboxPhase | "Unknown", number>> = () => ({});
  private queueLength: () => number = () => 0;

  /** @param defaultMetrics process metrics (CPU, memory, event loop); off when several operators share a process (tests) */
  constructor(defaultMetrics = true) {
    super("operator", defaultMetrics);
    this.leader.set(0);
    const phases = () => this.phases();
    const queueLength = () => this.queueLength();
    this.gauge("operator_sandboxes", "ConversionSandboxes in the operator's namespace, by phase (Unknown: no status yet).", ["phase"], function () {
      const counts = { Pending: 0, Running: 0, Succeeded: 0, Failed: 0, Unknown: 0, ...phases() };
      for (const [phase, n] of Object.entries(counts)) this.set({ phase }, n);
    });
    this.gauge("operator_queue_depth", "Keys waiting in the reconcile queue.", [], function () {
      this.set(queueLength());
    });
  }

  setPool(pool: string, counts: { active: number; ready: number; idle: number; wanted: number }): void {
    for (const [state, n] of Object.entries(counts)) this.poolPods.set({ pool, state }, n);
  }

  forgetPool(pool: string): void {
    for (const state of ["active", "ready", "idle", "wanted"]) this.poolPods.remove({ pool, state });
  }

  /** Where the scrape-time gauges read from: sandbox counts by phase and the queue's length. */
  observe(phases: () => Partial<Record<SandboxPhase | "Unknown", number>>, queueLength: () => number): void {
    this.phases = phases;
    this.queueLength = queueLength;
  }
}
