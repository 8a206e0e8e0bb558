// Against the fake API server: a ConversionSandbox becomes an isolated Job and the namespace gets the sandbox NetworkPolicy.
import { afterEach, describe, expect, it } from "vitest";
import { Harness, NS, until } from "./testserver.ts";

let harness: Harness;
afterEach(async () => {
  await harness?.close();
});

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- raw API objects in assertions

describe("operator: ConversionSandbox → Job", () => {
  it("creates a Job with every isolation field, owned by the sandbox and labelled for it", async () => {
    harness = await Harness.start();
    await harness.leader({ FOLIO_SANDBOX_IMAGE: "registry.example/folio-sandbox:1.2.3", FOLIO_SANDBOX_JOB_TTL_SECONDS: "120" });
    const sandbox = harness.createSandbox("csb-fields", { timeoutSeconds: 45 });

    const job = (await until(() => harness.api.get("jobs", NS, "csb-fields"), 10_000, "the Job")) as Obj;
    const pod = job.spec.template.spec;
    const container = pod.containers[0];

    expect(job.metadata.ownerReferences).toEqual([
      { apiVersion: "folio.dev/v1alpha1", kind: "ConversionSandbox", name: "csb-fields", uid: sandbox.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);
    expect(job.metadata.labels).toMatchObject({
      "app.kubernetes.io/name": "folio",
      "app.kubernetes.io/component": "sandbox",
      "app.kubernetes.io/managed-by": "folio-operator",
      "folio.dev/sandbox": "csb-fields",
    });
    expect(job.spec.template.metadata.labels).toMatchObject({ "app.kubernetes.io/managed-by": "folio-operator", "folio.dev/sandbox": "csb-fields" });
    expect(job.spec.backoffLimit).toBe(0);
    expect(job.spec.activeDeadlineSeconds).toBe(45);
    expect(job.spec.ttlSecondsAfterFinished).toBe(120);
    expect(pod.restartPolicy).toBe("Never");
    expect(pod.runtimeClassName).toBe("gvisor");
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.enableServiceLinks).toBe(false);
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: "RuntimeDefault" } });
    expect(container.image).toBe("registry.example/folio-sandbox:1.2.3");
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: 65534,
      runAsGroup: 65534,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container.resources).toEqual({ requests: { cpu: "1", memory: "1536Mi" }, limits: { cpu: "1", memory: "1536Mi" } });
    expect(pod.volumes).toEqual([{ name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "768Mi" } }]);
    expect(container.volumeMounts).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
    expect(container.terminationMessagePolicy).toBe("File");
    const env = Object.fromEntries(container.env.map((e: Obj) => [e.name, e.value]));
    expect(env).toMatchObject({
      FOLIO_BROKER_ADDRESS: "folio-conversion.folio-test.svc:50053",
      FOLIO_BROKER_TOKEN: "tok_csb-fields_0123456789abcdef",
      TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    });

    // The finalizer is on, and the status names the Job.
    const seen = await until(() => harness.sandbox("csb-fields")?.status?.jobName && harness.sandbox("csb-fields"), 5000, "status.jobName");
    expect(seen.metadata.finalizers).toContain("folio.dev/sandbox-cleanup");
    expect(seen.status).toMatchObject({ phase: "Pending", jobName: "csb-fields", observedGeneration: 1 });
  });

  it("takes the sandbox's resources over the defaults and omits runtimeClassName when configured empty", async () => {
    harness = await Harness.start();
    await harness.leader({}, { config: { FOLIO_SANDBOX_RUNTIME_CLASS: "none" } });
    harness.createSandbox("csb-res", { resources: { cpu: "250m", memory: "512Mi" } });
    const job = (await until(() => harness.api.get("jobs", NS, "csb-res"), 10_000, "the Job")) as Obj;
    expect(job.spec.template.spec.runtimeClassName).toBeUndefined();
    expect(job.spec.template.spec.containers[0].resources).toEqual({ requests: { cpu: "250m", memory: "512Mi" }, limits: { cpu: "250m", memory: "512Mi" } });
  });

  it("ensures the NetworkPolicy: sandbox pods reach the conversion pods' broker port and kube-dns only, and a changed one is put back", async () => {
    harness = await Harness.start();
    await harness.leader({ FOLIO_BROKER_PORT: "50099", FOLIO_CONVERSION_POD_SELECTOR: "app=conv,tier=backend" });
    const policy = (await until(() => harness.api.get("networkpolicies", NS, "folio-sandbox"), 10_000, "the NetworkPolicy")) as Obj;
    expect(policy.spec.podSelector).toEqual({
      matchLabels: { "app.kubernetes.io/name": "folio", "app.kubernetes.io/component": "sandbox", "app.kubernetes.io/managed-by": "folio-operator" },
    });
    expect(policy.spec.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(policy.spec.ingress ?? []).toEqual([]);
    expect(policy.spec.egress).toEqual([
      { to: [{ podSelector: { matchLabels: { app: "conv", tier: "backend" } } }], ports: [{ protocol: "TCP", port: 50099 }] },
      {
        to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } }, podSelector: { matchLabels: { "k8s-app": "kube-dns" } } }],
        ports: [
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ],
      },
    ]);

    // Someone opens it up; the next resync closes it again.
    harness.api.put("networkpolicies", { ...policy, spec: { ...policy.spec, egress: [{}] } } as never);
    await until(() => (harness.api.get("networkpolicies", NS, "folio-sandbox") as Obj).spec.egress.length === 2, 10_000, "the NetworkPolicy to be corrected");
    // And deleted: created again.
    harness.api.remove("networkpolicies", NS, "folio-sandbox");
    await until(() => harness.api.get("networkpolicies", NS, "folio-sandbox"), 10_000, "the NetworkPolicy to be re-created");
  });

  it("treats a Job it already made as success: one create, no second Job, after a restart too", async () => {
    harness = await Harness.start();
    const first = await harness.leader({ FOLIO_OPERATOR_IDENTITY: "first" });
    harness.createSandbox("csb-idem");
    await until(() => harness.sandbox("csb-idem")?.status?.phase === "Pending", 10_000, "Pending");
    await first.close();
    // A new operator process finds the Job already there and adopts nothing new.
    await harness.leader({ FOLIO_OPERATOR_IDENTITY: "second" });
    await until(() => harness.api.requests.filter((r) => r.method === "GET" && r.path.endsWith("/conversionsandboxes/csb-idem")).length >= 2, 10_000, "a second reconcile");
    const creates = harness.api.requests.filter((r) => r.method === "POST" && r.path === `/apis/batch/v1/namespaces/${NS}/jobs`);
    expect(creates).toHaveLength(1);
    expect(harness.api.list("jobs", NS)).toHaveLength(1);
    expect(harness.sandbox("csb-idem")?.status?.phase).toBe("Pending");
  });

  it("fails a sandbox with JobConflict when a Job of its name belongs to something else, and leaves that Job alone", async () => {
    harness = await Harness.start({ jobController: false });
    harness.api.put("jobs", {
      apiVersion: "batch/v1",
      kind: "Job",
      metadata: { name: "csb-taken", namespace: NS, labels: { "app.kubernetes.io/managed-by": "folio-operator" } },
      spec: { template: { spec: { restartPolicy: "Never", containers: [{ name: "x", image: "x" }] } } },
    });
    await harness.leader();
    harness.createSandbox("csb-taken");
    const status = await until(() => harness.sandbox("csb-taken")?.status?.phase === "Failed" && harness.sandbox("csb-taken")?.status, 10_000, "Failed");
    expect(status).toMatchObject({ phase: "Failed", reason: "JobConflict", jobName: "csb-taken" });
    expect(status.message).toContain("not by this ConversionSandbox");
    expect((harness.api.get("jobs", NS, "csb-taken") as Obj).spec.template.spec.containers[0].name).toBe("x");
  });

  it("fails a sandbox whose spec breaks the schema (an outdated CRD let it in) with InvalidSpec, and makes no Job", async () => {
    harness = await Harness.start();
    await harness.leader();
    harness.createSandbox("csb-invalid", { maxPages: 0 });
    const status = await until(() => harness.sandbox("csb-invalid")?.status?.phase === "Failed" && harness.sandbox("csb-invalid")?.status, 10_000, "Failed");
    expect(status).toMatchObject({ reason: "InvalidSpec" });
    expect(status.message).toContain("spec.maxPages");
    expect(harness.api.get("jobs", NS, "csb-invalid")).toBeUndefined();
  });
});
