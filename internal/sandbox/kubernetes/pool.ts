/**
 * The conversion replica's side of the warm pool (docs/operator.md, "The
 * warm pool"), off the hot path:
 *
 * - seats: a watch of the pool's Jobs (label `folio.dev/pool`) keeps the
 *   SHA-256 of each warm pod's token (a Job annotation the operator wrote),
 *   so the broker can tell a warm pod from anyone else without asking the
 *   API server when the pod calls;
 * - demand: every {@link DEFAULT_REPORT_INTERVAL_MS} this replica merges
 *   its report (broker address, requests queued for a slot, hand-in rate, idle and
 *   busy warm pods, overdue Jobs) into the pool's `status.replicas[<replica>]`;
 *   the operator sizes the pool from these reports. Unchanged reports are
 *   written again only every {@link KEEPALIVE_MS}, well inside the
 *   operator's staleness limit.
 *
 * Neither is needed for a document to reach a warm pod: the hand-in itself
 * is the broker's in-memory queue ({@link SandboxBroker.offer}).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { Informer, KubeClient, LABELS, POOL_ANNOTATIONS, type Job } from "../../operator/index.ts";
import { Metrics } from "../../platform/metrics/index.ts";
import type { Logger } from "../../platform/log/index.ts";
import type { SandboxBroker, Seat, SeatLookup } from "./broker.ts";

/** Default name of the ConversionSandboxPool a conversion replica reports to (the chart's pool). */
export const DEFAULT_POOL_NAME = "folio-sandbox";
export const DEFAULT_REPORT_INTERVAL_MS = 2_000;
/** An unchanged report is written again after this long (the operator drops reports older than 60 s). */
const KEEPALIVE_MS = 15_000;
/**
 * The hand-in rate is averaged over this window: one document in a 2 s
 * report interval is not 0.5 a second for sizing purposes, and a burst
 * should raise the rate for about as long as new pods take to start.
 */
export const RATE_WINDOW_MS = 10_000;

/** Counters of the warm path, in the conversion process's registry. */
export class PoolMetrics {
  readonly handIns;
  readonly fallbacks;
  readonly retries;
  readonly handInSeconds;

  constructor(metrics: Metrics = new Metrics("conversion", false)) {
    this.handIns = metrics.counter("sandbox_handins_total", "Documents handed to a kubernetes sandbox, by path (warm: a waiting pool pod; cold: a ConversionSandbox of its own).", ["path"]);
    this.fallbacks = metrics.counter(
      "sandbox_pool_fallbacks_total",
      "Documents that took the cold path (one ConversionSandbox each) although a pool is configured, by reason (empty: no warm pod was waiting; retry: a retry found none).",
      ["reason"],
    );
    this.retries = metrics.counter("sandbox_pool_retries_total", "Documents retried once after their warm pod went away without a result.");
    this.handInSeconds = metrics.histogram(
      "sandbox_handin_seconds",
      "From the conversion request reaching the kubernetes backend to its document going down a warm pod's open call (path warm).",
      ["path"],
      [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    );
  }
}

export interface WarmPoolOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** The ConversionSandboxPool's name. */
  pool: string;
  /** This replica's key in status.replicas (its pod name). */
  replica: string;
  /** Where warm pods dial this replica's broker. */
  brokerAddress: string;
  broker: SandboxBroker;
  log: Logger;
  /** Requests queued at this replica for a sandbox slot, and documents asked for so far (for the rate). */
  demand: () => { waiting: number; requests: number };
  reportIntervalMs?: number;
}

export class WarmPool implements SeatLookup {
  private readonly client: KubeClient;
  private readonly jobs: Informer<Job>;
  private readonly seats = new Map<string, Seat>();
  private readonly hashOfJob = new Map<string, string>();
  private readonly waiting = new Map<string, Set<(seat: Seat) => void>>();
  private timer: NodeJS.Timeout | undefined;
  private last: { written: string; writtenAt: number } | undefined;
  /** (time, requests so far) at each report within the rate window, oldest first. */
  private readonly samples: { at: number; requests: number }[] = [];
  private reporting: Promise<void> | undefined;

