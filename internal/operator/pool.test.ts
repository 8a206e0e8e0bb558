// The warm pool's pure parts: how many pods a pool wants where (planPool), and the warm pod's Job (buildPoolJob).
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Job } from "./kube.ts";
import { buildPoolJob, planPool, POOL_DEADLINE_SLACK_SECONDS, REPORT_STALE_MS } from "./pool.ts";
import { testConfig } from "./testserver.ts";
import { POOL_ANNOTATIONS, POOL_KIND, SANDBOX_ENV, type ConversionSandboxPool, type PoolReplicaReport } from "./types.ts";

const NOW = Date.parse("2026-01-02T03:04:05Z");
const at = (msAgo: number) => new Date(NOW - msAgo).toISOString();

function report(overrides: Partial<PoolReplicaReport> = {}): PoolReplicaReport {
  return { brokerAddress: "conv-0.folio-conversion-broker.folio.svc:50053", waiting: 0, handInRate: 0, idle: 0, busy: 0, reportedAt: at(1000), ...overrides };
}

function pool(spec: Partial<ConversionSandboxPool["spec"]>, replicas: Record<string, PoolReplicaReport> = {}): ConversionSandboxPool {
  return {
    apiVersion: "folio.dev/v1alpha1",
    kind: POOL_KIND,
    metadata: { name: "folio-sandbox", namespace: "folio", uid: "pool-uid", generation: 1 },
    spec: { max: 10, ...spec },
    status: { replicas },
  };
}

function job(name: string, replica: string, state: "active" | "complete" | "failed" = "active"): Job {
  return {
    metadata: { name, annotations: { [POOL_ANNOTATIONS.replica]: replica } },
    status: state === "active" ? { active: 1 } : state === "complete" ? { succeeded: 1 } : { failed: 1 },
  };
}

const created = (plan: ReturnType<typeof planPool>) => Object.fromEntries(plan.create.map((c) => [c.replica, c.count]));

describe("planPool", () => {
  it("keeps minReady warm pods, spread over the replicas that report, and none without a report", () => {
    expect(created(planPool({ pool: pool({ minReady: 3 }, { a: report(), b: report() }), jobs: [], now: NOW }))).toEqual({ a: 2, b: 1 });
    const none = planPool({ pool: pool({ minReady: 3 }), jobs: [], now: NOW });
    expect(none.create).toEqual([]);
    expect(none.message).toMatch(/no conversion replica/);
  });

  it("sizes from demand: rate × leadSeconds + waiting, minus pods already waiting or starting", () => {
    const p = pool({ minReady: 1, leadSeconds: 10 }, { a: report({ handInRate: 0.5, waiting: 2 }) });
    // 0.5/s × 10 s + 2 waiting = 7 wanted; 2 active, none busy → 2 waiting or coming; 5 to create.
    const plan = planPool({ pool: p, jobs: [job("j1", "a"), job("j2", "a")], now: NOW });
    expect(plan.wanted).toBe(7);
    expect(created(plan)).toEqual({ a: 5 });
    // One of the two converting: it does not count as waiting.
    const busyOne = planPool({ pool: pool({ minReady: 1, leadSeconds: 10 }, { a: report({ handInRate: 0.5, waiting: 2, busy: 1 }) }), jobs: [job("j1", "a"), job("j2", "a")], now: NOW });
    expect(created(busyOne)).toEqual({ a: 6 });
  });

  it("never goes past max, and says so", () => {
    const plan = planPool({ pool: pool({ max: 4 }, { a: report({ waiting: 9 }) }), jobs: [job("j1", "a")], now: NOW });
    expect(created(plan)).toEqual({ a: 3 });
    expect(plan.active).toBe(4);
    expect(plan.message).toMatch(/max \(4\)/);
  });

  it("scales to zero: minReady 0 and no demand wants nothing", () => {
    const plan = planPool({ pool: pool({ minReady: 0 }, { a: report() }), jobs: [], now: NOW });
    expect(plan.create).toEqual([]);
    expect(plan.wanted).toBe(0);
    expect(plan.message).toBeUndefined();
  });

  it("counts Jobs created but not yet seen by the watch, so a quick second reconcile creates nothing more", () => {
    const p = pool({ minReady: 3 }, { a: report() });
    expect(created(planPool({ pool: p, jobs: [], now: NOW }))).toEqual({ a: 3 });
    expect(planPool({ pool: p, jobs: [], pending: { a: 3 }, now: NOW }).create).toEqual([]);
  });

  it("replaces finished pods, deletes overdue ones and those of replicas that stopped reporting", () => {
    const p = pool({ minReady: 2 }, { a: report({ overdue: ["j2"] }), gone: report({ reportedAt: at(REPORT_STALE_MS + 1000) }) });
    const plan = planPool({ pool: p, jobs: [job("j1", "a", "complete"), job("j2", "a"), job("j3", "gone"), job("j4", "a")], now: NOW });
    expect(plan.remove).toEqual([
      { job: "j1", why: "finished" },
      { job: "j2", why: "overdue" },
      { job: "j3", why: "orphaned" },
    ]);
    expect(plan.staleReplicas).toEqual(["gone"]);
    // j4 still counts; one more for minReady 2.
    expect(created(plan)).toEqual({ a: 1 });
  });
});

