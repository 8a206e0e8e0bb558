/**
 * Reconciles one ConversionSandboxPool per call (queue key `pool:<name>`),
 * idempotently: reads the pool and its Jobs, asks {@link planPool} what to
 * do, deletes finished, overdue and orphaned Jobs, creates warm pods, and
 * writes the status (docs/operator.md, "The warm pool").
 *
 * Jobs it created are counted as active until the watch shows them (for at
 * most {@link PENDING_MS}), so a reconcile that runs before the watch caught
 * up does not create them a second time: the same "expectations" that
 * Kubernetes' own controllers keep.
 */
import type { OperatorConfig } from "../platform/config/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { controllerOf, isConflict, type Job, type KubeClient, type Pod } from "./kube.ts";
import type { OperatorMetrics } from "./metrics.ts";
import { buildPoolJob, planPool, poolLabels } from "./pool.ts";
import type { WorkResult } from "./queue.ts";
import { LABELS, POOL_KIND, type ConversionSandboxPool, type ConversionSandboxPoolStatus } from "./types.ts";

/** Queue keys of pools: `pool:<name>` (no sandbox name has a colon). */
export const POOL_KEY_PREFIX = "pool:";
/** How long a created Job counts as active without the watch having shown it. */
const PENDING_MS = 30_000;
/** Look at every pool this often anyway: reports go stale by the clock, not by an event. */
const POOL_RECHECK_MS = 5_000;
/** API writes of one reconcile in flight at once. */
const WRITE_CONCURRENCY = 16;

export interface PoolReconcilerOptions {
  client: KubeClient;
  namespace: string;
  config: OperatorConfig;
  jobs: { list(): Job[] };
  pods: { list(): Pod[] };
  log: Logger;
  metrics: OperatorMetrics;
  /** Called before the first Job is created: the NetworkPolicy must fence warm pods in like any sandbox. */
  ensureNetworkPolicy: () => Promise<void>;
  now?: () => number;
}

export class PoolReconciler {
  private readonly now: () => number;
  /** Per pool: Jobs created and not yet seen by the watch → replica and when. */
  private readonly pending = new Map<string, Map<string, { replica: string; at: number }>>();

  constructor(private readonly options: PoolReconcilerOptions) {
    this.now = options.now ?? Date.now;
  }

  async reconcile(name: string): Promise<WorkResult | void> {
    const { client, namespace, log: baseLog, metrics } = this.options;
    const pool = await client.get("conversionsandboxpools", namespace, name);
    if (!pool) {
      // Deleted: its Jobs go with it (owner references).
      this.pending.delete(name);
      metrics.forgetPool(name);
      return;
    }
    const log = baseLog.child({ pool: name });
    const now = this.now();
    const mine = this.options.jobs.list().filter((j) => controllerOf(j, POOL_KIND)?.uid === pool.metadata.uid);
    const pending = this.pending.get(name) ?? new Map<string, { replica: string; at: number }>();
    this.pending.set(name, pending);
    const seen = new Set(mine.map((j) => j.metadata?.name));
    const pendingBy: Record<string, number> = {};
    for (const [job, p] of pending) {
      if (seen.has(job) || now - p.at > PENDING_MS) pending.delete(job);
      else pendingBy[p.replica] = (pendingBy[p.replica] ?? 0) + 1;
    }

    const plan = planPool({ pool, jobs: mine, pending: pendingBy, now });

    await eachLimited(plan.remove, WRITE_CONCURRENCY, async ({ job, why }) => {
      // Background: the pod goes with its Job (a busy overdue pod is killed here).
      const deleted = await client.delete("jobs", namespace, job, "Background");
      if (deleted) {
        metrics.poolJobsDeleted.inc({ pool: name, why });
        if (why === "finished") log.debug({ job }, "finished warm Job deleted");
        else log.info({ job, why }, "warm Job deleted");
      }
    });

    const creations = plan.create.flatMap((c) => Array.from({ length: c.count }, () => c));
    if (creations.length > 0) await this.options.ensureNetworkPolicy();
    await eachLimited(creations, WRITE_CONCURRENCY, async (target) => {
      const { job } = buildPoolJob(pool, namespace, target, this.options.config);
      const jobName = job.metadata!.name!;
      pending.set(jobName, { replica: target.replica, at: now });
      try {
        await client.create("jobs", namespace, job);
        metrics.poolJobsCreated.inc({ pool: name });
      } catch (err) {
        pending.delete(jobName);
        // A random name taken already: the next reconcile makes another.
        if (!isConflict(err)) throw err;
      }
    });
    if (creations.length > 0) log.info({ created: creations.length, active: plan.active, wanted: plan.wanted }, "warm pods created");

    const podLabel = poolLabels(name)[LABELS.pool];
    const ready = this.options.pods
      .list()
      .filter((p) => p.metadata?.labels?.[LABELS.pool] === podLabel && p.status?.phase === "Running" && !p.metadata?.deletionTimestamp)
      .filter((p) => mine.some((j) => j.metadata?.name === p.metadata?.labels?.["job-name"])).length;
    metrics.setPool(name, { active: plan.active, ready, idle: plan.idle, wanted: plan.wanted });
    await this.writeStatus(pool, {
      active: plan.active,
      ready,
      idle: plan.idle,
      wanted: plan.wanted,
      message: plan.message,
      observedGeneration: pool.metadata.generation,
    }, plan.staleReplicas);
    return { requeueAfterMs: POOL_RECHECK_MS };
  }

  /** Merge-patches only what changed; never touches another replica's report except to remove a stale one. */
  private async writeStatus(pool: ConversionSandboxPool, next: Omit<ConversionSandboxPoolStatus, "replicas">, stale: string[]): Promise<void> {
    const current = pool.status ?? {};
    const patch: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(next)) {
      const was = (current as Record<string, unknown>)[key];
      if (value === undefined) {
        if (was !== undefined) patch[key] = null;
      } else if (value !== was) {
        patch[key] = value;
      }
    }
    if (stale.length) patch.replicas = Object.fromEntries(stale.map((r) => [r, null]));
    if (Object.keys(patch).length === 0) return;
    await this.options.client.mergePatch("conversionsandboxpools", this.options.namespace, pool.metadata.name, { status: patch }, "status");
  }
}

/** Runs `fn` over `items`, at most `limit` at once; the first failure is thrown after all settled. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item).catch((err: unknown) => errors.push(err));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length) throw errors[0];
}