  constructor(private readonly o: WarmPoolOptions) {
    this.client = new KubeClient(o.kubeConfig, { requestTimeoutMs: 10_000, userAgent: `folio-conversion/${o.replica}` });
    this.jobs = new Informer<Job>({
      client: this.client,
      namespace: o.namespace,
      resource: "jobs",
      labelSelector: LABELS.pool,
      idleMs: 300_000,
      backoff: { baseMs: 500, maxMs: 30_000 },
      log: o.log,
      onEvent: (e) => this.onJob(e.type, e.object),
    });
  }

  start(): void {
    this.o.broker.usePool(this);
    this.jobs.start();
    this.timer = setInterval(() => void this.report(), this.o.reportIntervalMs ?? DEFAULT_REPORT_INTERVAL_MS);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.reporting;
    await this.jobs.close();
  }

  get(hash: string): Seat | undefined {
    return this.seats.get(hash);
  }

  waitFor(hash: string, ms: number): Promise<Seat | undefined> {
    const known = this.seats.get(hash);
    if (known) return Promise.resolve(known);
    return new Promise((resolve) => {
      const set = this.waiting.get(hash) ?? new Set();
      this.waiting.set(hash, set);
      const done = (seat: Seat | undefined) => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) this.waiting.delete(hash);
        resolve(seat);
      };
      const timer = setTimeout(() => done(undefined), ms);
      set.add(done);
    });
  }

  private onJob(type: "ADDED" | "MODIFIED" | "DELETED", job: Job): void {
    const name = job.metadata?.name;
    const hash = job.metadata?.annotations?.[POOL_ANNOTATIONS.tokenHash];
    if (!name || !hash) return;
    if (type === "DELETED") {
      this.seats.delete(hash);
      this.hashOfJob.delete(name);
      this.o.broker.forgetSeat(hash);
      return;
    }
    const maxDocumentMs = Number(job.metadata?.annotations?.[POOL_ANNOTATIONS.maxDocumentMs] ?? 0);
    const seat: Seat = { job: name, maxDocumentMs: Number.isFinite(maxDocumentMs) ? maxDocumentMs : 0 };
    this.seats.set(hash, seat);
    this.hashOfJob.set(name, hash);
    for (const resolve of this.waiting.get(hash) ?? []) resolve(seat);
  }

  /** Writes this replica's report when it changed (or is due again). One at a time. */
  report(): Promise<void> {
    this.reporting ??= this.writeReport().finally(() => {
      this.reporting = undefined;
    });
    return this.reporting;
  }

  private async writeReport(): Promise<void> {
    const now = Date.now();
    const { waiting, requests } = this.o.demand();
    this.samples.push({ at: now, requests });
    while (this.samples.length > 1 && now - this.samples[0]!.at > RATE_WINDOW_MS) this.samples.shift();
    const rate = Math.max(0, requests - this.samples[0]!.requests) / (RATE_WINDOW_MS / 1000);
    const stats = this.o.broker.warmStats();
    const report = {
      brokerAddress: this.o.brokerAddress,
      waiting,
      // One decimal: small changes of the rate are not worth a write.
      handInRate: Math.round(rate * 10) / 10,
      idle: stats.idle,
      busy: stats.busy,
      busyJobs: stats.busyJobs.sort(),
      overdue: stats.overdue,
    };
    const key = JSON.stringify(report);
    if (key === this.last?.written && now - this.last.writtenAt < KEEPALIVE_MS) return;
    try {
      await this.client.mergePatch(
        "conversionsandboxpools",
        this.o.namespace,
        this.o.pool,
        { status: { replicas: { [this.o.replica]: { ...report, reportedAt: new Date(now).toISOString() } } } },
        "status",
      );
      this.last = { written: key, writtenAt: now };
    } catch (err) {
      // No pool (404), no permission (403), the API server away: the cold path still works; say so, quietly.
      this.o.log.debug({ err, pool: this.o.pool }, "could not report demand to the sandbox pool");
    }
  }
}
