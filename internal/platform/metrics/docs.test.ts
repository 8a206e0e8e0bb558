import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ConversionMetrics, EdgeMetrics, ExtractionMetrics, WorkerMetrics, type Metrics } from "./index.ts";
import { OperatorMetrics } from "../../operator/metrics.ts";
import { PoolMetrics } from "../../sandbox/kubernetes/pool.ts";

/** Every metric name a process registers (histograms by their base name), default process metrics aside. */
export async function registeredNames(metrics: Metrics): Promise<string[]> {
  const all = await metrics.registry.getMetricsAsJSON();
  return all.map((m) => m.name).filter((n) => !/^folio_(process_|nodejs_)/.test(n));
}

describe("docs/metrics.md", () => {
  it("lists every metric the processes register", async () => {
    const doc = readFileSync(new URL("../../../docs/metrics.md", import.meta.url), "utf8");
    const conversion = new ConversionMetrics(() => ({ waiting: 0 }));
    // The kubernetes backend's warm-pool counters, in the conversion process's registry.
    new PoolMetrics(conversion);
    const processes: Metrics[] = [new EdgeMetrics(), new ExtractionMetrics(() => ({ ageSeconds: null, stale: false, models: [] })), conversion, new WorkerMetrics(async () => ({ jobs: { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 }, queuedPages: 0, oldestQueuedSeconds: 0 }), () => Promise.resolve({ pending: { ready: 0, attempting: 0, waiting: 0 }, oldestReadySeconds: 0, endpoints: { healthy: 0, failing: 0, disabled: 0 } })), new OperatorMetrics(false)];
    const names = (await Promise.all(processes.map(registeredNames))).flat();
    expect(names.length).toBeGreaterThan(30);
    expect(names.filter((n) => !doc.includes("`" + n + "`"))).toEqual([]);
  });
});
