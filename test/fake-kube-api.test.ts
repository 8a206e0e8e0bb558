/**
 * Tests of the fake Kubernetes API server (test/fake-kube-api.ts), driven
 * through the real @kubernetes/client-node 2.0.1 so that what the operator's
 * tests rely on is pinned down. Facts about client-node that the operator's
 * authors need are stated where a test proves them:
 *
 * - PATCH: the typed APIs send `application/json-patch+json` unless told
 *   otherwise (the generated code picks the first JSON media type of the
 *   operation's list); pass `setHeaderOptions("Content-Type",
 *   PatchStrategy.MergePatch)` as the second argument to choose another.
 *   KubernetesObjectApi.patch defaults to strategic merge patch, which a
 *   real server refuses for custom resources (415).
 * - Errors: a failed call throws `ApiException` with `code` (HTTP status) and
 *   `body` = the raw response TEXT: `JSON.parse(err.body)` gives the Status
 *   (`reason`: NotFound, AlreadyExists, Conflict, Invalid, ...).
 * - Watch: see the watch tests; `done` is called once, with `null`/an Error.
 */
import { describe, it, expect, onTestFinished, vi } from "vitest";
import {
  ApiException, BatchV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubernetesObjectApi, NetworkingV1Api,
  PatchStrategy, Watch, makeInformer, setHeaderOptions, type KubeConfig, type V1Job, type V1Pod,
} from "@kubernetes/client-node";
import { startFakeKubeApi, type FakeKubeApi, type FakeKubeApiOptions, type KubeObject, type WatchEventRecord } from "./fake-kube-api.ts";

const CSB = { group: "folio.dev", version: "v1alpha1", plural: "conversionsandboxes" };
const GENERATED_NAME = /^[bcdfghjklmnpqrstvwxz2456789]{5}$/;

async function start(options?: FakeKubeApiOptions): Promise<FakeKubeApi> {
  const api = await startFakeKubeApi(options);
  onTestFinished(() => api.close());
  return api;
}

function pod(name: string, labels: Record<string, string> = {}, extra: Partial<V1Pod["metadata"]> = {}): V1Pod {
  return { apiVersion: "v1", kind: "Pod", metadata: { name, labels, ...extra }, spec: { containers: [{ name: "main", image: "busybox" }] } };
}

function job(name: string, extra: Partial<V1Job["metadata"]> = {}): V1Job {
  return {
    apiVersion: "batch/v1", kind: "Job", metadata: { name, ...extra },
    spec: { template: { metadata: { labels: { app: "convert" } }, spec: { restartPolicy: "Never", containers: [{ name: "convert", image: "libreoffice" }] } } },
  };
}

function sandbox(name: string, extra: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: "folio.dev/v1alpha1", kind: "ConversionSandbox", metadata: { name, ...extra }, spec: { documentId: "doc_1" } };
}

/** HTTP code and parsed Status of a failed client-node call; a call that succeeds yields code 0 and its result, so the expectation prints it. */
async function failure(call: Promise<unknown>): Promise<{ code: number; status: Record<string, unknown> }> {
  try {
    return { code: 0, status: { unexpectedSuccess: await call } };
  } catch (err) {
    if (err instanceof ApiException) return { code: err.code, status: JSON.parse(err.body as string) as Record<string, unknown> };
    throw err;
  }
}

interface WatchEvent { type: string; object: KubeObject }

/** Opens a client-node Watch; `done` settles with what its done callback received. */
async function openWatch(kc: KubeConfig, path: string, query: Record<string, string | number | boolean> = {}) {
  const events: WatchEvent[] = [];
  let finish: (err: unknown) => void = () => {};
  const done = new Promise<{ err: unknown }>((resolve) => (finish = (err) => resolve({ err })));
  const controller = await new Watch(kc).watch(path, query, (type, object: KubeObject) => events.push({ type, object }), (err) => finish(err));
  onTestFinished(() => controller.abort());
  return { events, done };
}

const names = (events: WatchEvent[] | WatchEventRecord[]) => events.map((e) => `${e.type} ${e.object.metadata.name}`);
const itemNames = (list: { items: { metadata?: { name?: string } }[] }) => list.items.map((i) => i.metadata?.name);

/** Resolves with the done result, or with "still open" after `ms`. */
const settled = <T>(p: Promise<T>, ms = 2000) => Promise.race([p, new Promise<"still open">((r) => setTimeout(() => r("still open"), ms))]);

