// Against the fake API server: the watches survive 410 Gone (relist), dropped and failed streams (back-off), and silence (watchdog).
import { afterEach, describe, expect, it } from "vitest";
import type { RunningOperator } from "./index.ts";
import { Harness, NS, until } from "./testserver.ts";

let harness: Harness;
afterEach(async () => {
  await harness?.close();
});

const SANDBOXES = `/apis/folio.dev/v1alpha1/namespaces/${NS}/conversionsandboxes`;

const sandboxRequests = (kind: "list" | "watch") =>
  harness.api.requests.filter((r) => r.method === "GET" && r.path === SANDBOXES && (r.query.watch === "true") === (kind === "watch"));

async function restarts(operator: RunningOperator, reason: string, resource = "conversionsandboxes"): Promise<number> {
  const metric = await operator.metrics.watchRestarts.get();
  return metric.values.find((v) => v.labels.reason === reason && v.labels.resource === resource)?.value ?? 0;
}

async function reconciled(name: string): Promise<void> {
  harness.createSandbox(name);
  await until(() => harness.api.get("jobs", NS, name), 10_000, `the Job of ${name}`);
}

describe("operator: watch recovery", () => {
  it("survives 410 Gone by listing again, and still reconciles new sandboxes", async () => {
    harness = await Harness.start();
    const operator = await harness.leader();
    await reconciled("csb-before");
    const lists = sandboxRequests("list").length;

    harness.api.compact();
    await reconciled("csb-after-compaction");

    expect(sandboxRequests("list").length, "a relist after 410").toBeGreaterThan(lists);
    expect(await restarts(operator, "gone")).toBeGreaterThanOrEqual(1);
    expect(operator.ready()).toBe(true);
  });

  it("restarts a dropped watch and resumes from where it was", async () => {
    harness = await Harness.start();
    const operator = await harness.leader();
    await reconciled("csb-before-drop");
    const watches = sandboxRequests("watch").length;
    const lists = sandboxRequests("list").length;

    harness.api.breakWatches("drop");
    await reconciled("csb-after-drop");

    expect(sandboxRequests("watch").length, "a new watch").toBeGreaterThan(watches);
    expect(sandboxRequests("list").length, "resumed by resourceVersion, no relist").toBe(lists);
    const resumed = sandboxRequests("watch").at(-1)!;
    expect(resumed.query).toMatchObject({ allowWatchBookmarks: "true" });
    expect(Number(resumed.query.resourceVersion)).toBeGreaterThan(0);
    await until(() => harness.api.openWatches("conversionsandboxes") === 1, 5000, "exactly one open sandbox watch");
    expect((await restarts(operator, "closed")) + (await restarts(operator, "error"))).toBeGreaterThanOrEqual(1);
  });

  it("restarts a watch that ends with an error event after a back-off", async () => {
    harness = await Harness.start();
    const operator = await harness.leader();
    const watches = sandboxRequests("watch").length;

    harness.api.breakWatches("error");
    await reconciled("csb-after-error");

    expect(sandboxRequests("watch").length).toBeGreaterThan(watches);
    expect(await restarts(operator, "error")).toBeGreaterThanOrEqual(1);
  });

  it("restarts a silent watch through the watchdog (FOLIO_WATCH_IDLE_SECONDS), while bookmarks keep healthy ones open", async () => {
    harness = await Harness.start({ bookmarkIntervalMs: 200 });
    const operator = await harness.leader({ FOLIO_WATCH_IDLE_SECONDS: "1" });
    const watches = sandboxRequests("watch").length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(await restarts(operator, "idle"), "bookmarks every 200 ms keep a 1 s watchdog quiet").toBe(0);
    expect(sandboxRequests("watch").length).toBe(watches);

    harness.api.silenceWatches(true);
    await until(async () => (await restarts(operator, "idle")) >= 1, 10_000, "the watchdog to restart the silent sandbox watch");
    await until(() => sandboxRequests("watch").length > watches, 5000, "a new sandbox watch after the watchdog fired");
    // The new watches are not silenced: events flow again.
    await reconciled("csb-after-silence");
  });
});
