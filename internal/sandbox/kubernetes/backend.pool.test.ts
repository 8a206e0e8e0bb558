/**
 * The warm pool end to end: the real operator reconciles a
 * ConversionSandboxPool on the fake API server (test/fake-kube-api.ts, a
 * test double: no real API server or cluster runs on these machines), the
 * fake's Job controller makes the pods, and the test kubelet
 * (test/fake-kubelet.ts: kubelet + gVisor stand-in, runs the bundled sandbox
 * program as a local, unsandboxed process with real LibreOffice) runs them.
 * The KubernetesBackend reports demand, learns the warm pods' seats from the
 * pool Jobs and hands documents to them over the real broker, which listens
 * on IPv6 loopback (the machine must have `::1`).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Counter } from "prom-client";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { backendOnBroker, serveBrokerForTests, startBrokerServer } from "../../../test/broker-server.ts";
import type { FakeKubeApi, KubeObject, RecordedRequest } from "../../../test/fake-kube-api.ts";
import type { FakeKubelet, PodRun } from "../../../test/fake-kubelet.ts";
import { closeAll } from "../../../test/support.ts";
import { LABELS, type ConversionSandboxPool, type RunningOperator } from "../../operator/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { PROJECT_ROOT } from "../assets.ts";
import { pngInfo } from "../testdocs.ts";
import { SandboxBroker } from "./broker.ts";
import { startTestCluster } from "./cluster.testkit.ts";
import { WARM_GRACE_MS, type KubernetesBackend } from "./backend.ts";

const NAMESPACE = "default";
const POOL = "folio-sandbox";
const fixture = (name: string) => readFileSync(join(PROJECT_ROOT, "test", "fixtures", "convert", name));
const log = createLogger(process.env.FOLIO_TEST_LOG ?? "silent");
const broker = new SandboxBroker({ log });
// Over IPv6: warm pods dial the bracketed address ("[::1]:port") the pool's status carries and the CRD's pattern accepts.
const brokerServer = serveBrokerForTests(broker, "::1");

/** The documents each pod said it received ("sandbox received its document" lines), over the whole file. */
const received = new Map<string, number>();
/** Set by a test: the next pod that receives a document is killed (its pod deleted) right then. */
let killOnReceipt = false;
/** Set by a test: the next pod that receives a document is frozen right then (a wedged sandbox); its pod and pids. */
let freezeOnReceipt = false;
let frozen: { pod: string; job: string; pids: number[] } | undefined;

