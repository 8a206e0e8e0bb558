/**
 * The `kubernetes` backend through the real @kubernetes/client-node against
 * the fake API server (test/fake-kube-api.ts, a test double: no real cluster
 * runs on these machines).
 *
 * First without an operator, the test writing the ConversionSandbox's status
 * and acting as the sandbox over the real broker: how each outcome and each
 * failure reason is answered, output pdf handed through both ways, that
 * watches survive a compaction (410) and
 * dropped connections, the limits, abort, and that the resource is always
 * deleted and never holds the document.
 *
 * Then end to end: the real operator (internal/operator) turns the resource
 * into a Job, the fake's Job controller makes the pod, and the test kubelet
 * (test/fake-kubelet.ts, a test double for kubelet + gVisor that runs the
 * bundled sandbox program as a local, unsandboxed process) runs it.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from "../../../test/fake-kube-api.ts";
import type { PodBehaviour } from "../../../test/fake-kubelet.ts";
import type { ResultChunk } from "../../gen/proto/folio/conversion/v1/ResultChunk.ts";
import { type ConversionSandbox, type ConversionSandboxStatus } from "../../operator/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { fromGrpcError, grpc } from "../../platform/grpc/index.ts";
import { backendOnBroker, serveBrokerForTests } from "../../../test/broker-server.ts";
import { folioFailure } from "../../../test/support.ts";
import { PNG_SIGNATURE } from "../../formats/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { PROJECT_ROOT } from "../assets.ts";
import { pagedDocx, pngInfo } from "../testdocs.ts";
import { SandboxBroker } from "./broker.ts";
import { startTestCluster, type TestCluster } from "./cluster.testkit.ts";
import { REQUEST_LABELS, type KubernetesBackend, type KubernetesBackendOptions } from "./backend.ts";

const NAMESPACE = "default";
const FIXTURES = join(PROJECT_ROOT, "test", "fixtures", "convert");
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const fakePng = (n: number) => Buffer.concat([PNG_SIGNATURE, Buffer.from(`page ${n}`)]);

const log = createLogger(process.env.FOLIO_TEST_LOG ?? "silent");
const broker = new SandboxBroker({ log });
const brokerServer = serveBrokerForTests(broker);

/** The one ConversionSandbox in the namespace, once it is there. */
async function theSandbox(api: FakeKubeApi): Promise<ConversionSandbox> {
  await expect.poll(() => api.list("conversionsandboxes", NAMESPACE).length, { timeout: 10_000 }).toBe(1);
  return api.list("conversionsandboxes", NAMESPACE)[0] as unknown as ConversionSandbox;
}

/** Acts as the sandbox program: fetches the job, then submits `pages` fake PNGs, or with `pdf` that PDF (of `pdf.documentPages` pages) and no page. */
async function actAsSandbox(token: string, pages: number, pdf?: { bytes: Buffer; documentPages: number }): Promise<Buffer> {
  const document = await new Promise<Buffer>((resolve, reject) => {
    const call = brokerServer.client.FetchJob({ token }, { deadline: Date.now() + 10_000 });
    const data: Buffer[] = [];
    call.on("data", (chunk: { item?: string; data?: Buffer }) => {
      if (chunk.item === "data" && chunk.data) data.push(chunk.data);
    });
    call.on("error", (err: grpc.ServiceError) => reject(fromGrpcError(err, "broker")));
    call.on("end", () => resolve(Buffer.concat(data)));
  });
  const messages: ResultChunk[] = [{ start: { token } }];
  for (let n = 1; n <= pages; n++) messages.push({ page: { page_number: n, png: fakePng(n) } });
  if (pdf) messages.push({ pdf_chunk: pdf.bytes }, { result: { ok: true, page_count: 0, document_page_count: pdf.documentPages, pdf: true, timings: {} } });
  else messages.push({ result: { ok: true, page_count: pages, timings: {} } });
  await new Promise<void>((resolve, reject) => {
    const call = brokerServer.client.SubmitResult({ deadline: Date.now() + 10_000 }, (err) => (err ? reject(fromGrpcError(err, "broker")) : resolve()));
    for (const m of messages) call.write(m);
    call.end();
  });
  return document;
}