describe("buildPoolJob", () => {
  const config = testConfig({ FOLIO_SANDBOX_IMAGE: "folio-sandbox:1.2.3" });
  const p = pool({ minReady: 1, idleSeconds: 120, timeoutSeconds: 60, resources: { memory: "2Gi" } });
  const { job, token } = buildPoolJob(p, "folio", { replica: "conv-0", brokerAddress: "conv-0.folio-conversion-broker.folio.svc:50053" }, config);
  const podSpec = job.spec!.template.spec!;
  const container = podSpec.containers[0]!;
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));

  it("has today's lock-down: no token mounted, nobody, read-only root, no capability, gVisor, one attempt", () => {
    expect(podSpec.automountServiceAccountToken).toBe(false);
    expect(podSpec.enableServiceLinks).toBe(false);
    expect(podSpec.runtimeClassName).toBe("gvisor");
    expect(podSpec.restartPolicy).toBe("Never");
    expect(podSpec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65534 });
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, privileged: false, capabilities: { drop: ["ALL"] } });
    expect(container.resources).toEqual({ requests: { cpu: "1", memory: "2Gi" }, limits: { cpu: "1", memory: "2Gi" } });
    expect(job.spec!.backoffLimit).toBe(0);
  });

  it("carries the sandbox labels the NetworkPolicy selects, the pool's label and its controller", () => {
    expect(job.metadata!.labels).toEqual({
      "app.kubernetes.io/name": "folio",
      "app.kubernetes.io/component": "sandbox",
      "app.kubernetes.io/managed-by": "folio-operator",
      "folio.dev/pool": "folio-sandbox",
    });
    expect(job.metadata!.ownerReferences).toEqual([{ apiVersion: "folio.dev/v1alpha1", kind: POOL_KIND, name: "folio-sandbox", uid: "pool-uid", controller: true, blockOwnerDeletion: true }]);
    expect(job.metadata!.name!.length).toBeLessThanOrEqual(63);
  });

  it("gives the pod its replica's broker and a token of its own, whose hash only is on the Job", () => {
    expect(env[SANDBOX_ENV.brokerAddress]).toBe("conv-0.folio-conversion-broker.folio.svc:50053");
    expect(env[SANDBOX_ENV.brokerToken]).toBe(token);
    expect(env[SANDBOX_ENV.pool]).toBe("folio-sandbox");
    expect(env[SANDBOX_ENV.poolIdleSeconds]).toBe("120");
    expect(token.length).toBeGreaterThanOrEqual(43);
    expect(job.metadata!.annotations).toEqual({
      [POOL_ANNOTATIONS.tokenHash]: createHash("sha256").update(token).digest("hex"),
      [POOL_ANNOTATIONS.maxDocumentMs]: "60000",
      [POOL_ANNOTATIONS.replica]: "conv-0",
    });
    expect(JSON.stringify(job.metadata)).not.toContain(token);
    expect(buildPoolJob(p, "folio", { replica: "conv-0", brokerAddress: "x:1" }, config).token).not.toBe(token);
  });

  it("dies at idle + conversion + slack, whatever it is doing", () => {
    expect(job.spec!.activeDeadlineSeconds).toBe(120 + 60 + POOL_DEADLINE_SLACK_SECONDS);
  });
});

describe("planPool and busy pods", () => {
  it("counts as busy only the Jobs a report names that are still active, so a report older than a pod's exit does not inflate the pool", () => {
    // j1 exited (its Job gone) after the report named it busy; j2 waits, j3 starting.
    const p = pool({ minReady: 2 }, { a: report({ busy: 1, busyJobs: ["j1"] }) });
    const plan = planPool({ pool: p, jobs: [job("j2", "a"), job("j3", "a")], now: NOW });
    expect(plan.create).toEqual([]);
    // Named and still active: it does not count as waiting.
    const busy = planPool({ pool: pool({ minReady: 2 }, { a: report({ busy: 1, busyJobs: ["j2"] }) }), jobs: [job("j2", "a"), job("j3", "a")], now: NOW });
    expect(created(busy)).toEqual({ a: 1 });
  });
});
