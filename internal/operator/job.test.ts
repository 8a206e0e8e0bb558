// Pure builders: the sandbox Job carries every isolation field; the NetworkPolicy allows the broker and DNS only.
import { describe, expect, it } from "vitest";
import { operatorSchema, parseConfig } from "../platform/config/index.ts";
import { buildJob, buildNetworkPolicy, jobNameFor, networkPolicyMatches, parseLabelSelector } from "./job.ts";
import type { ConversionSandbox } from "./types.ts";

const config = parseConfig(operatorSchema, {});

function sandbox(overrides: Partial<ConversionSandbox["spec"]> = {}, name = "csb-1"): ConversionSandbox {
  return {
    apiVersion: "folio.dev/v1alpha1",
    kind: "ConversionSandbox",
    metadata: { name, namespace: "folio", uid: "uid-1", generation: 1 },
    spec: {
      format: "DOCX",
      maxPages: 10,
      timeoutSeconds: 90,
      broker: { address: "folio-conversion.folio.svc:50053", token: "tok_secret_0123456789" },
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      ...overrides,
    },
  };
}

describe("jobNameFor", () => {
  it("keeps a short DNS-label name as it is, so the Job is easy to find", () => {
    expect(jobNameFor("csb-abc123")).toBe("csb-abc123");
  });

  it("is deterministic, at most 63 characters and distinct for names that would truncate alike", () => {
    const long = `csb-${"a".repeat(100)}`;
    const other = `csb-${"a".repeat(99)}b`;
    expect(jobNameFor(long)).toBe(jobNameFor(long));
    expect(jobNameFor(long).length).toBeLessThanOrEqual(63);
    expect(jobNameFor(long)).not.toBe(jobNameFor(other));
    expect(jobNameFor(long)).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });

  it("turns a dotted name into a valid DNS label without colliding with the dashed one", () => {
    expect(jobNameFor("a.b")).toMatch(/^a-b-[0-9a-f]{10}$/);
    expect(jobNameFor("a.b")).not.toBe(jobNameFor("a-b"));
  });
});

describe("buildJob", () => {
  const job = buildJob(sandbox(), config);
  const pod = job.spec!.template.spec!;
  const container = pod.containers[0]!;

  it("names and labels the Job for its sandbox, owned (controller, blockOwnerDeletion) by it", () => {
    expect(job.metadata?.name).toBe("csb-1");
    expect(job.metadata?.namespace).toBe("folio");
    expect(job.metadata?.labels).toEqual({
      "app.kubernetes.io/name": "folio",
      "app.kubernetes.io/component": "sandbox",
      "app.kubernetes.io/managed-by": "folio-operator",
      "folio.dev/sandbox": "csb-1",
    });
    expect(job.spec!.template.metadata?.labels).toEqual(job.metadata?.labels);
    expect(job.metadata?.ownerReferences).toEqual([
      { apiVersion: "folio.dev/v1alpha1", kind: "ConversionSandbox", name: "csb-1", uid: "uid-1", controller: true, blockOwnerDeletion: true },
    ]);
  });

  it("runs once, within the sandbox's deadline, and is cleaned up after the TTL", () => {
    expect(job.spec).toMatchObject({ backoffLimit: 0, activeDeadlineSeconds: 90, ttlSecondsAfterFinished: config.FOLIO_SANDBOX_JOB_TTL_SECONDS });
    expect(pod.restartPolicy).toBe("Never");
  });

  it("isolates the pod: gVisor, no token, no service links, non-root, read-only, no capabilities, seccomp", () => {
    expect(pod.runtimeClassName).toBe("gvisor");
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.enableServiceLinks).toBe(false);
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534, seccompProfile: { type: "RuntimeDefault" } });
    expect(container.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 65534,
      runAsGroup: 65534,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(container.terminationMessagePolicy).toBe("File");
  });

  it("sets requests equal to limits from the configuration, and an in-memory /tmp with a size limit", () => {
    expect(container.resources).toEqual({ requests: { cpu: "1", memory: "1536Mi" }, limits: { cpu: "1", memory: "1536Mi" } });
    expect(pod.volumes).toEqual([{ name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "768Mi" } }]);
    expect(container.volumeMounts).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
  });

  it("takes resources from the spec when it names them", () => {
    const c = buildJob(sandbox({ resources: { cpu: "250m", memory: "2Gi" } }), config).spec!.template.spec!.containers[0]!;
    expect(c.resources).toEqual({ requests: { cpu: "250m", memory: "2Gi" }, limits: { cpu: "250m", memory: "2Gi" } });
  });

  it("passes the broker address, token and trace context in the environment", () => {
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      FOLIO_BROKER_ADDRESS: "folio-conversion.folio.svc:50053",
      FOLIO_BROKER_TOKEN: "tok_secret_0123456789",
      TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      HOME: "/tmp",
    });
    const noTrace = buildJob(sandbox({ traceparent: undefined }), config).spec!.template.spec!.containers[0]!;
    expect(noTrace.env?.map((e) => e.name)).not.toContain("TRACEPARENT");
  });

  it("omits runtimeClassName when configured empty, and sets a service account only when configured", () => {
    const plain = buildJob(sandbox(), { ...config, FOLIO_SANDBOX_RUNTIME_CLASS: "none", FOLIO_SANDBOX_SERVICE_ACCOUNT: "" }).spec!.template.spec!;
    expect(plain).not.toHaveProperty("runtimeClassName");
    expect(plain).not.toHaveProperty("serviceAccountName");
    const named = buildJob(sandbox(), { ...config, FOLIO_SANDBOX_SERVICE_ACCOUNT: "folio-sandbox" }).spec!.template.spec!;
    expect(named.serviceAccountName).toBe("folio-sandbox");
    expect(named.automountServiceAccountToken).toBe(false);
  });

  it("refuses a sandbox that was not read from the API server (no uid to own the Job)", () => {
    const s = sandbox();
    delete s.metadata.uid;
    expect(() => buildJob(s, config)).toThrow(/uid/);
  });
});