describe("KubernetesBackend, the test writing the status", () => {
  let api: FakeKubeApi;
  /** Every ConversionSandbox version the API server stored. */
  const stored: KubeObject[] = [];

  beforeAll(async () => {
    // Bookmarks every 100 ms so watch-resume paths run often.
    api = await startFakeKubeApi({ bookmarkIntervalMs: 100 });
    api.onChange((e) => {
      if (e.resource === "conversionsandboxes") stored.push(e.object);
    });
  });

  afterAll(async () => {
    await api?.close();
  });

  afterEach(async () => {
    // Every conversion deletes its resource, whatever happened.
    await expect.poll(() => api.list("conversionsandboxes", NAMESPACE).map((o) => o.metadata.name), { timeout: 10_000 }).toEqual([]);
    expect(broker.pending()).toBe(0);
  });

  const backend = (overrides: Partial<KubernetesBackendOptions> = {}) =>
    backendOnBroker(broker, brokerServer, {
      kubeConfig: api.kubeConfig(),
      namespace: NAMESPACE,
      maxOutputBytes: 1024 * 1024,
      log,
      startupGraceMs: 5_000,
      computeMillisWaitMs: 2_000,
      ...overrides,
    });

  it("creates one resource with the token but not the document, and answers with the sandbox's pages", async () => {
    const document = fixture("two-pages.docx");
    const converting = backend({ resources: { memory: "2Gi" } }).convert({ document, format: "DOCX", maxPages: 5, timeoutMs: 20_000, traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
    const sandbox = await theSandbox(api);
    expect(sandbox.metadata.name).toMatch(/^csb-[a-z0-9]{16}$/);
    expect(sandbox.metadata.labels).toEqual(REQUEST_LABELS);
    expect(sandbox.spec).toEqual({
      format: "DOCX",
      maxPages: 5,
      timeoutSeconds: 20,
      broker: { address: brokerServer.address, token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) },
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      resources: { memory: "2Gi" },
    });
    const fetched = await actAsSandbox(sandbox.spec.broker.token, 2);
    expect(fetched.equals(document)).toBe(true);
    api.setStatus("conversionsandboxes", NAMESPACE, sandbox.metadata.name, { phase: "Succeeded", computeMillis: 1234, pageCount: 2 });
    const result = await converting;
    expect({ pageCount: result.pageCount, pages: result.pages.map((p) => p.toString("latin1")), computeMillis: result.computeMillis }).toEqual({
      pageCount: 2,
      pages: [fakePng(1).toString("latin1"), fakePng(2).toString("latin1")],
      computeMillis: 1234,
    });
    // The document never reached the API server, in any version of the resource.
    const documentText = [document.toString("base64").slice(0, 64), document.toString("hex").slice(0, 64)];
    const everything = JSON.stringify(stored);
    for (const t of documentText) expect(everything).not.toContain(t);
    const creates = api.requests.filter((r) => r.method === "POST" && r.path.endsWith("/conversionsandboxes"));
    expect(JSON.stringify(creates.at(-1)?.body).length).toBeLessThan(2000);
  });

  it("asks the sandbox for the PDF with output pdf and answers with it, no page", async () => {
    const pdf = Buffer.from("%PDF-1.7\n% a PDF of three pages\n%%EOF\n");
    const converting = backend().convert({ document: fixture("two-pages.docx"), format: "DOCX", maxPages: 500, output: "pdf", timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    await actAsSandbox(sandbox.spec.broker.token, 0, { bytes: pdf, documentPages: 3 });
    api.setStatus("conversionsandboxes", NAMESPACE, sandbox.metadata.name, { phase: "Succeeded", computeMillis: 321, pageCount: 0 });
    const result = await converting;
    expect({ ...result, pdf: result.pdf?.toString("latin1") }).toEqual({ pages: [], pageCount: 0, documentPageCount: 3, pdf: pdf.toString("latin1"), computeMillis: 321 });
  });

  it("refuses output pdf with a page selection before any sandbox starts", async () => {
    const err = await folioFailure(backend().convert({ document: fixture("two-pages.docx"), format: "DOCX", maxPages: 5, pages: [{ first: 1, last: 1 }], output: "pdf", timeoutMs: 20_000 }));
    expect({ code: err.code, param: err.param }).toEqual({ code: "invalid_request", param: "pages" });
    expect(api.list("conversionsandboxes", NAMESPACE)).toEqual([]);
  });

  it("falls back on the broker's fetch-to-submit time when the operator writes no computeMillis", async () => {
    const converting = backend().convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    await actAsSandbox(sandbox.spec.broker.token, 1);
    const result = await converting;
    expect(result.pageCount).toBe(1);
    expect(result.computeMillis).toBeGreaterThanOrEqual(1);
    expect(result.computeMillis).toBeLessThan(2000);
  });

  it("keeps following the resource through a compaction (410) and broken watches", async () => {
    const converting = backend().convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    const watchRequests = () => api.requests.filter((r) => r.query.watch === "true" && r.path.endsWith("/conversionsandboxes")).length;
    await expect.poll(() => api.openWatches("conversionsandboxes"), { timeout: 5000 }).toBe(1);
    const breakers = { compact: () => api.compact(), drop: () => api.breakWatches("drop"), error: () => api.breakWatches("error") };
    for (const [name, breakIt] of Object.entries(breakers)) {
      const before = watchRequests();
      breakIt();
      // A new watch request, and it stays open (a watch from a compacted resourceVersion would end at once).
      await expect.poll(() => ({ name, rewatched: watchRequests() > before, open: api.openWatches("conversionsandboxes") }), { timeout: 5000 }).toEqual({ name, rewatched: true, open: 1 });
    }
    const reads = () => api.requests.filter((r) => r.method === "GET" && r.query.watch !== "true" && r.path.endsWith("/conversionsandboxes")).length;
    const readsBefore = reads();
    api.setStatus("conversionsandboxes", NAMESPACE, sandbox.metadata.name, { phase: "Failed", reason: "DeadlineExceeded", message: "the sandbox ran longer than its limit of 20s" });
    const err = await folioFailure(converting);
    expect({ code: err.code, message: err.message }).toEqual({ code: "timeout", message: "the conversion did not finish within its limit of 20s" });
    // The last watch delivered the failure itself: no re-read was needed.
    expect(reads() - readsBefore).toBe(0);
  });

  it("sees a status written while no watch was open", async () => {
    const converting = backend().convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    await expect.poll(() => api.openWatches("conversionsandboxes"), { timeout: 5000 }).toBe(1);
    // Silence the watch, write the failure, then drop the silenced connection: only the re-read can see it.
    api.silenceWatches(true);
    api.setStatus("conversionsandboxes", NAMESPACE, sandbox.metadata.name, { phase: "Failed", reason: "OOMKilled", message: "the sandbox exceeded its memory limit and was killed" });
    api.breakWatches("drop");
    api.silenceWatches(false);
    const err = await folioFailure(converting);
    expect(err.code).toBe("conversion_failed");
  });

  it.each([
    ["OOMKilled", "", { code: "conversion_failed", retryable: false, message: /needs more memory than the sandbox's memory limit of 1536Mi allows/ }],
    ["ConversionFailed", "conversion_failed: LibreOffice could not read the document", { code: "conversion_failed", retryable: false, message: /LibreOffice could not read the document/ }],
    ["ConversionFailed", "timeout: the conversion ran out of time", { code: "timeout", retryable: false, message: /ran out of time/ }],
    ["ImagePullFailed", "image folio-sandbox:latest could not be pulled", { code: "internal_error", retryable: true, message: /could not run \(ImagePullFailed\): image folio-sandbox:latest/ }],
    ["PodFailed", "the sandbox exited with code 1", { code: "internal_error", retryable: true, message: /PodFailed/ }],
    ["JobFailed", "Job csb-x failed", { code: "internal_error", retryable: true, message: /JobFailed/ }],
  ] as const)("answers a Failed status with reason %s as the matching error", async (reason, message, expected) => {
    const converting = backend({ resources: { memory: "1536Mi" } }).convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    api.setStatus("conversionsandboxes", NAMESPACE, sandbox.metadata.name, { phase: "Failed", reason, ...(message ? { message } : {}) } satisfies ConversionSandboxStatus);
    const err = await folioFailure(converting);
    expect({ code: err.code, retryable: err.retryable, message: err.message }).toEqual({ ...expected, message: expect.stringMatching(expected.message) });
  });

  it("answers conversion_failed when the sandbox succeeded without returning a result", async () => {
    const converting = backend().convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    api.setStatus("conversionsandboxes", NAMESPACE, sandbox.metadata.name, { phase: "Succeeded", computeMillis: 50, pageCount: 1 });
    const err = await folioFailure(converting);
    expect({ code: err.code, message: err.message }).toEqual({ code: "conversion_failed", message: "the sandbox finished without returning a result" });
  });

  it("answers timeout at timeoutMs + startupGraceMs when nothing happens, and kills the token", async () => {
    const started = Date.now();
    const converting = backend({ startupGraceMs: 300 }).convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 400 });
    const sandbox = await theSandbox(api);
    const err = await folioFailure(converting);
    expect(err.code).toBe("timeout");
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    const late = await folioFailure(actAsSandbox(sandbox.spec.broker.token, 1));
    expect(late.code).toBe("permission_denied");
  });

  it("rejects with the abort reason and deletes the resource when the caller aborts", async () => {
    const controller = new AbortController();
    const converting = backend().convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 }, controller.signal);
    await theSandbox(api);
    const reason = new FolioError("timeout", "the client went away");
    controller.abort(reason);
    await expect(converting).rejects.toBe(reason);
  });

  it("answers internal_error (retryable) when someone else deletes the resource", async () => {
    const converting = backend().convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    await expect.poll(() => api.openWatches("conversionsandboxes"), { timeout: 5000 }).toBe(1);
    api.remove("conversionsandboxes", NAMESPACE, sandbox.metadata.name);
    const err = await folioFailure(converting);
    expect({ code: err.code, retryable: err.retryable, message: err.message }).toEqual({ code: "internal_error", retryable: true, message: expect.stringMatching(/deleted before its sandbox finished/) });
  });

  it("passes the program's own failure through as conversion_failed", async () => {
    const converting = backend().convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 });
    const sandbox = await theSandbox(api);
    const token = sandbox.spec.broker.token;
    await new Promise<void>((resolve, reject) => {
      const call = brokerServer.client.FetchJob({ token }, { deadline: Date.now() + 10_000 });
      call.on("data", () => undefined);
      call.on("error", reject);
      call.on("end", resolve);
    });
    await new Promise<void>((resolve, reject) => {
      const call = brokerServer.client.SubmitResult({ deadline: Date.now() + 10_000 }, (err) => (err ? reject(err) : resolve()));
      call.write({ start: { token } });
      call.write({ result: { ok: false, page_count: 0, error_code: "conversion_failed", error_message: "the document has 9 pages; at most 5 are converted" } });
      call.end();
    });
    const err = await folioFailure(converting);
    expect({ code: err.code, message: err.message }).toEqual({ code: "conversion_failed", message: "the document has 9 pages; at most 5 are converted" });
  });

  it("answers internal_error (retryable) when the API server cannot be reached", async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: "gone", server: "http://127.0.0.1:1", skipTLSVerify: false }],
      users: [{ name: "gone" }],
      contexts: [{ name: "gone", cluster: "gone", user: "gone", namespace: NAMESPACE }],
      currentContext: "gone",
    });
    const err = await folioFailure(backend({ kubeConfig }).convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 20_000 }));
    expect({ code: err.code, retryable: err.retryable }).toEqual({ code: "internal_error", retryable: true });
  });
});

