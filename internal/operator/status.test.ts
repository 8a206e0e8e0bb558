// Status derivation from a Job and its pod: each phase and failure reason, and compute time at second resolution.
import { describe, expect, it } from "vitest";
import type { Job, Pod } from "./kube.ts";
import { deriveStatus, parseTerminationMessage, pickPod, preciseMillis, statusPatch, type DeriveInput } from "./status.ts";
import type { ConversionSandbox, ConversionSandboxStatus } from "./types.ts";

const T0 = Date.parse("2025-03-04T05:06:00Z");
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString().replace(/\.000Z$/, "Z");

const sandbox = (status?: ConversionSandboxStatus): ConversionSandbox => ({
  apiVersion: "folio.dev/v1alpha1",
  kind: "ConversionSandbox",
  metadata: { name: "csb-1", uid: "sb-uid", generation: 2 },
  spec: { format: "DOCX", maxPages: 5, timeoutSeconds: 60, broker: { address: "b:1", token: "t".repeat(16) }, resources: { memory: "1Gi" } },
  ...(status ? { status } : {}),
});

const job = (conditions: { type: string; reason?: string; message?: string }[] = []): Job => ({
  metadata: { name: "csb-1", uid: "job-uid", creationTimestamp: at(0) },
  status: { startTime: at(1), conditions: conditions.map((c) => ({ status: "True", lastTransitionTime: at(70), ...c })) },
});

type ContainerState = NonNullable<NonNullable<Pod["status"]>["containerStatuses"]>[number]["state"];
const pod = (state: ContainerState | undefined, phase = "Pending", extra: Partial<NonNullable<Pod["status"]>> = {}): Pod => ({
  metadata: { name: "csb-1-x7k2p", creationTimestamp: at(1), ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "csb-1", uid: "job-uid", controller: true }] },
  status: {
    phase,
    startTime: at(1),
    ...(state ? { containerStatuses: [{ name: "sandbox", image: "folio-sandbox:1", imageID: "", ready: false, restartCount: 0, state }] } : {}),
    ...extra,
  },
});

function derive(input: Partial<DeriveInput>) {
  return deriveStatus({ sandbox: sandbox(), job: job(), pod: undefined, now: T0 + 5000, imagePullGraceMs: 30_000, jobVerdictGraceMs: 10_000, ...input });
}

const terminated = (exitCode: number, message?: object | string, reason = exitCode === 0 ? "Completed" : "Error") => ({
  terminated: {
    exitCode,
    reason,
    startedAt: at(2),
    finishedAt: at(6),
    ...(message === undefined ? {} : { message: typeof message === "string" ? message : JSON.stringify(message) }),
  },
});

