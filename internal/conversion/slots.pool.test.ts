/**
 * What a conversion replica reports to its warm pool as `waiting`: the
 * requests queued for one of the service's sandbox slots (slots.ts), wired
 * as startConversion wires it. The KubernetesBackend runs against the fake
 * API server (test/fake-kube-api.ts, a test double) with no operator, so a
 * conversion that got a slot stays on its cold ConversionSandbox until it is
 * cancelled: the slot stays taken while the test looks at the report.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { backendOnBroker, serveBrokerForTests } from "../../test/broker-server.ts";
import { startFakeKubeApi, type FakeKubeApi } from "../../test/fake-kube-api.ts";
import type { ConversionSandboxPool } from "../operator/index.ts";
import { createLogger } from "../platform/log/index.ts";
import { SandboxBroker, type KubernetesBackend } from "../sandbox/kubernetes/index.ts";
import { ConversionService } from "./service.ts";

const NAMESPACE = "default";
const POOL = "folio-sandbox";
const REPLICA = "conversion-0";
const log = createLogger("silent");
const broker = new SandboxBroker({ log });
const brokerServer = serveBrokerForTests(broker);
const document = readFileSync(new URL("../../test/fixtures/convert/hello.txt", import.meta.url));

describe("the warm pool's demand: requests queued for a conversion slot", () => {
  let api: FakeKubeApi;
  let backend: KubernetesBackend;
  let service: ConversionService;

  beforeAll(async () => {
    api = await startFakeKubeApi({ bookmarkIntervalMs: 200 });
    api.put("conversionsandboxpools", {
      apiVersion: "folio.dev/v1alpha1",
      kind: "ConversionSandboxPool",
      metadata: { name: POOL, namespace: NAMESPACE },
      spec: { minReady: 0, max: 10 },
    });
    // No timer-driven reports: the test writes each report itself (reportDemand).
    backend = backendOnBroker(broker, brokerServer, {
      kubeConfig: api.kubeConfig(),
      namespace: NAMESPACE,
      log,
      pool: { name: POOL, replica: REPLICA, reportIntervalMs: 3_600_000, queued: () => service.load().waiting },
    });
    service = new ConversionService({
      backend,
      backendName: "kubernetes",
      limits: { timeoutMs: 60_000, maxDocumentBytes: 1 << 20, maxPages: 5, maxOutputBytes: 1 << 24, concurrency: 1, queueLimit: 10 },
      log,
    });
  });

  afterAll(async () => {
    await backend?.close();
    await api?.close();
  });

  const report = async () => {
    await backend.reportDemand();
    const pool = api.get("conversionsandboxpools", NAMESPACE, POOL) as unknown as ConversionSandboxPool;
    return pool.status?.replicas?.[REPLICA];
  };

  it("counts the requests waiting for a slot, not the conversion that has one, and drops those that give up", async () => {
    const callers = Array.from({ length: 4 }, () => new AbortController());
    const answers = callers.map((c) => service.convert({ document, mimeType: "text/plain" }, c.signal).catch((err: unknown) => err));
    // One holds the only slot (its cold ConversionSandbox waits for an operator that never comes); three queue.
    await vi.waitFor(() => expect(api.list("conversionsandboxes", NAMESPACE)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(service.load()).toEqual({ running: 1, waiting: 3 });
    expect(await report()).toMatchObject({ waiting: 3, idle: 0, busy: 0 });

    callers[3]!.abort();
    callers[2]!.abort();
    await vi.waitFor(() => expect(service.load().waiting).toBe(1), { timeout: 5_000, interval: 20 });
    expect((await report())?.waiting).toBe(1);

    // Cancelled, the conversion under way gives its slot to the one left, which is under way in turn: none waits.
    callers[0]!.abort();
    await vi.waitFor(() => expect(service.load()).toEqual({ running: 1, waiting: 0 }), { timeout: 10_000, interval: 20 });
    expect((await report())?.waiting).toBe(0);

    callers[1]!.abort();
    const settled = await Promise.all(answers);
    expect(settled.every((a) => a instanceof Error), String(settled)).toBe(true);
    // Nothing left behind: every cold ConversionSandbox was deleted when its caller gave up.
    await vi.waitFor(() => expect(api.list("conversionsandboxes", NAMESPACE)).toEqual([]), { timeout: 10_000, interval: 20 });
  }, 60_000);
});
