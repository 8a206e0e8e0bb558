// The operator process's endpoints: /healthz, /readyz (watches synced, leader or follower) and the operator's metrics.
import { afterEach, describe, expect, it } from "vitest";
import { serveHealth } from "../cli/run/index.ts";
import { Harness, until } from "./testserver.ts";

let harness: Harness;
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
  await harness?.close();
});

async function serve(operator: Parameters<typeof serveHealth>[0]): Promise<string> {
  const { server, port } = await serveHealth(operator, "127.0.0.1", 0);
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${port}`;
}

describe("operator: health and metrics", () => {
  it("answers /healthz always and /readyz once the watches are synced, on the leader and on a follower", async () => {
    harness = await Harness.start();
    const leader = await harness.leader({ FOLIO_OPERATOR_IDENTITY: "one" });
    const { operator: follower } = await harness.operator({ FOLIO_OPERATOR_IDENTITY: "two" });
    await until(() => follower.ready(), 10_000, "the follower's watches to sync");

    for (const operator of [leader, follower]) {
      const base = await serve(operator);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const ready = await fetch(`${base}/readyz`);
      const body = await ready.json();
      expect(ready.status, JSON.stringify(body)).toBe(200);
      expect(body).toMatchObject({ ready: true, leader: operator === leader, holder: "one", watches: { conversionsandboxes: { synced: true } } });
      expect((await fetch(`${base}/nope`)).status).toBe(404);
    }
  });

  it("answers 503 on /readyz while the watches have not listed", async () => {
    const base = await serve({ health: () => ({ ready: false, leader: false, identity: "x", holder: null, queue: 0, watches: {} }) });
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it("exports reconciles, the leader gauge and sandboxes by phase with the folio_ prefix", async () => {
    harness = await Harness.start();
    const operator = await harness.leader();
    harness.createSandbox("csb-metrics");
    await until(() => harness.sandbox("csb-metrics")?.status?.phase === "Pending", 10_000, "Pending");
    await until(async () => (await operator.metrics.registry.metrics()).includes('folio_operator_sandboxes{phase="Pending",process="operator"} 1'), 5000, "the phase gauge");
    const text = await operator.metrics.registry.metrics();
    expect(text).toContain('folio_operator_leader{process="operator"} 1');
    expect(text).toMatch(/folio_operator_reconciles_total\{outcome="ok",process="operator"\} [1-9]/);
    expect(text).toContain("folio_operator_jobs_created_total");
    expect(text).toContain("folio_operator_watch_restarts_total");
  });
});