describe("the NetworkPolicy", () => {
  const policy = buildNetworkPolicy("folio", config);

  it("selects every sandbox pod and refuses all ingress", () => {
    expect(policy.metadata).toMatchObject({ name: "folio-sandbox", namespace: "folio" });
    expect(policy.spec?.podSelector).toEqual({
      matchLabels: { "app.kubernetes.io/name": "folio", "app.kubernetes.io/component": "sandbox", "app.kubernetes.io/managed-by": "folio-operator" },
    });
    expect(policy.spec?.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(policy.spec?.ingress).toEqual([]);
  });

  it("allows egress to the conversion pods' broker port and to kube-dns on port 53, nothing else", () => {
    expect(policy.spec?.egress).toEqual([
      {
        to: [{ podSelector: { matchLabels: { "app.kubernetes.io/name": "folio", "app.kubernetes.io/component": "conversion" } } }],
        ports: [{ protocol: "TCP", port: 50053 }],
      },
      {
        to: [{ namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } }, podSelector: { matchLabels: { "k8s-app": "kube-dns" } } }],
        ports: [
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ],
      },
    ]);
  });

  it("matches itself as the API server returns it (empty lists dropped), not a changed copy", () => {
    const returned = JSON.parse(JSON.stringify(policy));
    delete returned.spec.ingress;
    expect(networkPolicyMatches(returned, policy)).toBe(true);
    const opened = JSON.parse(JSON.stringify(policy));
    opened.spec.egress.push({});
    expect(networkPolicyMatches(opened, policy)).toBe(false);
    expect(networkPolicyMatches(undefined, policy)).toBe(false);
  });
});

describe("parseLabelSelector", () => {
  it("parses k=v pairs and refuses anything else", () => {
    expect(parseLabelSelector("a=b, c=d")).toEqual({ a: "b", c: "d" });
    expect(() => parseLabelSelector("a!=b")).toThrow();
    expect(() => parseLabelSelector("a==b")).toThrow();
    expect(() => parseLabelSelector("a")).toThrow();
    expect(() => parseLabelSelector("")).toThrow();
  });
});
