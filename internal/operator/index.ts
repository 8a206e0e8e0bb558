/**
 * The operator: reconciles each ConversionSandbox of one namespace into a
 * gVisor batch/v1 Job, reports the Job's progress in the sandbox's status,
 * and cleans up (docs/operator.md).
 *
 * Shape: three resilient watches (ConversionSandboxes; Jobs and Pods carrying
 * the `app.kubernetes.io/managed-by=folio-operator` label) map every event to
 * the owning sandbox's key in one keyed work queue; a single worker
 * reconciles one key at a time. Every replica watches (so a new leader starts
 * warm, and readiness means the same on all), but only the Lease holder runs
 * the worker, and its client refuses writes unless it leads.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { ConfigError, type OperatorConfig } from "../platform/config/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { BackoffOptions } from "./backoff.ts";
import { parseLabelSelector } from "./job.ts";
import { controllerOf, isConflict, KubeApiError, KubeClient, NotLeaderError, type Job, type Pod } from "./kube.ts";
import { LeaderElector } from "./lease.ts";
import { OperatorMetrics } from "./metrics.ts";
import { WorkQueue, type WorkOutcome } from "./queue.ts";
import { PoolReconciler, POOL_KEY_PREFIX } from "./pool-reconciler.ts";
import { NETWORK_POLICY_KEY, Reconciler } from "./reconciler.ts";
import { KIND, LABELS, POOL_KIND, SANDBOX_POD_LABELS, type ConversionSandbox, type ConversionSandboxPool, type SandboxPhase } from "./types.ts";
import { Informer, type InformerEvent } from "./watch.ts";

export * from "./types.ts";
export { buildJob, buildNetworkPolicy, jobNameFor, NETWORK_POLICY_NAME, type JobSettings } from "./job.ts";
export { deriveStatus, parseTerminationMessage, type DeriveInput, type Derived } from "./status.ts";
export {
  ConversionSandboxSchema,
  ConversionSandboxSpecSchema,
  ConversionSandboxStatusSchema,
  ConversionSandboxPoolSpecSchema,
  ConversionSandboxPoolStatusSchema,
  TerminationMessageSchema,
} from "./schema.ts";
export { OperatorMetrics } from "./metrics.ts";
export { KubeApiError, KubeClient, NotLeaderError, type Job } from "./kube.ts";
export { Informer } from "./watch.ts";
export { buildPoolJob, planPool, poolLabels, POOL_DEFAULTS, REPORT_STALE_MS, type PoolPlan } from "./pool.ts";

/** Intervals and delays that are not configuration (production values below); tests shorten them. */
export interface OperatorTiming {
  /** Every this often the leader re-queues every sandbox and re-checks the NetworkPolicy, events or not. */
  resyncMs: number;
  /** Back-off of a key whose reconcile failed. */
  queueBackoff: BackoffOptions;
  /** Back-off of a watch that failed (other than 410 Gone, which relists at once). */
  watchBackoff: BackoffOptions;
  /** How long an image pull may fail before the sandbox fails with ImagePullFailed. */
  imagePullGraceMs: number;
  /** How long a non-zero exit waits for the Job to say why (DeadlineExceeded) before it is PodFailed. */
  jobVerdictGraceMs: number;
  /** Time limit of one API request (watches excepted). */
  requestTimeoutMs: number;
}

export const DEFAULT_TIMING: Readonly<OperatorTiming> = Object.freeze({
  resyncMs: 60_000,
  queueBackoff: { baseMs: 500, maxMs: 5 * 60_000 },
  watchBackoff: { baseMs: 1000, maxMs: 30_000 },
  imagePullGraceMs: 60_000,
  jobVerdictGraceMs: 10_000,
  requestTimeoutMs: 30_000,
});

export interface OperatorOptions {
  config: OperatorConfig;
  log: Logger;
  kubeConfig: KubeConfig;
  /** Build the metrics with process metrics (CPU, memory) for serving; off by default (tests run several operators). */
  metricsEnabled?: boolean;
  /** Metrics to record into; a new OperatorMetrics when omitted. */
  metrics?: OperatorMetrics;
  timing?: Partial<OperatorTiming>;
}

export interface WatchHealth {
  synced: boolean;
  watching: boolean;
  lists: number;
}

