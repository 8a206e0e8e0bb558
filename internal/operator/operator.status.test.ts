// Against the fake API server, the test acting as kubelet: status follows the pod and Job through Pending, Running, Succeeded or Failed with a reason.
import { afterEach, describe, expect, it } from "vitest";
import type { ConversionSandboxStatus } from "./types.ts";
import { Harness, kubeletTime, NS, pause, until } from "./testserver.ts";

let harness: Harness;
afterEach(async () => {
  await harness?.close();
});

// Recent times: finished sandboxes are deleted once older than the retention period (600 s here).
const STARTED = kubeletTime(40);
const FINISHED = kubeletTime(36);
const DEADLINE = kubeletTime(10);

function containerStatus(state: object) {
  return { containerStatuses: [{ name: "sandbox", image: "folio-sandbox:latest", imageID: "", ready: false, restartCount: 0, state }] };
}

/** A leading operator with one sandbox; once its Job and pod are there, the pod's name. */
async function sandboxWithPod(name: string, spec: Parameters<Harness["createSandbox"]>[1] = {}): Promise<string> {
  harness = await Harness.start();
  await harness.leader();
  harness.createSandbox(name, spec);
  return podFor(name);
}

/** Waits for the sandbox's Job and pod; returns the pod's name. */
async function podFor(name: string): Promise<string> {
  const pod = await until(() => harness.podOf(name), 10_000, `the pod of ${name}`);
  await until(() => harness.sandbox(name)?.status?.podName === pod.metadata.name, 10_000, `status.podName of ${name}`);
  return pod.metadata.name;
}

async function statusOf(name: string, phase: string): Promise<ConversionSandboxStatus> {
  return until(
    () => harness.sandbox(name)?.status?.phase === phase && harness.sandbox(name)!.status!,
    10_000,
    () => `${name} to be ${phase} (status now: ${JSON.stringify(harness.sandbox(name)?.status)})`,
  );
}

describe("operator: status from the Job and its pod", () => {
  it("goes Pending → Running → Succeeded with times, compute time and pages, through the status subresource", async () => {
    const pod = await sandboxWithPod("csb-ok");
    expect(await statusOf("csb-ok", "Pending")).toMatchObject({ jobName: "csb-ok", podName: pod });

    harness.api.setStatus("pods", NS, pod, { phase: "Running", ...containerStatus({ running: { startedAt: STARTED } }) });
    expect(await statusOf("csb-ok", "Running")).toMatchObject({ startedAt: STARTED });
    expect(harness.sandbox("csb-ok")?.status?.message, "the Pending message is cleared").toBeUndefined();

    harness.api.setStatus("pods", NS, pod, {
      phase: "Succeeded",
      ...containerStatus({
        terminated: { exitCode: 0, reason: "Completed", startedAt: STARTED, finishedAt: FINISHED, message: JSON.stringify({ ok: true, pageCount: 3, computeMillis: 4321 }) },
      }),
    });
    harness.api.setStatus("jobs", NS, "csb-ok", { conditions: [{ type: "Complete", status: "True" }], succeeded: 1, active: null });
    const done = await statusOf("csb-ok", "Succeeded");
    expect(done).toMatchObject({ jobName: "csb-ok", podName: pod, startedAt: STARTED, finishedAt: FINISHED, computeMillis: 4321, pageCount: 3, observedGeneration: 1 });
    expect(done.reason).toBeUndefined();

    const statusWrites = harness.api.requests.filter((r) => r.path === `/apis/folio.dev/v1alpha1/namespaces/${NS}/conversionsandboxes/csb-ok/status`);
    expect(statusWrites.length).toBeGreaterThanOrEqual(3);
    expect(new Set(statusWrites.map((r) => `${r.method} ${r.contentType}`))).toEqual(new Set(["PATCH application/merge-patch+json"]));

    // The Job's TTL removes it later: a finished sandbox keeps its status.
    harness.api.remove("jobs", NS, "csb-ok");
    await pause(1500);
    expect(harness.sandbox("csb-ok")?.status).toMatchObject({ phase: "Succeeded", pageCount: 3 });
  });

  it("fails with OOMKilled when the container is killed for memory", async () => {
    const pod = await sandboxWithPod("csb-oom", { resources: { memory: "256Mi" } });
    harness.api.setStatus("pods", NS, pod, {
      phase: "Failed",
      ...containerStatus({ terminated: { exitCode: 137, reason: "OOMKilled", startedAt: STARTED, finishedAt: FINISHED } }),
    });
    const status = await statusOf("csb-oom", "Failed");
    expect(status).toMatchObject({ reason: "OOMKilled", startedAt: STARTED, finishedAt: FINISHED, computeMillis: 4000 });
    expect(status.message).toContain("256Mi");
  });

  it("fails with DeadlineExceeded from the Job's Failed condition", async () => {
    const pod = await sandboxWithPod("csb-slow", { timeoutSeconds: 30 });
    harness.api.setStatus("pods", NS, pod, { phase: "Running", ...containerStatus({ running: { startedAt: STARTED } }) });
    await statusOf("csb-slow", "Running");
    harness.api.setStatus("jobs", NS, "csb-slow", {
      conditions: [{ type: "Failed", status: "True", reason: "DeadlineExceeded", message: "Job was active longer than specified deadline", lastTransitionTime: DEADLINE }],
    });
    const status = await statusOf("csb-slow", "Failed");
    expect(status).toMatchObject({ reason: "DeadlineExceeded", startedAt: STARTED, finishedAt: DEADLINE, computeMillis: 30_000 });
    expect(status.message).toContain("30s");
  });

  it("fails with ConversionFailed when the termination message says ok:false", async () => {
    const pod = await sandboxWithPod("csb-bad");
    harness.api.setStatus("pods", NS, pod, {
      phase: "Succeeded",
      ...containerStatus({
        terminated: {
          exitCode: 0,
          reason: "Completed",
          startedAt: STARTED,
          finishedAt: FINISHED,
          message: JSON.stringify({ ok: false, pageCount: 0, errorCode: "conversion_failed", message: "the document is password protected", computeMillis: 3900 }),
        },
      }),
    });
    expect(await statusOf("csb-bad", "Failed")).toMatchObject({ reason: "ConversionFailed", message: "conversion_failed: the document is password protected", computeMillis: 3900 });
  });

  it("fails with ImagePullFailed once the pull has failed for longer than the grace period", async () => {
    const pod = await sandboxWithPod("csb-pull");
    harness.api.setStatus("pods", NS, pod, { ...containerStatus({ waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } }) });
    const status = await statusOf("csb-pull", "Failed");
    expect(status.reason).toBe("ImagePullFailed");
    expect(status.message).toContain("ImagePullBackOff");
  });

  it("fails with PodFailed when the container exits non-zero and the Job confirms the failure", async () => {
    const pod = await sandboxWithPod("csb-crash");
    harness.api.setStatus("pods", NS, pod, {
      phase: "Failed",
      ...containerStatus({ terminated: { exitCode: 2, reason: "Error", startedAt: STARTED, finishedAt: FINISHED, message: "job folder unusable" } }),
    });
    harness.api.setStatus("jobs", NS, "csb-crash", { conditions: [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded" }] });
    expect(await statusOf("csb-crash", "Failed")).toMatchObject({ reason: "PodFailed", message: "the sandbox exited with code 2: Error: job folder unusable" });
  });
});
