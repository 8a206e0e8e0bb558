/**
 * The warm pool, pure parts: how many warm pods a ConversionSandboxPool
 * wants where, from its spec and the conversion replicas' demand reports
 * ({@link planPool}), and the Job of one warm pod ({@link buildPoolJob}).
 * No I/O and no clock of its own, so every case is a unit test; the
 * reconciler (`pool-reconciler.ts`) does the reading and writing.
 *
 * Sizing (docs/operator.md, "The warm pool"): each replica that reported in
 * the last {@link REPORT_STALE_MS} wants
 *
 *     wantIdle = max(its share of minReady, ceil(handInRate × leadSeconds) + waiting)
 *
 * warm pods waiting at its broker. It has `active − busy` pods waiting or on
 * their way (active: Jobs not finished, including ones just created and not
 * yet seen by the watch; busy: the active Jobs the replica names as
 * converting); the difference is created, at most up to `max`
 * pods of the pool in total. Nothing is deleted to shrink the pool: a warm
 * pod that waited `idleSeconds` without a document exits by itself, and only
 * then is it not replaced. Deleting a pod to shrink would need to know it is
 * idle, which only the broker knows, and could kill a conversion.
 */
import { createHash, randomBytes } from "node:crypto";
import type { V1Job, V1OwnerReference } from "@kubernetes/client-node";
import { jobNameFor, sandboxPodSpec, type JobSettings } from "./job.ts";
import type { Job } from "./kube.ts";
import { API_VERSION, LABELS, POOL_ANNOTATIONS, POOL_KIND, SANDBOX_ENV, SANDBOX_POD_LABELS, type ConversionSandboxPool, type PoolReplicaReport } from "./types.ts";

/** A replica whose last report is older than this is gone (or cut off): it gets no warm pods, and its pods are deleted. */
export const REPORT_STALE_MS = 60_000;
/** Room after idle + conversion before the Job's deadline kills the pod: the program's start and its result's upload. */
export const POOL_DEADLINE_SLACK_SECONDS = 30;
export const POOL_DEFAULTS = Object.freeze({ minReady: 0, leadSeconds: 10, idleSeconds: 600, timeoutSeconds: 300 });
/** Random bytes of a warm pod's broker token (as the per-document tokens). */
const TOKEN_BYTES = 32;

/** The spec with its defaults filled in (the API server defaults them too; a test or an old object may not have them). */
export function poolSpec(pool: ConversionSandboxPool): Required<Omit<ConversionSandboxPool["spec"], "resources">> & Pick<ConversionSandboxPool["spec"], "resources"> {
  const s = pool.spec;
  return {
    minReady: s.minReady ?? POOL_DEFAULTS.minReady,
    max: s.max,
    leadSeconds: s.leadSeconds ?? POOL_DEFAULTS.leadSeconds,
    idleSeconds: s.idleSeconds ?? POOL_DEFAULTS.idleSeconds,
    timeoutSeconds: s.timeoutSeconds ?? POOL_DEFAULTS.timeoutSeconds,
    ...(s.resources ? { resources: s.resources } : {}),
  };
}

/** Whether a Job has finished (its one pod ended, or the Job failed: deadline, deletion of its pod, ...). */
export function jobFinished(job: Job): boolean {
  const s = job.status;
  if ((s?.succeeded ?? 0) > 0 || (s?.failed ?? 0) > 0) return true;
  return (s?.conditions ?? []).some((c) => (c.type === "Complete" || c.type === "Failed") && c.status === "True");
}

export interface PlanInput {
  pool: ConversionSandboxPool;
  /** The pool's Jobs (controlled by it), as the watch shows them. */
  jobs: Job[];
  /** Jobs created but not yet seen by the watch, by replica (they count as active). */
  pending?: Record<string, number>;
  /** Epoch ms. */
  now: number;
}

