/**
 * The real operator reconciling ConversionSandboxPools against the fake API
 * server (test/fake-kube-api.ts, a test double: no real API server runs on
 * these machines). The test writes the conversion replicas' demand reports
 * and plays the Job controller's status; no sandbox program runs here
 * (internal/sandbox/kubernetes/backend.pool.test.ts runs them).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../test/fake-kube-api.ts";
import { Harness, NS, until } from "./testserver.ts";
import { LABELS, POOL_ANNOTATIONS, type ConversionSandboxPool, type PoolReplicaReport } from "./types.ts";

let h: Harness;
beforeEach(async () => {
  h = await Harness.start();
});
afterEach(async () => {
  await h.close();
});

const POOL = "folio-sandbox";

function createPool(spec: Partial<ConversionSandboxPool["spec"]>): void {
  h.api.put("conversionsandboxpools", {
    apiVersion: "folio.dev/v1alpha1",
    kind: "ConversionSandboxPool",
    metadata: { name: POOL, namespace: NS },
    spec: { minReady: 0, max: 10, ...spec },
  });
}

/** Writes one replica's report as the conversion service does (merge into status.replicas). */
function reportDemand(replica: string, overrides: Partial<PoolReplicaReport> = {}): void {
  h.api.setStatus("conversionsandboxpools", NS, POOL, {
    replicas: {
      [replica]: { brokerAddress: `${replica}.folio-conversion-broker.${NS}.svc:50053`, waiting: 0, handInRate: 0, idle: 0, busy: 0, reportedAt: new Date().toISOString(), ...overrides },
    },
  });
}

const poolJobs = () => h.api.list("jobs", NS).filter((j) => (j.metadata.labels as Record<string, string> | undefined)?.[LABELS.pool] === POOL);
const poolStatus = () => (h.api.get("conversionsandboxpools", NS, POOL) as unknown as ConversionSandboxPool | undefined)?.status;
const envOf = (job: KubeObject) =>
  Object.fromEntries(((job.spec as { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } }).template.spec.containers[0]!.env ?? []).map((e) => [e.name, e.value]));

describe("the operator and a ConversionSandboxPool", () => {
  it("keeps minReady warm Jobs at the reporting replica's broker, with a NetworkPolicy fencing them in, and writes the status", async () => {
    await h.leader();
    createPool({ minReady: 3 });
    reportDemand("conv-0");
    await until(() => poolJobs().length === 3, 10_000, () => `3 warm Jobs, got ${poolJobs().length}`);
    for (const job of poolJobs()) {
      expect(envOf(job).FOLIO_BROKER_ADDRESS).toBe(`conv-0.folio-conversion-broker.${NS}.svc:50053`);
      expect(envOf(job).FOLIO_POOL).toBe(POOL);
      expect((job.metadata.annotations as Record<string, string>)[POOL_ANNOTATIONS.replica]).toBe("conv-0");
    }
    expect(h.api.get("networkpolicies", NS, "folio-sandbox"), "the NetworkPolicy").toBeDefined();
    await until(() => poolStatus()?.active === 3 && poolStatus()?.wanted === 3, 10_000, () => `status ${JSON.stringify(poolStatus())}`);
    // Stays at three: reconciles repeated by events and resyncs create no more.
    await new Promise((r) => setTimeout(r, 1500));
    expect(poolJobs().length).toBe(3);
  });

  it("replaces a warm pod that finished, and grows with the reported demand up to max", async () => {
    await h.leader();
    createPool({ minReady: 1, max: 4, leadSeconds: 10 });
    reportDemand("conv-0");
    const first = (await until(() => poolJobs()[0], 10_000, "the first warm Job")).metadata.name;
    h.api.setStatus("jobs", NS, first, { active: 0, succeeded: 1, conditions: [{ type: "Complete", status: "True" }] });
    await until(() => !h.api.get("jobs", NS, first) && poolJobs().length === 1, 10_000, () => `the finished Job replaced, got ${poolJobs().map((j) => j.metadata.name).join(",")}`);

    reportDemand("conv-0", { waiting: 2, handInRate: 1 }); // 1/s × 10 s + 2 = 12 wanted, max 4
    await until(() => poolJobs().length === 4, 10_000, () => `max 4 Jobs, got ${poolJobs().length}`);
    await until(() => /max \(4\)/.test(poolStatus()?.message ?? ""), 10_000, () => `a message about max, got ${JSON.stringify(poolStatus())}`);
  });

  it("creates nothing without demand when minReady is 0 (scale to zero)", async () => {
    await h.leader();
    createPool({ minReady: 0 });
    reportDemand("conv-0");
    await until(() => poolStatus()?.wanted === 0, 10_000, () => `status ${JSON.stringify(poolStatus())}`);
    expect(poolJobs()).toEqual([]);
  });

  it("deletes a Job its replica reports overdue (its pod goes with it) and one whose replica stopped reporting", async () => {
    await h.leader();
    createPool({ minReady: 2 });
    reportDemand("conv-0");
    reportDemand("conv-1");
    await until(() => poolJobs().length === 2, 10_000, "two warm Jobs, one per replica");
    const ofReplica = (r: string) => poolJobs().find((j) => (j.metadata.annotations as Record<string, string>)[POOL_ANNOTATIONS.replica] === r)!.metadata.name;
    const overdue = ofReplica("conv-0");
    const podOfOverdue = await until(() => h.podOf(overdue), 10_000, "the overdue Job's pod");
    reportDemand("conv-0", { busy: 1, overdue: [overdue] });
    await until(() => !h.api.get("jobs", NS, overdue) && !h.api.get("pods", NS, podOfOverdue.metadata.name), 10_000, "the overdue Job and its pod deleted");
    const deletes = h.api.requests.filter((r) => r.method === "DELETE" && r.path.endsWith(`/jobs/${overdue}`));
    expect(deletes.map((r) => r.query.propagationPolicy ?? (r.body as { propagationPolicy?: string } | undefined)?.propagationPolicy)).toContain("Background");

    const orphan = ofReplica("conv-1");
    reportDemand("conv-1", { reportedAt: new Date(Date.now() - 120_000).toISOString() });
    await until(() => !h.api.get("jobs", NS, orphan), 10_000, "the orphaned Job deleted");
    await until(() => poolStatus()?.replicas?.["conv-1"] === undefined, 10_000, () => `the stale report removed, got ${JSON.stringify(poolStatus()?.replicas)}`);
  });

  it("deletes the pool's Jobs with the pool (owner references)", async () => {
    await h.leader();
    createPool({ minReady: 2 });
    reportDemand("conv-0");
    await until(() => poolJobs().length === 2, 10_000, "two warm Jobs");
    h.api.remove("conversionsandboxpools", NS, POOL);
    await until(() => poolJobs().length === 0, 10_000, "the Jobs gone with their pool");
  });
});