export interface RunningOperator {
  /** Holder identity of this replica in the Lease. */
  readonly identity: string;
  readonly metrics: OperatorMetrics;
  /** Whether this replica leads (and reconciles) right now. */
  isLeader(): boolean;
  /** Ready: every watch has listed its resource at least once. Leader or follower alike. */
  ready(): boolean;
  /** What /readyz shows. */
  health(): { ready: boolean; leader: boolean; identity: string; holder: string | null; queue: number; watches: Record<string, WatchHealth> };
  /** Stops reconciling (after the key in hand), releases the Lease, ends the watches. */
  close(): Promise<void>;
}

export async function startOperator(options: OperatorOptions): Promise<RunningOperator> {
  const { config, kubeConfig } = options;
  try {
    parseLabelSelector(config.FOLIO_CONVERSION_POD_SELECTOR);
  } catch (err) {
    // The schema only knows it is a non-empty string; a selector the NetworkPolicy cannot use must stop the start.
    throw new ConfigError("FOLIO_CONVERSION_POD_SELECTOR", (err as Error).message);
  }
  const timing: OperatorTiming = { ...DEFAULT_TIMING, ...options.timing };
  const namespace = config.FOLIO_OPERATOR_NAMESPACE;
  const identity = config.FOLIO_OPERATOR_IDENTITY ?? `${hostname()}-${randomBytes(4).toString("hex")}`;
  const log = options.log.child({ component: "operator", namespace, identity });
  const metrics = options.metrics ?? new OperatorMetrics(options.metricsEnabled ?? false);

  const client = new KubeClient(kubeConfig, { requestTimeoutMs: timing.requestTimeoutMs, userAgent: `folio-operator/${identity}` });
  // Everything the reconciler writes goes through this client: a follower cannot write by mistake.
  const writer = client.guarded((what) => {
    if (!elector.isLeader()) throw new NotLeaderError(what);
  });
  const queue = new WorkQueue(timing.queueBackoff);

  const watchOptions = { client, namespace, idleMs: config.FOLIO_WATCH_IDLE_SECONDS * 1000, backoff: timing.watchBackoff, log };
  const managed = `${LABELS.managedBy}=${SANDBOX_POD_LABELS[LABELS.managedBy]}`;
  const restarts = (resource: string) => (reason: string) => metrics.watchRestarts.inc({ resource, reason });
  const sandboxes = new Informer<ConversionSandbox>({
    ...watchOptions,
    resource: "conversionsandboxes",
    onEvent: (e) => queue.add(e.object.metadata.name),
    onRestart: restarts("conversionsandboxes"),
  });
  // The Jobs and pods the operator made: an event on one reconciles its owner.
  const owned = <T extends Job | Pod>(resource: "jobs" | "pods") =>
    new Informer<T>({
      ...watchOptions,
      resource,
      labelSelector: managed,
      onEvent: (e) => enqueueOwner(e),
      onRestart: restarts(resource),
    });
  const jobs: Informer<Job> = owned<Job>("jobs");
  const pods = owned<Pod>("pods");
  const pools = new Informer<ConversionSandboxPool>({
    ...watchOptions,
    resource: "conversionsandboxpools",
    onEvent: (e) => queue.add(POOL_KEY_PREFIX + e.object.metadata.name),
    onRestart: restarts("conversionsandboxpools"),
  });
  const informers = { conversionsandboxes: sandboxes, conversionsandboxpools: pools, jobs, pods };

  /**
   * A Job's sandbox or pool is its controller; a pod's is its Job's (the
   * label is the fallback, e.g. before the Job is seen).
   */
  function enqueueOwner(event: InformerEvent<Job | Pod>): void {
    const object = event.object;
    const jobName = controllerOf(object, "Job")?.name;
    const owner = jobName ? jobs.get(jobName) : object;
    const pool = owner && controllerOf(owner, POOL_KIND)?.name;
    if (pool) return queue.add(POOL_KEY_PREFIX + pool);
    let sandbox = controllerOf(object, KIND)?.name;
    if (!sandbox) {
      const job = jobName ? jobs.get(jobName) : undefined;
      sandbox = (job && controllerOf(job, KIND)?.name) ?? object.metadata?.labels?.[LABELS.sandbox];
    }
    if (sandbox) queue.add(sandbox);
  }

  function enqueueAll(): void {
    queue.add(NETWORK_POLICY_KEY);
    for (const s of sandboxes.list()) queue.add(s.metadata.name);
    for (const p of pools.list()) queue.add(POOL_KEY_PREFIX + p.metadata.name);
  }

  // What both reconcilers work with: the leader-only writer, the informers' caches, telemetry.
  const context = { client: writer, namespace, config, jobs, pods, log, metrics };
  const reconciler = new Reconciler({
    ...context,
    imagePullGraceMs: timing.imagePullGraceMs,
    jobVerdictGraceMs: timing.jobVerdictGraceMs,
  });

  const poolReconciler = new PoolReconciler({
    ...context,
    ensureNetworkPolicy: () => reconciler.fenceReady(),
  });

  const handle = async (key: string) => {
    if (!elector.isLeader()) throw new NotLeaderError(`reconcile ${key}`);
    if (key.startsWith(POOL_KEY_PREFIX)) return poolReconciler.reconcile(key.slice(POOL_KEY_PREFIX.length));
    return reconciler.reconcile(key);
  };

  const report = (outcome: WorkOutcome) => {
    metrics.reconcileDuration.observe(outcome.durationMs / 1000);
    if (outcome.error === undefined) {
      metrics.reconciles.inc({ outcome: "ok" });
      return;
    }
    const err = outcome.error;
    const context = { key: outcome.key, retryInMs: outcome.retryInMs };
    if (err instanceof NotLeaderError) {
      metrics.reconciles.inc({ outcome: "requeued" });
      metrics.reconcileErrors.inc({ kind: "not_leader" });
      log.debug({ ...context, err }, "reconcile stopped: no longer the leader");
    } else if (isConflict(err)) {
      // Expected: the object changed since it was read; the retry reads it again.
      metrics.reconciles.inc({ outcome: "requeued" });
      metrics.reconcileErrors.inc({ kind: "conflict" });
      log.debug({ ...context, err }, "reconcile conflict; retrying");
    } else if (err instanceof KubeApiError) {
      metrics.reconciles.inc({ outcome: "error" });
      metrics.reconcileErrors.inc({ kind: "api" });
      log.warn({ ...context, err, status: err.status, reason: err.reason, retryable: err.retryable }, "reconcile failed on an API call; retrying");
    } else {
      metrics.reconciles.inc({ outcome: "error" });
      metrics.reconcileErrors.inc({ kind: "unexpected" });
      log.error({ ...context, err }, "reconcile failed unexpectedly; retrying");
    }
  };

  const elector = new LeaderElector({
    client,
    namespace,
    name: config.FOLIO_LEASE_NAME,
    identity,
    leaseDurationSeconds: config.FOLIO_LEASE_DURATION_SECONDS,
    renewIntervalMs: config.FOLIO_LEASE_RENEW_SECONDS * 1000,
    log,
    onStartedLeading: () => {
      metrics.leader.set(1);
      reconciler.resetNetworkPolicy();
      enqueueAll();
      queue.start(handle, report);
    },
    onStoppedLeading: () => {
      metrics.leader.set(0);
      void queue.stop();
    },
  });

  metrics.observe(
    () => {
      const counts: Partial<Record<SandboxPhase | "Unknown", number>> = {};
      for (const s of sandboxes.list()) {
        const phase = s.status?.phase ?? "Unknown";
        counts[phase] = (counts[phase] ?? 0) + 1;
      }
      return counts;
    },
    () => queue.length,
  );

  const resync = setInterval(() => {
    if (elector.isLeader()) enqueueAll();
  }, timing.resyncMs);
  resync.unref();

  sandboxes.start();
  pools.start();
  jobs.start();
  pods.start();
  elector.start();
  log.info({ lease: config.FOLIO_LEASE_NAME }, "operator started");

  // The pool's watch is left out: an upgrade that did not install the ConversionSandboxPool CRD yet
  // (Helm does not upgrade crds/) must not take the per-document path down with it. /readyz shows it.
  const ready = () => [sandboxes, jobs, pods].every((i) => i.synced);
  let closing: Promise<void> | undefined;
  return {
    identity,
    metrics,
    isLeader: () => elector.isLeader(),
    ready,
    health: () => ({
      ready: ready(),
      leader: elector.isLeader(),
      identity,
      holder: elector.holder ?? null,
      queue: queue.length,
      watches: Object.fromEntries(Object.entries(informers).map(([name, i]) => [name, { synced: i.synced, watching: i.watching, lists: i.lists }])),
    }),
    close: () =>
      (closing ??= (async () => {
        clearInterval(resync);
        // The key in hand finishes before the Lease is released, so a successor never overlaps it.
        await queue.stop();
        await elector.close();
        await Promise.all(Object.values(informers).map((i) => i.close()));
        await queue.close();
        metrics.leader.set(0);
        log.info("operator stopped");
      })()),
  };
}