describe("deriveStatus", () => {
  it("is Pending with the Job's name before the pod exists, and names the pod once it does", () => {
    expect(derive({}).status).toMatchObject({ phase: "Pending", jobName: "csb-1", observedGeneration: 2 });
    expect(derive({ pod: pod({ waiting: { reason: "ContainerCreating" } }) }).status).toMatchObject({
      phase: "Pending",
      podName: "csb-1-x7k2p",
      message: "container waiting: ContainerCreating",
    });
  });

  it("is Running with startedAt once the container runs", () => {
    expect(derive({ pod: pod({ running: { startedAt: at(2) } }, "Running") }).status).toMatchObject({ phase: "Running", startedAt: at(2) });
  });

  it("is Succeeded with times, pages and the sandbox's precise compute time when it fits the kubelet's", () => {
    const { status } = derive({ pod: pod(terminated(0, { ok: true, pageCount: 3, computeMillis: 4321 }), "Succeeded") });
    expect(status).toMatchObject({ phase: "Succeeded", startedAt: at(2), finishedAt: at(6), computeMillis: 4321, pageCount: 3 });
    expect(status.reason).toBeUndefined();
  });

  it("uses the kubelet's second-resolution compute time when the sandbox's figure is off by more than a second", () => {
    const { status } = derive({ pod: pod(terminated(0, { ok: true, pageCount: 1, computeMillis: 9000 }), "Succeeded") });
    expect(status.computeMillis).toBe(4000);
  });

  it("fails with ConversionFailed when the termination message says ok:false", () => {
    const { status } = derive({ pod: pod(terminated(0, { ok: false, pageCount: 0, errorCode: "conversion_failed", message: "password protected" }), "Succeeded") });
    expect(status).toMatchObject({ phase: "Failed", reason: "ConversionFailed", message: "conversion_failed: password protected", pageCount: 0 });
  });

  it("fails with OOMKilled when the container was killed for memory, whatever the Job says", () => {
    const { status } = derive({ pod: pod(terminated(137, undefined, "OOMKilled"), "Failed"), job: job([{ type: "Failed", reason: "BackoffLimitExceeded" }]) });
    expect(status).toMatchObject({ phase: "Failed", reason: "OOMKilled", computeMillis: 4000 });
    expect(status.message).toContain("1Gi");
  });

  it("fails with DeadlineExceeded from the Job's Failed or FailureTarget condition, even when the pod shows a plain kill", () => {
    for (const type of ["Failed", "FailureTarget"]) {
      const { status } = derive({
        sandbox: sandbox({ phase: "Running", startedAt: at(2) }),
        job: job([{ type, reason: "DeadlineExceeded", message: "Job was active longer than specified deadline" }]),
        pod: pod(terminated(137), "Failed"),
      });
      expect(status, type).toMatchObject({ phase: "Failed", reason: "DeadlineExceeded", startedAt: at(2), finishedAt: at(6) });
      expect(status.message).toContain("60s");
    }
    const noPod = derive({ sandbox: sandbox({ phase: "Running", startedAt: at(2) }), job: job([{ type: "Failed", reason: "DeadlineExceeded" }]) }).status;
    expect(noPod).toMatchObject({ phase: "Failed", reason: "DeadlineExceeded", startedAt: at(2), finishedAt: at(70), computeMillis: 68_000 });
  });

  it("waits for the Job's verdict on a bare non-zero exit, then fails with PodFailed", () => {
    const early = derive({ pod: pod(terminated(1), "Failed"), now: T0 + 7000 });
    expect(early.status.phase).toBe("Running");
    expect(early.recheckAfterMs).toBe(9000);
    const late = derive({ pod: pod(terminated(1), "Failed"), now: T0 + 20_000 });
    expect(late.status).toMatchObject({ phase: "Failed", reason: "PodFailed", message: "the sandbox exited with code 1: Error" });
    const judged = derive({ pod: pod(terminated(1), "Failed"), job: job([{ type: "Failed", reason: "BackoffLimitExceeded" }]), now: T0 + 7000 });
    expect(judged.status).toMatchObject({ phase: "Failed", reason: "PodFailed" });
  });

  it("fails with PodFailed when the pod failed without a container verdict (evicted)", () => {
    const { status } = derive({ pod: pod(undefined, "Failed", { reason: "Evicted", message: "node low on memory" }) });
    expect(status).toMatchObject({ phase: "Failed", reason: "PodFailed", message: "pod csb-1-x7k2p failed: Evicted: node low on memory" });
  });

  it("fails with JobFailed when only the Job says it failed", () => {
    const { status } = derive({ job: job([{ type: "Failed", reason: "PodFailurePolicy", message: "policy" }]) });
    expect(status).toMatchObject({ phase: "Failed", reason: "JobFailed", message: "Job csb-1 failed: PodFailurePolicy: policy" });
  });

  it("gives an image pull a grace period, then fails with ImagePullFailed", () => {
    const waiting = pod({ waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } });
    const early = derive({ pod: waiting, now: T0 + 11_000 });
    expect(early.status.phase).toBe("Pending");
    expect(early.recheckAfterMs).toBe(20_000);
    const late = derive({ pod: waiting, now: T0 + 31_000 });
    expect(late.status).toMatchObject({ phase: "Failed", reason: "ImagePullFailed" });
    expect(late.status.message).toContain("folio-sandbox:1");
  });

  it("is Succeeded from the Job alone when the pod is gone", () => {
    const complete = job([{ type: "Complete" }]);
    complete.status!.completionTime = at(9);
    expect(derive({ job: complete, sandbox: sandbox({ phase: "Running", startedAt: at(2) }) }).status).toMatchObject({
      phase: "Succeeded",
      startedAt: at(2),
      finishedAt: at(9),
      computeMillis: 7000,
    });
  });
});

describe("preciseMillis", () => {
  it("trusts the sandbox within ±1 s of the kubelet's figure and the kubelet otherwise", () => {
    expect(preciseMillis(4000, 4999.6)).toBe(5000);
    expect(preciseMillis(4000, 3000)).toBe(3000);
    expect(preciseMillis(4000, 2999)).toBe(4000);
    expect(preciseMillis(4000, undefined)).toBe(4000);
    expect(preciseMillis(undefined, 12.4)).toBe(12);
  });
});

describe("parseTerminationMessage", () => {
  it("reads the sandbox's JSON and ignores anything else", () => {
    expect(parseTerminationMessage('{"ok":true,"pageCount":2}')).toEqual({ ok: true, pageCount: 2 });
    expect(parseTerminationMessage("panic: out of memory")).toBeUndefined();
    expect(parseTerminationMessage('{"ok":"yes"}')).toBeUndefined();
    expect(parseTerminationMessage(undefined)).toBeUndefined();
  });
});

describe("pickPod", () => {
  it("picks the newest pod the Job controls and ignores other Jobs' pods", () => {
    const older = pod({ running: { startedAt: at(1) } });
    const newer = { ...pod(undefined), metadata: { ...pod(undefined).metadata, name: "csb-1-newer", creationTimestamp: at(3) } };
    const foreign = { ...pod(undefined), metadata: { name: "other", creationTimestamp: at(9), ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: "other", uid: "other-uid", controller: true }] } };
    expect(pickPod([older, foreign, newer], job())?.metadata?.name).toBe("csb-1-newer");
    expect(pickPod([foreign], job())).toBeUndefined();
  });
});

describe("statusPatch", () => {
  it("sends only what changes, clears a stale reason and message, and nothing when they agree", () => {
    expect(statusPatch({ phase: "Pending", jobName: "j", message: "waiting" }, { phase: "Running", jobName: "j", startedAt: at(1) })).toEqual({
      phase: "Running",
      startedAt: at(1),
      message: null,
    });
    expect(statusPatch({ phase: "Running", jobName: "j" }, { phase: "Running", jobName: "j" })).toBeUndefined();
    expect(statusPatch(undefined, { phase: "Pending" })).toEqual({ phase: "Pending" });
  });
});
