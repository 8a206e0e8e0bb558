// Against the fake API server, two replicas each behind a recording proxy: only the Lease holder writes; a successor takes over a released or expired Lease.
import { afterEach, describe, expect, it } from "vitest";
import type { RunningOperator } from "./index.ts";
import { Harness, NS, pause, until, type RecordingProxy } from "./testserver.ts";

let harness: Harness;
afterEach(async () => {
  await harness?.close();
});

const MICROTIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- raw API objects in assertions

const writes = (proxy: RecordingProxy, since = 0) => proxy.requests.filter((r) => r.method !== "GET" && r.at >= since).map((r) => `${r.method} ${r.path}`);
const lease = () => harness.api.get("leases", NS, "folio-operator") as Obj | undefined;
const jobCreates = () => harness.api.requests.filter((r) => r.method === "POST" && r.path === `/apis/batch/v1/namespaces/${NS}/jobs`);

async function replica(identity: string): Promise<{ operator: RunningOperator; proxy: RecordingProxy }> {
  const { operator, proxy } = await harness.operator({ FOLIO_OPERATOR_IDENTITY: identity }, { proxied: true });
  return { operator, proxy: proxy! };
}

describe("operator: leader election", () => {
  it("lets a second replica do nothing while the first holds the Lease, then take over when the first stops", async () => {
    harness = await Harness.start();
    const a = await replica("replica-a");
    await until(() => a.operator.isLeader() && a.operator.ready(), 10_000, "replica-a to lead");
    const b = await replica("replica-b");
    await until(() => b.operator.ready(), 10_000, "replica-b's watches to sync");

    harness.createSandbox("csb-first");
    await until(() => harness.sandbox("csb-first")?.status?.phase === "Pending", 10_000, "csb-first to be reconciled");
    // Several renewals and a resync go by.
    await pause(1500);

    expect(b.operator.isLeader()).toBe(false);
    expect(writes(b.proxy), "the follower wrote").toEqual([]);
    expect(b.proxy.requests.some((r) => r.path.startsWith(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/folio-operator`))).toBe(true);
    expect(writes(a.proxy)).toEqual(expect.arrayContaining([`PUT /apis/coordination.k8s.io/v1/namespaces/${NS}/leases/folio-operator`]));
    expect(jobCreates()).toHaveLength(1);

    const held = lease()!;
    expect(held.spec).toMatchObject({ holderIdentity: "replica-a", leaseDurationSeconds: 2 });
    expect(held.spec.renewTime).toMatch(MICROTIME);
    expect(held.spec.acquireTime).toMatch(MICROTIME);

    await a.operator.close();
    expect(lease()!.spec.holderIdentity ?? "", "released on close").toBe("");
    await until(() => b.operator.isLeader(), 5000, "replica-b to take over");
    expect(lease()!.spec).toMatchObject({ holderIdentity: "replica-b" });
    expect(lease()!.spec.leaseTransitions).toBeGreaterThanOrEqual(1);

    harness.createSandbox("csb-second");
    await until(() => harness.api.get("jobs", NS, "csb-second"), 10_000, "replica-b to create csb-second's Job");
    await pause(500);
    expect(jobCreates(), "no Job created twice").toHaveLength(2);
    expect(harness.api.list("jobs", NS).map((j) => j.metadata.name).sort()).toEqual(["csb-first", "csb-second"]);
    expect(writes(b.proxy)).toEqual(expect.arrayContaining([`POST /apis/batch/v1/namespaces/${NS}/jobs`]));
  });

  it("stops a leader that cannot renew before its Lease expires; a follower takes the expired Lease over", async () => {
    harness = await Harness.start();
    const a = await replica("replica-a");
    await until(() => a.operator.isLeader(), 10_000, "replica-a to lead");
    const b = await replica("replica-b");
    await until(() => b.operator.ready(), 10_000, "replica-b's watches to sync");

    // Sample both replicas' view every few milliseconds from now on.
    const timeline: { at: number; a: boolean; b: boolean }[] = [];
    const sampler = setInterval(() => timeline.push({ at: Date.now(), a: a.operator.isLeader(), b: b.operator.isLeader() }), 5);
    try {
      const cut = Date.now();
      a.proxy.block(true);
      await until(() => !a.operator.isLeader(), 5000, "replica-a to stop leading");
      const steppedDown = Date.now();
      await until(() => b.operator.isLeader(), 10_000, "replica-b to take over the expired Lease");
      const tookOver = Date.now();

      // Its last successful write of the Lease (the create, or a renewal).
      const renewals = a.proxy.requests.filter((r) => r.method !== "GET" && r.path.includes("/leases") && r.at <= cut);
      const lastRenewal = renewals.at(-1)!.at;
      expect(steppedDown - lastRenewal, "replica-a stopped leading before its 2 s Lease ran out").toBeLessThan(2000);
      expect(timeline.filter((t) => t.a && t.b), "never two leaders at once").toEqual([]);
      expect(tookOver).toBeGreaterThan(steppedDown);
      expect(writes(a.proxy, steppedDown + 1), "replica-a wrote after it stopped leading").toEqual([]);

      harness.createSandbox("csb-after-failover");
      await until(() => harness.api.get("jobs", NS, "csb-after-failover"), 10_000, "the new leader to reconcile");

      // Reachable again, replica-a finds the Lease held and stays a follower.
      const unblocked = Date.now();
      a.proxy.block(false);
      await pause(1500);
      expect(a.operator.isLeader()).toBe(false);
      expect(writes(a.proxy, unblocked)).toEqual([]);
      expect(lease()!.spec.holderIdentity).toBe("replica-b");
    } finally {
      clearInterval(sampler);
    }
  });

  it("elects exactly one of two replicas that start together", async () => {
    harness = await Harness.start();
    const [a, b] = await Promise.all([replica("replica-a"), replica("replica-b")]);
    await until(() => a.operator.isLeader() || b.operator.isLeader(), 10_000, "a leader");
    const seen: string[] = [];
    for (let i = 0; i < 100; i++) {
      if (a.operator.isLeader() && b.operator.isLeader()) seen.push(`both at sample ${i}`);
      await pause(10);
    }
    expect(seen).toEqual([]);
    const leader = a.operator.isLeader() ? "replica-a" : "replica-b";
    expect(lease()!.spec.holderIdentity).toBe(leader);
    expect(writes(leader === "replica-a" ? b.proxy : a.proxy).filter((w) => !w.includes("/leases")), "the loser wrote outside the Lease").toEqual([]);
  });
});
