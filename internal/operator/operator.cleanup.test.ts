// Against the fake API server: deletion goes through the finalizer (Job first, propagation Background), and finished sandboxes past the retention are deleted.
import { afterEach, describe, expect, it } from "vitest";
import { Harness, kubeletTime, NS, pause, sandboxObject, until } from "./testserver.ts";

let harness: Harness;
afterEach(async () => {
  await harness?.close();
});

const SANDBOX_PATH = (name: string) => `/apis/folio.dev/v1alpha1/namespaces/${NS}/conversionsandboxes/${name}`;
const JOB_PATH = (name: string) => `/apis/batch/v1/namespaces/${NS}/jobs/${name}`;

describe("operator: cleanup", () => {
  it("deletes a deleted sandbox's Job with propagation Background, then removes the finalizer so the sandbox goes", async () => {
    harness = await Harness.start();
    await harness.leader();
    harness.createSandbox("csb-del");
    await until(() => harness.podOf("csb-del") && harness.sandbox("csb-del")?.metadata.finalizers?.includes("folio.dev/sandbox-cleanup"), 10_000, "Job, pod and finalizer");

    harness.api.remove("conversionsandboxes", NS, "csb-del");
    expect(harness.sandbox("csb-del")?.metadata.deletionTimestamp, "the finalizer holds the sandbox").toBeDefined();

    await until(() => !harness.sandbox("csb-del"), 10_000, () => `the sandbox to go (now: ${JSON.stringify(harness.sandbox("csb-del")?.metadata)})`);
    expect(harness.api.get("jobs", NS, "csb-del")).toBeUndefined();
    expect(harness.podOf("csb-del")).toBeUndefined();

    const requests = harness.api.requests;
    const jobDelete = requests.findIndex((r) => r.method === "DELETE" && r.path === JOB_PATH("csb-del"));
    expect(jobDelete, "the Job was deleted by the operator").toBeGreaterThanOrEqual(0);
    const sent = requests[jobDelete]!;
    expect(sent.query.propagationPolicy ?? (sent.body as { propagationPolicy?: string } | undefined)?.propagationPolicy).toBe("Background");
    const finalizerRemoved = requests.findIndex((r, i) => i > jobDelete && r.method === "PUT" && r.path === SANDBOX_PATH("csb-del"));
    expect(finalizerRemoved, "the finalizer went after the Job").toBeGreaterThan(jobDelete);

    // A new sandbox of the same name gets a new Job of its own, not a JobConflict.
    const again = harness.createSandbox("csb-del");
    const job = await until(() => harness.api.get("jobs", NS, "csb-del"), 10_000, "the new sandbox's Job");
    expect((job.metadata.ownerReferences as { uid: string }[])[0]!.uid).toBe(again.metadata.uid);
    await until(() => harness.sandbox("csb-del")?.status?.phase === "Pending", 10_000, () => `Pending (status: ${JSON.stringify(harness.sandbox("csb-del")?.status)})`);
  });

  it("deletes finished sandboxes older than FOLIO_SANDBOX_RETENTION_SECONDS and keeps running ones", async () => {
    harness = await Harness.start();
    await harness.leader({ FOLIO_SANDBOX_RETENTION_SECONDS: "2" });
    harness.api.put("conversionsandboxes", {
      ...sandboxObject("csb-old"),
      status: { phase: "Succeeded", jobName: "csb-old", startedAt: kubeletTime(3605), finishedAt: kubeletTime(3600), pageCount: 1 },
    });
    harness.createSandbox("csb-running");
    const pod = await until(() => harness.podOf("csb-running"), 10_000, "the running sandbox's pod");
    harness.api.setStatus("pods", NS, pod.metadata.name, {
      phase: "Running",
      containerStatuses: [{ name: "sandbox", image: "i", imageID: "", ready: true, restartCount: 0, state: { running: { startedAt: kubeletTime(1) } } }],
    });

    await until(() => !harness.sandbox("csb-old"), 10_000, "the old finished sandbox to be deleted");
    expect(harness.api.requests.some((r) => r.method === "DELETE" && r.path === SANDBOX_PATH("csb-old"))).toBe(true);

    // A sandbox that just finished stays for the retention period, then goes.
    harness.api.put("conversionsandboxes", {
      ...sandboxObject("csb-fresh"),
      status: { phase: "Failed", reason: "OOMKilled", jobName: "csb-fresh", finishedAt: kubeletTime(0) },
    });
    await pause(500);
    expect(harness.sandbox("csb-fresh"), "deleted before its retention ran out").toBeDefined();
    await until(() => !harness.sandbox("csb-fresh"), 10_000, "the fresh finished sandbox to be deleted after 2 s");

    await until(() => harness.sandbox("csb-running")?.status?.phase === "Running", 5000, "csb-running to be Running");
    await pause(1200);
    expect(harness.sandbox("csb-running"), "a running sandbox is never deleted").toBeDefined();
  });

  it("fails a sandbox whose Job was deleted before it finished, instead of running it twice", async () => {
    harness = await Harness.start();
    await harness.leader();
    harness.createSandbox("csb-lost");
    await until(() => harness.sandbox("csb-lost")?.status?.jobName, 10_000, "status.jobName");
    harness.api.remove("jobs", NS, "csb-lost");
    await until(() => harness.sandbox("csb-lost")?.status?.phase === "Failed", 10_000, "Failed");
    expect(harness.sandbox("csb-lost")?.status).toMatchObject({ reason: "JobDeleted" });
    await pause(300);
    expect(harness.api.get("jobs", NS, "csb-lost"), "not re-created").toBeUndefined();
  });
});