/** Whether a process still exists (a zombie, ended but not yet reaped, counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

async function count(counter: Counter, labels: Record<string, string> = {}): Promise<number> {
  const { values } = await counter.get();
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);
}

describe("KubernetesBackend with a warm ConversionSandboxPool: real operator, fake API server, test kubelet", () => {
  const work = mkdtempSync(join(tmpdir(), "folio-pool-test-"));
  let api: FakeKubeApi;
  let operator: RunningOperator;
  let kubelet: FakeKubelet;
  let backend: KubernetesBackend;

  const poolJobs = () => api.list("jobs", NAMESPACE).filter((j) => (j.metadata.labels as Record<string, string> | undefined)?.[LABELS.pool] === POOL);
  const sandboxRequests = (since: number): RecordedRequest[] => api.requests.slice(since).filter((r) => r.path.includes("/conversionsandboxes"));
  const pool = () => api.get("conversionsandboxpools", NAMESPACE, POOL) as unknown as ConversionSandboxPool | undefined;
  /** The pods that received a document and are not in `before` (the pods of `received` when a test began). */
  const podsSince = (before: ReadonlySet<string>) => [...received.keys()].filter((pod) => !before.has(pod));

  /** Creates the pool unless a test did already, then waits for its two warm pods (their LibreOffice started) and only their Jobs. */
  async function warmPool(): Promise<void> {
    if (!pool()) {
      api.put("conversionsandboxpools", {
        apiVersion: "folio.dev/v1alpha1",
        kind: "ConversionSandboxPool",
        metadata: { name: POOL, namespace: NAMESPACE },
        spec: { minReady: 2, max: 4, leadSeconds: 1, idleSeconds: 300, timeoutSeconds: 120 },
      });
    }
    // The replica's report reaches the pool; the operator makes two warm pods and deletes the Jobs of used ones.
    await vi.waitFor(() => expect({ idle: broker.warmStats().idle, jobs: poolJobs().length }).toEqual({ idle: 2, jobs: 2 }), { timeout: 120_000, interval: 100 });
  }

  beforeAll(async () => {
    const onLine = (run: PodRun, line: string) => {
      if (!line.includes('"sandbox received its document"')) return;
      received.set(run.pod, (received.get(run.pod) ?? 0) + 1);
      if (killOnReceipt) {
        killOnReceipt = false;
        // The pod is deleted: the test kubelet kills its process, as a node would.
        api.remove("pods", NAMESPACE, run.pod);
      }
      if (freezeOnReceipt) {
        freezeOnReceipt = false;
        const labels = api.get("pods", NAMESPACE, run.pod)?.metadata.labels as Record<string, string> | undefined;
        frozen = { pod: run.pod, job: labels?.["job-name"] ?? "", pids: kubelet.freeze(run.pod, NAMESPACE) };
      }
    };
    ({ api, kubelet, operator } = await startTestCluster({ work, namespace: NAMESPACE, log, operator: { jobVerdictGraceMs: 2000, resyncMs: 2000 }, kubelet: { onLine } }));
    backend = backendOnBroker(broker, brokerServer, {
      kubeConfig: api.kubeConfig(),
      namespace: NAMESPACE,
      log,
      startupGraceMs: 5_000,
      pool: { name: POOL, replica: "conversion-0", reportIntervalMs: 200 },
    });
  }, 120_000);

  afterAll(async () => {
    await closeAll(backend, operator, kubelet, api);
    rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it("takes the cold path, one ConversionSandbox, and counts the fallback while no warm pod waits", async () => {
    // A replica of its own, of a pool nobody created, so no warm pod waits whatever the other tests left.
    const ownBroker = new SandboxBroker({ log });
    const served = await startBrokerServer(ownBroker, "::1");
    const cold = backendOnBroker(ownBroker, served, {
      kubeConfig: api.kubeConfig(),
      namespace: NAMESPACE,
      log,
      startupGraceMs: 5_000,
      pool: { name: `${POOL}-never-created`, replica: "conversion-cold", reportIntervalMs: 200 },
    });
    onTestFinished(async () => {
      await cold.close();
      await served.close();
    });
    const before = api.requests.length;
    const result = await cold.convert({ document: fixture("hello.txt"), format: "TXT", maxPages: 5, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(1);
    expect(sandboxRequests(before).some((r) => r.method === "POST"), "a ConversionSandbox was created").toBe(true);
    expect(await count(cold.poolMetrics.fallbacks, { reason: "empty" })).toBe(1);
    expect(await count(cold.poolMetrics.handIns, { path: "cold" })).toBe(1);

    // Left behind for no test: the sandbox, its Job and pod gone, and the operator done reading it (the deletions' events
    // make it look once more), so a test after this one sees no request about a ConversionSandbox that is not its own.
    const name = (sandboxRequests(before).find((r) => r.method === "POST")!.body as KubeObject).metadata.name;
    const owned = () => [...api.list("jobs", NAMESPACE), ...api.list("pods", NAMESPACE)].filter((o) => (o.metadata.labels as Record<string, string> | undefined)?.[LABELS.sandbox] === name);
    let requestsAtLastLook = -1;
    await vi.waitFor(
      () => {
        const requests = sandboxRequests(before).length;
        const quiet = requests === requestsAtLastLook; // none in the last interval
        requestsAtLastLook = requests;
        expect({ sandbox: api.get("conversionsandboxes", NAMESPACE, name)?.metadata.name, owned: owned().length, quiet }).toEqual({ sandbox: undefined, owned: 0, quiet: true });
      },
      { timeout: 20_000, interval: 500 },
    );
  }, 120_000);

  it("converts on a warm pod with no API request on the way, and the operator replaces the used pod", async () => {
    await warmPool();
    const jobsBefore = poolJobs().map((j) => j.metadata.name);
    expect(jobsBefore).toHaveLength(2);
    expect(brokerServer.address).toMatch(/^\[::1\]:\d+$/);
    expect(pool()?.status?.replicas?.["conversion-0"]?.brokerAddress).toBe(brokerServer.address);

    const warmBefore = await count(backend.poolMetrics.handIns, { path: "warm" });
    const fallbacksBefore = await count(backend.poolMetrics.fallbacks);
    const podsBefore = new Set(received.keys());
    const before = api.requests.length;
    const result = await backend.convert({ document: fixture("two-pages.docx"), format: "DOCX", maxPages: 10, timeoutMs: 60_000 });
    const during = api.requests.slice(before);
    expect(result.pageCount).toBe(2);
    expect(pngInfo(result.pages[0]!)).toMatchObject({ width: 1654, height: 2339 });
    expect(result.computeMillis).toBeGreaterThan(0);
    expect(sandboxRequests(before), "no ConversionSandbox for a warm hand-in").toEqual([]);
    // What the API server saw meanwhile is the operator's and the reports' business, never a request for this document.
    expect(during.filter((r) => r.method === "POST" && !r.path.includes("/jobs"))).toEqual([]);
    expect(await count(backend.poolMetrics.handIns, { path: "warm" })).toBe(warmBefore + 1);
    expect(await count(backend.poolMetrics.fallbacks), "no fallback to the cold path").toBe(fallbacksBefore);

    // The used pod exits; its Job is deleted and a new warm pod takes its place.
    expect(podsSince(podsBefore), "the pods that received this document").toHaveLength(1);
    await vi.waitFor(
      () => {
        const names = poolJobs().map((j) => j.metadata.name);
        expect(names).toHaveLength(2);
        expect(names.filter((n) => !jobsBefore.includes(n))).toHaveLength(1);
      },
      { timeout: 30_000, interval: 100 },
    );
    await vi.waitFor(() => expect(broker.warmStats().idle).toBe(2), { timeout: 90_000, interval: 100 });
  }, 240_000);

  it("never gives a pod a second document: each of several conversions lands on a pod of its own, which then exits", async () => {
    await warmPool();
    const podsBefore = new Set(received.keys());
    const docs = [fixture("hello.txt"), fixture("hello.txt")];
    const results = await Promise.all(docs.map((document) => backend.convert({ document, format: "TXT", maxPages: 5, timeoutMs: 60_000 })));
    expect(results.map((r) => r.pageCount)).toEqual([1, 1]);
    for (const [pod, n] of received) expect(n, `documents received by pod ${pod}`).toBe(1);
    const used = podsSince(podsBefore);
    expect(used, "the pods that received these documents").toHaveLength(2);
    await vi.waitFor(
      () => {
        for (const pod of used) {
          const run = kubelet.runs.find((r) => r.pod === pod);
          expect(run?.exitCode, `pod ${pod} exited 0 after its document`).toBe(0);
        }
      },
      { timeout: 30_000, interval: 100 },
    );
  }, 240_000);

  it("retries a document once on another pod when its warm pod dies holding it", async () => {
    await warmPool();
    const retriesBefore = await count(backend.poolMetrics.retries);
    const receivedBefore = received.size;
    killOnReceipt = true;
    const result = await backend.convert({ document: fixture("hello.txt"), format: "TXT", maxPages: 5, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(1);
    expect(await count(backend.poolMetrics.retries)).toBe(retriesBefore + 1);
    // Two pods got the document: the killed one and the one that converted it.
    expect(received.size).toBe(receivedBefore + 2);
    for (const n of received.values()) expect(n).toBe(1);
  }, 240_000);

  it("kills a warm pod that outlives its document's deadline: the caller gets timeout, the Job and every process of the pod are gone", async () => {
    await warmPool();
    const retriesBefore = await count(backend.poolMetrics.retries);
    const overdueBefore = await count(operator.metrics.poolJobsDeleted, { why: "overdue" });
    freezeOnReceipt = true;
    const timeoutMs = 2_000;
    const started = Date.now();
    const err = await backend.convert({ document: fixture("hello.txt"), format: "TXT", maxPages: 5, timeoutMs }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const tookMs = Date.now() - started;
    expect(err, String(err)).toMatchObject({ code: "timeout" });
    // The document's limit plus the upload grace, not the Job's activeDeadlineSeconds (minutes).
    expect(tookMs).toBeGreaterThanOrEqual(timeoutMs + WARM_GRACE_MS - 100);
    expect(tookMs).toBeLessThan(timeoutMs + WARM_GRACE_MS + 5_000);
    expect(frozen, "a pod received the document and was frozen").toBeDefined();
    const { pod, job, pids } = frozen!;
    expect(pids.length, "the frozen pod's program and its LibreOffice").toBeGreaterThan(1);
    expect(job).not.toBe("");
    // A timeout is the answer, not a reason to try another pod.
    expect(await count(backend.poolMetrics.retries)).toBe(retriesBefore);

    // The replica reports the Job overdue, the operator deletes it, the pod goes with it and the kubelet kills it.
    await vi.waitFor(
      () => {
        expect(poolJobs().map((j) => j.metadata.name)).not.toContain(job);
        expect(api.get("pods", NAMESPACE, pod)).toBeUndefined();
        expect(kubelet.runs.find((r) => r.pod === pod)?.signal).toBe("SIGKILL");
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(await count(operator.metrics.poolJobsDeleted, { why: "overdue" })).toBe(overdueBefore + 1);
    // Nothing left behind: no process of the pod, nothing overdue or busy at the broker, no open registration.
    await vi.waitFor(() => expect(pids.filter(alive), `pids of ${pod} still alive`).toEqual([]), { timeout: 10_000, interval: 100 });
    await vi.waitFor(() => expect(broker.warmStats()).toMatchObject({ busy: 0, overdue: [] }), { timeout: 10_000, interval: 100 });
    expect(broker.pending()).toBe(0);
    expect(received.get(pod)).toBe(1);
  }, 240_000);
});