export interface PoolPlan {
  /** Warm pods to create, per replica. */
  create: { replica: string; brokerAddress: string; count: number }[];
  /** Jobs to delete, with why: finished (replaced), overdue (reported by its replica), orphaned (its replica stopped reporting). */
  remove: { job: string; why: "finished" | "overdue" | "orphaned" }[];
  /** Reports older than {@link REPORT_STALE_MS}: removed from the status. */
  staleReplicas: string[];
  active: number;
  idle: number;
  wanted: number;
  /** Why the pool is not at its wanted size, when it is not. */
  message?: string;
}

/** What the operator should do for one pool now (see the module comment). */
export function planPool(input: PlanInput): PoolPlan {
  const { pool, jobs, now } = input;
  const spec = poolSpec(pool);
  const reports = Object.entries(pool.status?.replicas ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const fresh = new Map<string, PoolReplicaReport>();
  const staleReplicas: string[] = [];
  for (const [replica, report] of reports) {
    const at = Date.parse(report.reportedAt);
    if (Number.isFinite(at) && now - at <= REPORT_STALE_MS) fresh.set(replica, report);
    else staleReplicas.push(replica);
  }

  const remove: PoolPlan["remove"] = [];
  const overdue = new Set([...fresh.values()].flatMap((r) => r.overdue ?? []));
  const activeBy = new Map<string, number>();
  const busyBy = new Map<string, number>();
  const busyJobs = new Set([...fresh.values()].flatMap((r) => r.busyJobs ?? []));
  for (const job of jobs) {
    const name = job.metadata?.name ?? "";
    if (!name || job.metadata?.deletionTimestamp) continue;
    if (jobFinished(job)) {
      remove.push({ job: name, why: "finished" });
      continue;
    }
    const replica = job.metadata?.annotations?.[POOL_ANNOTATIONS.replica] ?? "";
    if (overdue.has(name)) {
      remove.push({ job: name, why: "overdue" });
      continue;
    }
    if (!fresh.has(replica)) {
      // Its broker is gone: the pod can never get a document (and one it holds cannot be returned).
      remove.push({ job: name, why: "orphaned" });
      continue;
    }
    activeBy.set(replica, (activeBy.get(replica) ?? 0) + 1);
    if (busyJobs.has(name)) busyBy.set(replica, (busyBy.get(replica) ?? 0) + 1);
  }
  for (const [replica, n] of Object.entries(input.pending ?? {})) activeBy.set(replica, (activeBy.get(replica) ?? 0) + n);

  let active = [...activeBy.values()].reduce((a, b) => a + b, 0);
  const replicas = [...fresh.keys()];
  const create: PoolPlan["create"] = [];
  let wanted = 0;
  let idle = 0;
  let short = 0;
  const needs = replicas.map((replica, i) => {
    const report = fresh.get(replica)!;
    // minReady spread evenly, the remainder to the first replicas (sorted by key: stable between reconciles).
    const share = Math.floor(spec.minReady / replicas.length) + (i < spec.minReady % replicas.length ? 1 : 0);
    const demand = Math.ceil(report.handInRate * spec.leadSeconds) + report.waiting;
    const wantIdle = Math.max(share, demand);
    const mine = activeBy.get(replica) ?? 0;
    // Busy pods by name when the report names them (a pod that exited since does not count), else the count.
    const busy = report.busyJobs ? (busyBy.get(replica) ?? 0) : report.busy;
    const coming = Math.max(0, mine - Math.min(busy, mine));
    wanted += wantIdle;
    idle += report.idle;
    return { replica, brokerAddress: report.brokerAddress, need: Math.max(0, wantIdle - coming) };
  });
  // The neediest first, so a capped pool serves the replica with the longest queue.
  needs.sort((a, b) => b.need - a.need || a.replica.localeCompare(b.replica));
  for (const n of needs) {
    const count = Math.min(n.need, Math.max(0, spec.max - active));
    short += n.need - count;
    if (count > 0) {
      create.push({ replica: n.replica, brokerAddress: n.brokerAddress, count });
      active += count;
    }
  }

  let message: string | undefined;
  if (replicas.length === 0 && spec.minReady > 0) message = "no conversion replica has reported in the last minute: there is no broker for warm pods to wait at";
  else if (short > 0) message = `${short} more warm pods wanted than max (${spec.max}) allows`;
  return { create, remove, staleReplicas, active, idle, wanted: Math.min(wanted, spec.max), ...(message ? { message } : {}) };
}

export interface PoolJob {
  job: V1Job;
  /** The pod's broker token (it goes only into the pod's environment; its hash into an annotation). */
  token: string;
}

/** A Job name for a new warm pod of `pool`: a readable prefix and a random suffix, at most 63 characters. */
export function poolJobName(poolName: string): string {
  const prefix = jobNameFor(poolName).slice(0, 50).replace(/-+$/, "");
  return `${prefix}-${randomBytes(4).toString("hex")}`;
}

export function poolOwnerReference(pool: ConversionSandboxPool): V1OwnerReference {
  if (!pool.metadata.uid) throw new TypeError(`ConversionSandboxPool ${pool.metadata.name} has no uid: it was not read from the API server`);
  return { apiVersion: API_VERSION, kind: POOL_KIND, name: pool.metadata.name, uid: pool.metadata.uid, controller: true, blockOwnerDeletion: true };
}

/** Labels of a warm pod's Job and pod: the sandbox labels (the NetworkPolicy selects them) plus the pool's name. */
export function poolLabels(poolName: string): Record<string, string> {
  return { ...SANDBOX_POD_LABELS, [LABELS.pool]: poolName.length <= 63 ? poolName : jobNameFor(poolName) };
}

/**
 * The Job of one warm pod: the same locked-down pod as a per-document
 * sandbox (job.ts), waiting at `brokerAddress` with a token of its own.
 * Deadline: idleSeconds of waiting, timeoutSeconds of converting, and slack.
 */
export function buildPoolJob(pool: ConversionSandboxPool, namespace: string, target: { replica: string; brokerAddress: string }, settings: JobSettings, name = poolJobName(pool.metadata.name)): PoolJob {
  const spec = poolSpec(pool);
  const token = randomBytes(TOKEN_BYTES).toString("base64url");
  const labels = poolLabels(pool.metadata.name);
  const env = [
    { name: SANDBOX_ENV.brokerAddress, value: target.brokerAddress },
    { name: SANDBOX_ENV.brokerToken, value: token },
    { name: SANDBOX_ENV.pool, value: pool.metadata.name },
    { name: SANDBOX_ENV.poolIdleSeconds, value: String(spec.idleSeconds) },
    { name: "HOME", value: "/tmp" },
    { name: "TMPDIR", value: "/tmp" },
  ];
  const job: V1Job = {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name,
      namespace,
      labels,
      annotations: {
        [POOL_ANNOTATIONS.tokenHash]: createHash("sha256").update(token, "utf8").digest("hex"),
        [POOL_ANNOTATIONS.maxDocumentMs]: String(spec.timeoutSeconds * 1000),
        [POOL_ANNOTATIONS.replica]: target.replica,
      },
      ownerReferences: [poolOwnerReference(pool)],
    },
    spec: {
      // One attempt: the token is single-use, and a pod that failed may have held a document.
      backoffLimit: 0,
      activeDeadlineSeconds: spec.idleSeconds + spec.timeoutSeconds + POOL_DEADLINE_SLACK_SECONDS,
      ttlSecondsAfterFinished: settings.FOLIO_SANDBOX_JOB_TTL_SECONDS,
      template: {
        metadata: { labels },
        spec: sandboxPodSpec(settings, env, { cpu: spec.resources?.cpu ?? settings.FOLIO_SANDBOX_CPU, memory: spec.resources?.memory ?? settings.FOLIO_SANDBOX_MEMORY }),
      },
    },
  };
  return { job, token };
}