describe("fake Kubernetes API server", () => {
  it("serves discovery and /version, so KubernetesObjectApi can create and read a ConversionSandbox", async () => {
    const api = await start();
    const objects = KubernetesObjectApi.makeApiClient(api.kubeConfig());
    const created = await objects.create(sandbox("sb-1", { namespace: "team-a" }));
    const read = await objects.read({ apiVersion: "folio.dev/v1alpha1", kind: "ConversionSandbox", metadata: { name: "sb-1", namespace: "team-a" } });

    expect(read).toMatchObject({ spec: { documentId: "doc_1" }, metadata: { name: "sb-1", namespace: "team-a", generation: 1, uid: created.metadata?.uid } });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toContain("GET /apis/folio.dev/v1alpha1");
    const version = (await (await fetch(`${api.url}/version`)).json()) as Record<string, unknown>;
    expect(version).toMatchObject({ major: "1", gitVersion: expect.stringMatching(/^v1\./) });
  });

  it("answers unknown paths with a 404 Status", async () => {
    const api = await start();
    const response = await fetch(`${api.url}/apis/apps/v1/namespaces/a/deployments`);
    expect({ code: response.status, body: await response.json() }).toEqual({
      code: 404,
      body: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: "the server could not find the requested resource", reason: "NotFound", details: {}, code: 404 },
    });
  });

  it("creates, reads and lists pods with label and field selectors, in a namespace and across namespaces", async () => {
    const api = await start();
    const core = api.kubeConfig().makeApiClient(CoreV1Api);
    const web = await core.createNamespacedPod({ namespace: "a", body: pod("web", { app: "ocr", tier: "web" }) });
    await core.createNamespacedPod({ namespace: "a", body: pod("worker", { app: "ocr", tier: "worker" }) });
    await core.createNamespacedPod({ namespace: "a", body: pod("other", { app: "other" }) });
    await core.createNamespacedPod({ namespace: "b", body: pod("remote", { app: "ocr" }) });
    api.setStatus("pods", "a", "worker", { phase: "Running" });

    expect(web.metadata).toMatchObject({ namespace: "a", generation: 1, uid: expect.any(String), resourceVersion: expect.stringMatching(/^\d+$/) });
    expect(web.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(web.status?.phase).toBe("Pending");
    expect((await core.readNamespacedPod({ namespace: "a", name: "web" })).metadata?.uid).toBe(web.metadata?.uid);

    const list = async (labelSelector?: string, fieldSelector?: string) => itemNames(await core.listNamespacedPod({ namespace: "a", labelSelector, fieldSelector }));
    expect(await list()).toEqual(["other", "web", "worker"]);
    expect(await list("app=ocr,tier!=web")).toEqual(["worker"]);
    expect(await list("tier")).toEqual(["web", "worker"]);
    expect(await list("!tier")).toEqual(["other"]);
    expect(await list("app in (ocr,other),tier notin (web)")).toEqual(["other", "worker"]);
    expect(await list(undefined, "status.phase=Running")).toEqual(["worker"]);
    expect(await list(undefined, "status.phase!=Running,metadata.name!=other")).toEqual(["web"]);
    expect(itemNames(await core.listPodForAllNamespaces({ labelSelector: "app=ocr" }))).toEqual(["web", "worker", "remote"]);
    expect(itemNames(await core.listPodForAllNamespaces({ fieldSelector: "metadata.namespace=b" }))).toEqual(["remote"]);

    const listed = await core.listNamespacedPod({ namespace: "a" });
    expect({ kind: listed.kind, apiVersion: listed.apiVersion, rv: listed.metadata?.resourceVersion }).toEqual({ kind: "PodList", apiVersion: "v1", rv: expect.stringMatching(/^\d+$/) });
    const page = await core.listNamespacedPod({ namespace: "a", limit: 2 });
    const rest = await core.listNamespacedPod({ namespace: "a", limit: 2, _continue: page.metadata?._continue });
    expect([itemNames(page), page.metadata?.remainingItemCount, itemNames(rest), rest.metadata?._continue]).toEqual([["other", "web"], 1, ["worker"], undefined]);

    expect(await failure(core.listNamespacedPod({ namespace: "a", fieldSelector: "spec.image=busybox" }))).toMatchObject({ code: 400, status: { reason: "BadRequest" } });
    expect(await failure(core.readNamespacedPod({ namespace: "a", name: "missing" }))).toMatchObject({ code: 404, status: { reason: "NotFound", message: 'pods "missing" not found' } });
  });

  it("gives generateName objects a fresh name with a 5-character suffix", async () => {
    const api = await start();
    const batch = api.kubeConfig().makeApiClient(BatchV1Api);
    const body = job("", { generateName: "convert-" });
    delete body.metadata!.name;
    const first = await batch.createNamespacedJob({ namespace: "a", body });
    const second = await batch.createNamespacedJob({ namespace: "a", body });
    const [a, b] = [first.metadata?.name ?? "", second.metadata?.name ?? ""];
    expect([a.slice(0, 8), GENERATED_NAME.test(a.slice(8)), b.slice(0, 8), GENERATED_NAME.test(b.slice(8)), a === b]).toEqual(["convert-", true, "convert-", true, false]);
  });

  it("refuses duplicate creates (409 AlreadyExists), stale PUTs (409 Conflict), mismatched namespaces (400) and invalid objects (422)", async () => {
    const api = await start();
    const core = api.kubeConfig().makeApiClient(CoreV1Api);
    const batch = api.kubeConfig().makeApiClient(BatchV1Api);
    const v1 = await core.createNamespacedPod({ namespace: "a", body: pod("p") });
    expect(await failure(core.createNamespacedPod({ namespace: "a", body: pod("p") }))).toMatchObject({ code: 409, status: { reason: "AlreadyExists", message: 'pods "p" already exists' } });

    const v2 = await core.replaceNamespacedPod({ namespace: "a", name: "p", body: { ...v1, metadata: { ...v1.metadata, labels: { v: "2" } } } });
    expect(Number(v2.metadata?.resourceVersion)).toBeGreaterThan(Number(v1.metadata?.resourceVersion));
    expect(await failure(core.replaceNamespacedPod({ namespace: "a", name: "p", body: { ...v1, metadata: { ...v1.metadata, labels: { v: "stale" } } } })))
      .toMatchObject({ code: 409, status: { reason: "Conflict", message: expect.stringContaining("the object has been modified") } });
    const unconditional = await core.replaceNamespacedPod({ namespace: "a", name: "p", body: { ...v2, metadata: { ...v2.metadata, resourceVersion: undefined, labels: { v: "3" } } } });
    expect(unconditional.metadata?.labels).toEqual({ v: "3" });
    expect(await failure(core.replaceNamespacedPod({ namespace: "a", name: "gone", body: pod("gone") }))).toMatchObject({ code: 404 });

    expect(await failure(core.createNamespacedPod({ namespace: "a", body: pod("q", {}, { namespace: "b" }) }))).toMatchObject({ code: 400, status: { reason: "BadRequest" } });
    expect(await failure(core.createNamespacedPod({ namespace: "a", body: pod("Not_A_Name") }))).toMatchObject({ code: 422, status: { reason: "Invalid" } });
    const noRestartPolicy = job("j");
    delete noRestartPolicy.spec!.template.spec!.restartPolicy;
    expect(await failure(batch.createNamespacedJob({ namespace: "a", body: noRestartPolicy })))
      .toMatchObject({ code: 422, status: { reason: "Invalid", message: expect.stringContaining("spec.template.spec.restartPolicy") } });
  });

  it("keeps status and the rest apart for kinds with a status subresource", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const created = (await custom.createNamespacedCustomObject({ ...CSB, namespace: "a", body: { ...sandbox("sb"), status: { phase: "Ready" } } })) as KubeObject;
    expect([created.status, created.metadata.generation]).toEqual([undefined, 1]);

    const main = (await custom.replaceNamespacedCustomObject({ ...CSB, namespace: "a", name: "sb", body: { ...created, spec: { documentId: "doc_2" }, status: { phase: "Hacked" } } })) as KubeObject;
    expect([main.spec, main.status, main.metadata.generation]).toEqual([{ documentId: "doc_2" }, undefined, 2]);

    const status = (await custom.replaceNamespacedCustomObjectStatus({ ...CSB, namespace: "a", name: "sb", body: { ...main, spec: { documentId: "ignored" }, status: { phase: "Ready" } } })) as KubeObject;
    expect([status.spec, status.status, status.metadata.generation]).toEqual([{ documentId: "doc_2" }, { phase: "Ready" }, 2]);

    await core.createNamespacedPod({ namespace: "a", body: pod("p") });
    const patchedMain = await core.patchNamespacedPod({ namespace: "a", name: "p", body: [{ op: "replace", path: "/status/phase", value: "Running" }] });
    expect(patchedMain.status?.phase).toBe("Pending");
    const patchedStatus = await core.patchNamespacedPodStatus({
      namespace: "a", name: "p",
      body: [{ op: "replace", path: "/status/phase", value: "Running" }, { op: "add", path: "/metadata/labels/ignored", value: "yes" }],
    });
    expect([patchedStatus.status?.phase, patchedStatus.metadata?.labels]).toEqual(["Running", {}]);
  });

  it("applies JSON patch by default, merge or strategic merge patch when asked, and answers 422 to a failed test op", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    await core.createNamespacedPod({ namespace: "a", body: pod("p", { team: "a" }, { finalizers: ["folio.dev/a"] }) });
    const patchTypes = () => api.requests.filter((r) => r.method === "PATCH").map((r) => r.contentType);

    const jsonPatched = await core.patchNamespacedPod({ namespace: "a", name: "p", body: [{ op: "add", path: "/metadata/labels/stage", value: "ocr" }] });
    expect(jsonPatched.metadata?.labels).toEqual({ team: "a", stage: "ocr" });

    const merged = await core.patchNamespacedPod({ namespace: "a", name: "p", body: { metadata: { labels: { stage: null, team: "b" } } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch));
    expect(merged.metadata?.labels).toEqual({ team: "b" });

    const strategic = await core.patchNamespacedPod({ namespace: "a", name: "p", body: { metadata: { finalizers: ["folio.dev/b"] } } }, setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch));
    expect(strategic.metadata?.finalizers).toEqual(["folio.dev/a", "folio.dev/b"]);
    expect(patchTypes()).toEqual(["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"]);

    const failedTest = await failure(core.patchNamespacedPod({ namespace: "a", name: "p", body: [{ op: "test", path: "/metadata/labels/team", value: "a" }, { op: "remove", path: "/metadata/labels/team" }] }));
    expect(failedTest).toMatchObject({ code: 422, status: { reason: "Invalid", details: { causes: [{ message: expect.stringContaining("/metadata/labels/team") }] } } });
    expect(api.get("pods", "a", "p")?.metadata.labels).toEqual({ team: "b" });
    const stale = await failure(core.patchNamespacedPod({ namespace: "a", name: "p", body: { metadata: { resourceVersion: "1", labels: { x: "y" } } } }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch)));
    expect(stale).toMatchObject({ code: 409, status: { reason: "Conflict" } });

    const before = api.get("pods", "a", "p")?.metadata.resourceVersion;
    const noop = await core.patchNamespacedPod({ namespace: "a", name: "p", body: [{ op: "replace", path: "/metadata/labels/team", value: "b" }] });
    expect(noop.metadata?.resourceVersion).toBe(before);

    await custom.createNamespacedCustomObject({ ...CSB, namespace: "a", body: sandbox("sb") });
    const smpOnCustom = await failure(custom.patchNamespacedCustomObject({ ...CSB, namespace: "a", name: "sb", body: { spec: { documentId: "x" } } }, setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch)));
    expect(smpOnCustom).toMatchObject({ code: 415, status: { reason: "UnsupportedMediaType" } });
  });

  it("keeps an object with finalizers until they are removed: deletionTimestamp (MODIFIED), then DELETED", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const custom = kc.makeApiClient(CustomObjectsApi);
    const changes: WatchEventRecord[] = [];
    api.onChange((e) => changes.push(e));
    const watch = await openWatch(kc, "/apis/folio.dev/v1alpha1/namespaces/a/conversionsandboxes");
    await custom.createNamespacedCustomObject({ ...CSB, namespace: "a", body: sandbox("sb", { finalizers: ["folio.dev/cleanup"] }) });

    const deleting = (await custom.deleteNamespacedCustomObject({ ...CSB, namespace: "a", name: "sb" })) as KubeObject;
    expect(deleting.metadata).toMatchObject({ deletionTimestamp: expect.any(String), deletionGracePeriodSeconds: 0, finalizers: ["folio.dev/cleanup"], generation: 2 });
    expect(api.get("conversionsandboxes", "a", "sb")?.metadata.deletionTimestamp).toBe(deleting.metadata.deletionTimestamp);
    const addFinalizer = await failure(custom.patchNamespacedCustomObject({ ...CSB, namespace: "a", name: "sb", body: [{ op: "add", path: "/metadata/finalizers/-", value: "folio.dev/late" }] }));
    expect(addFinalizer).toMatchObject({ code: 422, status: { reason: "Invalid" } });

    await custom.patchNamespacedCustomObject({ ...CSB, namespace: "a", name: "sb", body: [{ op: "remove", path: "/metadata/finalizers/0" }] });
    expect(api.get("conversionsandboxes", "a", "sb")).toBeUndefined();
    expect(names(changes)).toEqual(["ADDED sb", "MODIFIED sb", "DELETED sb"]);
    // As on a real server, the DELETED event carries the last stored state (finalizer still listed) under a new resourceVersion.
    const deleted = changes[2]!.object;
    expect([deleted.metadata.finalizers, Number(deleted.metadata.resourceVersion) > Number(deleting.metadata.resourceVersion)]).toEqual([["folio.dev/cleanup"], true]);
    await vi.waitFor(() => expect(names(watch.events)).toEqual(["ADDED sb", "MODIFIED sb", "DELETED sb"]));
  });

  it("garbage-collects dependents through ownerReferences: Background after the owner, Foreground before it, Orphan keeps them", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const batch = kc.makeApiClient(BatchV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const ownedBy = (o: { apiVersion?: string; kind?: string; metadata?: { name?: string; uid?: string } }) => ({
      ownerReferences: [{ apiVersion: o.apiVersion ?? "", kind: o.kind ?? "", name: o.metadata?.name ?? "", uid: o.metadata?.uid ?? "", controller: true }],
    });
    const changes: WatchEventRecord[] = [];
    api.onChange((e) => { if (e.type === "DELETED") changes.push(e); });

    // Background (the fake's default too): sandbox → job → pod, sandbox → network policy.
    const sb = (await custom.createNamespacedCustomObject({ ...CSB, namespace: "a", body: sandbox("sb") })) as KubeObject;
    const j = await batch.createNamespacedJob({ namespace: "a", body: job("j", ownedBy(sb)) });
    await core.createNamespacedPod({ namespace: "a", body: pod("j-pod", {}, ownedBy({ ...j, apiVersion: "batch/v1", kind: "Job" })) });
    await kc.makeApiClient(NetworkingV1Api).createNamespacedNetworkPolicy({ namespace: "a", body: { metadata: { name: "np", ...ownedBy(sb) }, spec: { podSelector: {} } } });
    const status = (await custom.deleteNamespacedCustomObject({ ...CSB, namespace: "a", name: "sb", propagationPolicy: "Background" })) as Record<string, unknown>;
    expect(status).toMatchObject({ kind: "Status", status: "Success" });
    expect(names(changes)).toEqual(["DELETED sb", "DELETED j", "DELETED j-pod", "DELETED np"]);

    // Foreground: dependents go first.
    changes.length = 0;
    const j2 = await batch.createNamespacedJob({ namespace: "a", body: job("j2") });
    await core.createNamespacedPod({ namespace: "a", body: pod("j2-pod", {}, ownedBy({ ...j2, apiVersion: "batch/v1", kind: "Job" })) });
    const jobStatus = await batch.deleteNamespacedJob({ namespace: "a", name: "j2", propagationPolicy: "Foreground" });
    expect([jobStatus.status, names(changes)]).toEqual(["Success", ["DELETED j2-pod", "DELETED j2"]]);
    expect(api.requests.at(-1)).toMatchObject({ method: "DELETE", path: "/apis/batch/v1/namespaces/a/jobs/j2", query: { propagationPolicy: "Foreground" } });

    // Orphan: the dependent stays, without the reference to its deleted owner.
    const j3 = await batch.createNamespacedJob({ namespace: "a", body: job("j3") });
    await core.createNamespacedPod({ namespace: "a", body: pod("j3-pod", {}, ownedBy({ ...j3, apiVersion: "batch/v1", kind: "Job" })) });
    await batch.deleteNamespacedJob({ namespace: "a", name: "j3", propagationPolicy: "Orphan" });
    expect([api.get("jobs", "a", "j3"), api.get("pods", "a", "j3-pod")?.metadata.ownerReferences]).toEqual([undefined, undefined]);
    expect(itemNames(await core.listNamespacedPod({ namespace: "a" }))).toEqual(["j3-pod"]);
  });

  it("a watch without resourceVersion starts with a synthetic ADDED per object, then streams changes", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({ namespace: "a", body: pod("p1") });
    await core.createNamespacedPod({ namespace: "a", body: pod("p2") });
    await core.createNamespacedPod({ namespace: "b", body: pod("elsewhere") });
    const watch = await openWatch(kc, "/api/v1/namespaces/a/pods");
    await vi.waitFor(() => expect(names(watch.events)).toEqual(["ADDED p1", "ADDED p2"]));

    await core.createNamespacedPod({ namespace: "a", body: pod("p3") });
    await core.patchNamespacedPod({ namespace: "a", name: "p1", body: [{ op: "add", path: "/metadata/labels/x", value: "y" }] });
    const deleted = await core.deleteNamespacedPod({ namespace: "a", name: "p2" });
    await core.createNamespacedPod({ namespace: "b", body: pod("elsewhere-2") });
    await vi.waitFor(() => expect(names(watch.events)).toEqual(["ADDED p1", "ADDED p2", "ADDED p3", "MODIFIED p1", "DELETED p2"]));
    const rvs = watch.events.slice(2).map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs).toEqual([...rvs].sort((x, y) => x - y));
    expect(deleted.metadata?.name).toBe("p2");
    expect(api.openWatches("pods")).toBe(1);
  });

  it("a watch with a label selector sees objects enter (ADDED) and leave (DELETED) the selection", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({ namespace: "a", body: pod("p", { app: "ocr" }) });
    const watch = await openWatch(kc, "/api/v1/pods", { labelSelector: "app=ocr" });
    const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
    await core.patchNamespacedPod({ namespace: "a", name: "p", body: { metadata: { labels: { app: "other" } } } }, merge);
    await core.patchNamespacedPod({ namespace: "a", name: "p", body: { metadata: { labels: { app: "ocr", v: "2" } } } }, merge);
    await core.patchNamespacedPod({ namespace: "a", name: "p", body: { metadata: { labels: { v: "3" } } } }, merge);
    await vi.waitFor(() => expect(names(watch.events)).toEqual(["ADDED p", "DELETED p", "ADDED p", "MODIFIED p"]));
  });

  it("a watch from a resourceVersion replays only the changes after it", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const p1 = await core.createNamespacedPod({ namespace: "a", body: pod("p1") });
    await core.patchNamespacedPod({ namespace: "a", name: "p1", body: [{ op: "add", path: "/metadata/labels/x", value: "y" }] });
    await core.createNamespacedPod({ namespace: "a", body: pod("p2") });
    const replay = await openWatch(kc, "/api/v1/namespaces/a/pods", { resourceVersion: p1.metadata!.resourceVersion! });
    await vi.waitFor(() => expect(names(replay.events)).toEqual(["MODIFIED p1", "ADDED p2"]));

    const listRv = (await core.listNamespacedPod({ namespace: "a" })).metadata!.resourceVersion!;
    const fromList = await openWatch(kc, "/api/v1/namespaces/a/pods", { resourceVersion: listRv });
    await core.deleteNamespacedPod({ namespace: "a", name: "p1" });
    await vi.waitFor(() => expect(names(fromList.events)).toEqual(["DELETED p1"]));
  });

  // What client-node delivers for 410: the Watch callback gets type "ERROR" with the Status object
  // (obj.code === 410, reason "Expired"), then the server ends the response and `done` is called
  // with null — NOT with an error. An operator must treat an ERROR event with code 410 as "re-list,
  // then watch from the list's resourceVersion" (client-node's ListWatch/informer does exactly this).
  it("answers a too-old resourceVersion, and compact(), with one 410 Expired ERROR event, then ends the watch", async () => {
    const api = await start({ historySize: 2 });
    const kc = api.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const first = await core.createNamespacedPod({ namespace: "a", body: pod("p1") });
    for (const name of ["p2", "p3", "p4"]) await core.createNamespacedPod({ namespace: "a", body: pod(name) });
    // resourceVersions 1..4; the history keeps the last 2 events (3, 4), so 2 is the oldest a watch can resume from.
    const evicted = await openWatch(kc, "/api/v1/namespaces/a/pods", { resourceVersion: first.metadata!.resourceVersion! });
    expect(await settled(evicted.done)).toEqual({ err: null });
    expect(evicted.events).toEqual([{
      type: "ERROR",
      object: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: `too old resource version: ${first.metadata?.resourceVersion} (2)`, reason: "Expired", code: 410 },
    }]);

    const open = await openWatch(kc, "/api/v1/namespaces/a/pods");
    await vi.waitFor(() => expect(open.events.length).toBe(4));
    const lastRv = (await core.listNamespacedPod({ namespace: "a" })).metadata!.resourceVersion!;
    api.compact();
    expect(await settled(open.done)).toEqual({ err: null });
    expect(open.events.slice(4).map((e) => [e.type, e.object.code, e.object.reason])).toEqual([["ERROR", 410, "Expired"]]);
    expect(api.openWatches()).toBe(0);

    const compacted = await openWatch(kc, "/api/v1/namespaces/a/pods", { resourceVersion: lastRv });
    expect(await settled(compacted.done)).toEqual({ err: null });
    expect(compacted.events.map((e) => [e.type, e.object.code])).toEqual([["ERROR", 410]]);
    // A list made after compaction gives a resourceVersion a watch can start from.
    const relistRv = (await core.listNamespacedPod({ namespace: "a" })).metadata!.resourceVersion!;
    const resumed = await openWatch(kc, "/api/v1/namespaces/a/pods", { resourceVersion: relistRv });
    await core.createNamespacedPod({ namespace: "a", body: pod("p5") });
    await vi.waitFor(() => expect(names(resumed.events)).toEqual(["ADDED p5"]));
  });

  it("a client-node informer re-lists after compaction and keeps its cache", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({ namespace: "a", body: pod("p1") });
    const informer = makeInformer(kc, "/api/v1/namespaces/a/pods", () => core.listNamespacedPod({ namespace: "a" }));
    await informer.start();
    onTestFinished(() => informer.stop());
    await vi.waitFor(() => expect(api.openWatches("pods")).toBe(1));
    api.compact();
    await core.createNamespacedPod({ namespace: "a", body: pod("p2") });
    await vi.waitFor(() => expect(informer.list("a").map((p) => p.metadata?.name).sort()).toEqual(["p1", "p2"]));
    const lists = api.requests.filter((r) => r.method === "GET" && r.query.watch === undefined).length;
    expect(lists).toBe(2);
  });

  // What client-node delivers when the connection breaks: "drop" (socket destroyed mid-stream) calls
  // `done` with undici's `TypeError: terminated` (cause: SocketError "other side closed"); an ERROR
  // event with a 500 Status arrives in the callback and is followed by `done(null)`. A watch the
  // server refuses outright (non-200) calls `done` with an Error whose `statusCode` is the HTTP status.
  // In every case the operator must restart the watch itself.
  it("breakWatches ends every open watch: drop → done(Error), error → ERROR 500 event then done(null)", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const dropped = await openWatch(kc, "/api/v1/pods");
    const droppedJobs = await openWatch(kc, "/apis/batch/v1/jobs");
    expect(api.openWatches()).toBe(2);
    api.breakWatches("drop");
    const outcome = (d: { err: unknown } | "still open") => (d === "still open" ? d : d.err instanceof Error ? `${d.err.name}: ${d.err.message}` : d.err);
    expect((await Promise.all([settled(dropped.done), settled(droppedJobs.done)])).map(outcome)).toEqual(["TypeError: terminated", "TypeError: terminated"]);
    expect(api.openWatches()).toBe(0);

    const errored = await openWatch(kc, "/api/v1/pods");
    api.breakWatches("error");
    expect(await settled(errored.done)).toEqual({ err: null });
    expect(errored.events.map((e) => [e.type, e.object.code, e.object.reason])).toEqual([["ERROR", 500, "InternalError"]]);

    const refused = await openWatch(kc, "/api/v1/pods", { fieldSelector: "spec.image=x" });
    const result = await settled(refused.done);
    expect(result !== "still open" && result.err instanceof Error ? [result.err.message, (result.err as Error & { statusCode?: number }).statusCode] : result).toEqual(["Bad Request", 400]);
  });

  it("sends BOOKMARK events carrying the current resourceVersion only to watches that allow them", async () => {
    const api = await start({ bookmarkIntervalMs: 50 });
    const kc = api.kubeConfig();
    const created = await kc.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: "a", body: pod("p") });
    const withBookmarks = await openWatch(kc, "/api/v1/namespaces/a/pods", { allowWatchBookmarks: true, resourceVersion: created.metadata!.resourceVersion! });
    const without = await openWatch(kc, "/api/v1/namespaces/a/pods", { resourceVersion: created.metadata!.resourceVersion! });
    await vi.waitFor(() => expect(withBookmarks.events.length).toBeGreaterThanOrEqual(2));
    expect(withBookmarks.events[0]).toEqual({ type: "BOOKMARK", object: { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: created.metadata?.resourceVersion } } });
    expect(without.events).toEqual([]);
  });

  it("silenceWatches holds events and bookmarks back until resumed; watches opened meanwhile are not silenced", async () => {
    const api = await start({ bookmarkIntervalMs: 30 });
    const kc = api.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const watch = await openWatch(kc, "/api/v1/namespaces/a/pods", { allowWatchBookmarks: true });
    await vi.waitFor(() => expect(watch.events.length).toBeGreaterThan(0));
    api.silenceWatches(true);
    await new Promise((r) => setTimeout(r, 50));
    const seen = watch.events.length;
    await core.createNamespacedPod({ namespace: "a", body: pod("p") });
    const fresh = await openWatch(kc, "/api/v1/namespaces/a/pods");
    await vi.waitFor(() => expect(names(fresh.events)).toEqual(["ADDED p"]));
    await new Promise((r) => setTimeout(r, 150));
    expect(watch.events.length).toBe(seen);
    expect(api.openWatches()).toBe(2);

    api.silenceWatches(false);
    await vi.waitFor(() => expect(names(watch.events.filter((e) => e.type !== "BOOKMARK"))).toEqual(["ADDED p"]));
  });

  // client-node's Watch aborts a watch that receives nothing for requestTimeoutMs (30 s; a private
  // field in 2.0.1, shortened here) and calls done with a DOMException named "TimeoutError".
  it("a silenced watch trips client-node's inactivity timeout: done(TimeoutError)", async () => {
    const api = await start();
    const watch = new Watch(api.kubeConfig());
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 300;
    const done = new Promise<unknown>((resolve) => void watch.watch("/api/v1/pods", {}, () => {}, resolve).then((c) => onTestFinished(() => c.abort())));
    await vi.waitFor(() => expect(api.openWatches()).toBe(1));
    api.silenceWatches(true);
    const result = await settled(done);
    expect(result instanceof Error ? result.name : result).toBe("TimeoutError");
  });

  it("timeoutSeconds ends the watch cleanly (done(null))", async () => {
    const api = await start();
    const watch = await openWatch(api.kubeConfig(), "/api/v1/namespaces/a/pods", { timeoutSeconds: 1 });
    expect(await settled(watch.done, 3000)).toEqual({ err: null });
    expect(api.openWatches()).toBe(0);
  });

  it("with jobController, creating a Job creates its Pod, owned by the Job, and marks the Job active", async () => {
    const api = await start({ jobController: true });
    const kc = api.kubeConfig();
    const batch = kc.makeApiClient(BatchV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const created = await batch.createNamespacedJob({ namespace: "a", body: job("convert") });
    const uid = created.metadata?.uid;
    expect(created.spec?.selector).toEqual({ matchLabels: { "batch.kubernetes.io/controller-uid": uid } });

    const pods = (await core.listNamespacedPod({ namespace: "a", labelSelector: "job-name=convert" })).items;
    expect(pods.map((p) => [p.metadata?.name?.slice(0, 8), GENERATED_NAME.test(p.metadata?.name?.slice(8) ?? "")])).toEqual([["convert-", true]]);
    const [p] = pods;
    expect(p?.metadata?.labels).toEqual({ app: "convert", "job-name": "convert", "batch.kubernetes.io/job-name": "convert", "controller-uid": uid, "batch.kubernetes.io/controller-uid": uid });
    expect(p?.metadata?.ownerReferences).toEqual([{ apiVersion: "batch/v1", kind: "Job", name: "convert", uid, controller: true, blockOwnerDeletion: true }]);
    expect([p?.spec?.containers.map((c) => c.image), p?.spec?.restartPolicy, p?.status?.phase]).toEqual([["libreoffice"], "Never", "Pending"]);
    const current = await batch.readNamespacedJobStatus({ namespace: "a", name: "convert" });
    expect([current.status?.active, current.status?.startTime instanceof Date]).toEqual([1, true]);

    await batch.deleteNamespacedJob({ namespace: "a", name: "convert", propagationPolicy: "Background" });
    expect(itemNames(await core.listNamespacedPod({ namespace: "a" }))).toEqual([]);
  });

  it("serves leases, network policies and events through their typed clients", async () => {
    const api = await start();
    const kc = api.kubeConfig();
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const lease = await coordination.createNamespacedLease({ namespace: "folio", body: { metadata: { name: "operator" }, spec: { holderIdentity: "a", leaseDurationSeconds: 15 } } });
    const renewed = await coordination.replaceNamespacedLease({ namespace: "folio", name: "operator", body: { ...lease, spec: { ...lease.spec, holderIdentity: "a", renewTime: new Date() } } });
    const stolen = await failure(coordination.replaceNamespacedLease({ namespace: "folio", name: "operator", body: { ...lease, spec: { ...lease.spec, holderIdentity: "b" } } }));
    expect([renewed.spec?.holderIdentity, renewed.metadata?.generation, stolen.code]).toEqual(["a", 2, 409]);

    const networking = kc.makeApiClient(NetworkingV1Api);
    await networking.createNamespacedNetworkPolicy({ namespace: "sandboxes", body: { metadata: { name: "deny-all" }, spec: { podSelector: {}, policyTypes: ["Ingress", "Egress"] } } });
    expect(itemNames(await networking.listNamespacedNetworkPolicy({ namespace: "sandboxes" }))).toEqual(["deny-all"]);

    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedEvent({ namespace: "a", body: { metadata: { name: "sb.1" }, involvedObject: { kind: "ConversionSandbox", name: "sb", namespace: "a" }, reason: "Started", message: "m", type: "Normal" } });
    await core.createNamespacedEvent({ namespace: "a", body: { metadata: { name: "other.1" }, involvedObject: { kind: "Pod", name: "other", namespace: "a" }, reason: "Started", message: "m", type: "Normal" } });
    expect(itemNames(await core.listNamespacedEvent({ namespace: "a", fieldSelector: "involvedObject.name=sb,reason=Started" }))).toEqual(["sb.1"]);
  });
});
