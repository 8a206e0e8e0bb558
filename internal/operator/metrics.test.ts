// The operator's metrics: own registry, folio_ prefix, and every name documented in docs/operator.md.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OperatorMetrics } from "./metrics.ts";

describe("OperatorMetrics", () => {
  it("registers folio_-prefixed metrics in its own registry, each listed in docs/operator.md", async () => {
    const doc = readFileSync(new URL("../../docs/operator.md", import.meta.url), "utf8");
    const metrics = new OperatorMetrics(false);
    const names = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names.length).toBeGreaterThanOrEqual(9);
    expect(names.filter((n) => !n.startsWith("folio_operator_"))).toEqual([]);
    expect(names.filter((n) => !doc.includes("`" + n + "`"))).toEqual([]);
  });

  it("reads sandboxes by phase and the queue depth at scrape time", async () => {
    const metrics = new OperatorMetrics(false);
    metrics.observe(() => ({ Running: 2, Unknown: 1 }), () => 7);
    const text = await metrics.registry.metrics();
    expect(text).toContain('folio_operator_sandboxes{phase="Running",process="operator"} 2');
    expect(text).toContain('folio_operator_sandboxes{phase="Succeeded",process="operator"} 0');
    expect(text).toContain('folio_operator_queue_depth{process="operator"} 7');
    expect(text).toContain('folio_operator_leader{process="operator"} 0');
  });
});