describe("KubernetesBackend end to end: real operator, fake API server, test kubelet", () => {
  const work = mkdtempSync(join(tmpdir(), "folio-kubernetes-test-"));
  let cluster: TestCluster;
  let backend: KubernetesBackend;
  /** What the test kubelet does with the next pod. */
  let nextPod: PodBehaviour = "run";
  /** Every version of every object the API server stored, for the "never the document" check. */
  const stored: { resource: string; object: KubeObject }[] = [];

  beforeAll(async () => {
    cluster = await startTestCluster({
      work,
      namespace: NAMESPACE,
      log,
      operator: { jobVerdictGraceMs: 2000, resyncMs: 5000 },
      kubelet: { behaviour: () => nextPod },
      onChange: (e) => stored.push({ resource: e.resource, object: e.object }),
    });
    backend = backendOnBroker(broker, brokerServer, { kubeConfig: cluster.api.kubeConfig(), namespace: NAMESPACE, log, resources: { memory: "1536Mi" }, startupGraceMs: 5_000 });
  }, 120_000);

  afterAll(async () => {
    await cluster?.operator.close();
    await cluster?.kubelet.close();
    await cluster?.api.close();
    rmSync(work, { recursive: true, force: true });
  });

  afterEach(async () => {
    nextPod = "run";
    // The resource is deleted by the backend; the operator's finalizer deletes the Job first (and its pod with it).
    const leftovers = () => ({
      conversionsandboxes: cluster.api.list("conversionsandboxes", NAMESPACE).map((o) => o.metadata.name),
      jobs: cluster.api.list("jobs", NAMESPACE).map((o) => o.metadata.name),
      pods: cluster.api.list("pods", NAMESPACE).map((o) => o.metadata.name),
    });
    await expect.poll(leftovers, { timeout: 20_000 }).toEqual({ conversionsandboxes: [], jobs: [], pods: [] });
    await expect.poll(() => cluster.kubelet.running(), { timeout: 10_000 }).toBe(0);
    expect(broker.pending()).toBe(0);
  });

  /** Every stored version of every ConversionSandbox, oldest first. */
  const sandboxVersions = () => stored.filter((s) => s.resource === "conversionsandboxes").map((s) => s.object as unknown as ConversionSandbox);
  /** The spec of the last ConversionSandbox created. */
  const lastSpec = () => sandboxVersions().at(-1)!.spec;

  it("converts a DOCX into 200-DPI A4 pages, billed with the operator's computeMillis, and leaves nothing behind", async () => {
    const document = fixture("two-pages.docx");
    const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")) as { pdfPages: Record<string, number> };
    const earlier = new Set(sandboxVersions().map((s) => s.metadata.name));
    const result = await backend.convert({ document, format: "DOCX", maxPages: 5, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(manifest.pdfPages["two-pages.docx"]);
    for (const page of result.pages) expect(pngInfo(page)).toMatchObject({ width: 1654, height: 2339, phys: { x: 7874, y: 7874, unit: 1 } });
    const run = cluster.kubelet.runs.at(-1);
    await expect.poll(() => run?.exitCode, { timeout: 10_000 }).not.toBeUndefined();
    expect({ exitCode: run?.exitCode, stderr: run?.exitCode === 0 ? "" : run?.stderr }).toEqual({ exitCode: 0, stderr: "" });
    // computeMillis is what the operator wrote when this conversion's sandbox (a name not seen before it) succeeded.
    const succeeded = sandboxVersions()
      .filter((s) => !earlier.has(s.metadata.name))
      .map((s) => s.status)
      .find((s) => s?.phase === "Succeeded");
    expect(succeeded?.computeMillis).toBeGreaterThan(0);
    expect(result.computeMillis).toBe(succeeded?.computeMillis);
    // Neither the document nor anything of it reached the API server, in any object.
    const everything = JSON.stringify(stored);
    for (const part of [document.toString("base64").slice(0, 64), document.toString("base64").slice(-64), document.toString("hex").slice(0, 64)]) {
      expect(everything).not.toContain(part);
    }
  }, 120_000);

  it("hands back the PDF LibreOffice wrote with output pdf, every page of it and none rendered", async () => {
    const document = pagedDocx(3);
    const result = await backend.convert({ document, format: "DOCX", maxPages: 3, output: "pdf", timeoutMs: 60_000 });
    expect({ pages: result.pages, pageCount: result.pageCount, documentPageCount: result.documentPageCount, pdfHeader: result.pdf?.subarray(0, 5).toString("latin1") }).toEqual({
      pages: [],
      pageCount: 0,
      documentPageCount: 3,
      pdfHeader: "%PDF-",
    });
    expect(result.pdf?.includes("%%EOF")).toBe(true);
    expect(result.computeMillis).toBeGreaterThan(0);
    const run = cluster.kubelet.runs.at(-1);
    await expect.poll(() => run?.exitCode, { timeout: 10_000 }).not.toBeUndefined();
    expect({ exitCode: run?.exitCode, stderr: run?.exitCode === 0 ? "" : run?.stderr }).toEqual({ exitCode: 0, stderr: "" });
  }, 120_000);

  it("refuses the token of a finished sandbox", async () => {
    await backend.convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 60_000 });
    const err = await folioFailure(actAsSandbox(lastSpec().broker.token, 1));
    expect(err.code).toBe("permission_denied");
  }, 120_000);

  it("answers conversion_failed for a corrupt document", async () => {
    const err = await folioFailure(backend.convert({ document: Buffer.from("PK\u0003\u0004 not really a DOCX"), format: "DOCX", maxPages: 5, timeoutMs: 60_000 }));
    expect({ code: err.code, message: err.message }).toEqual({ code: "conversion_failed", message: expect.stringMatching(/LibreOffice could not read the document as DOCX/) });
    // The program submitted the failure as its result (exit 0, unless the pod was deleted under it first).
    const run = cluster.kubelet.runs.at(-1);
    await expect.poll(() => run?.exitCode !== undefined, { timeout: 10_000 }).toBe(true);
    expect({ exitCode: run?.exitCode, signal: run?.signal, stderr: run?.stderr }).toEqual({ exitCode: run?.signal ? null : 0, signal: run?.signal ?? null, stderr: expect.stringContaining('"msg":"sandbox converted","ok":false') });
  }, 120_000);

  it("answers conversion_failed naming the memory limit when the sandbox is OOM-killed", async () => {
    nextPod = "oom";
    const err = await folioFailure(backend.convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 60_000 }));
    expect({ code: err.code, message: err.message }).toEqual({ code: "conversion_failed", message: expect.stringMatching(/memory limit of 1536Mi/) });
    expect(cluster.kubelet.runs.at(-1)?.behaviour).toBe("oom");
  }, 120_000);

  it("answers timeout when the pod never starts", async () => {
    nextPod = "never-start";
    const small = backendOnBroker(broker, brokerServer, { kubeConfig: cluster.api.kubeConfig(), namespace: NAMESPACE, maxOutputBytes: 1024 * 1024, log, startupGraceMs: 500 });
    const started = Date.now();
    const err = await folioFailure(small.convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 5, timeoutMs: 1000 }));
    expect(err.code).toBe("timeout");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(cluster.kubelet.runs.at(-1)?.behaviour).toBe("never-start");
  }, 120_000);
});
