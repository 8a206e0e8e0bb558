/**
 * Pure builders: the batch/v1 Job that runs one ConversionSandbox and the
 * per-namespace NetworkPolicy that fences every sandbox pod in. Every
 * security field is explained in docs/operator.md; the reasons are repeated
 * here only where a reader would otherwise be tempted to "simplify" them.
 */
import { createHash } from "node:crypto";
import type { V1EnvVar, V1Job, V1NetworkPolicy, V1NetworkPolicySpec, V1OwnerReference, V1PodSpec } from "@kubernetes/client-node";
import type { OperatorConfig } from "../platform/config/index.ts";
import { API_VERSION, KIND, LABELS, SANDBOX_ENV, SANDBOX_POD_LABELS, type ConversionSandbox } from "./types.ts";

/** Name of the NetworkPolicy the operator keeps in its namespace. */
export const NETWORK_POLICY_NAME = "folio-sandbox";
/** Name of the one container of a sandbox pod (status.ts looks it up by this name). */
export const CONTAINER_NAME = "sandbox";
/** uid/gid `nobody`: the sandbox owns no file on the image and no host identity. */
export const SANDBOX_UID = 65534;
/** Where the kubelet reads the termination message from (the Kubernetes default path). */
export const TERMINATION_MESSAGE_PATH = "/dev/termination-log";

/** The parts of the operator's configuration the builders read. */
export type JobSettings = Pick<
  OperatorConfig,
  | "FOLIO_SANDBOX_IMAGE"
  | "FOLIO_SANDBOX_RUNTIME_CLASS"
  | "FOLIO_SANDBOX_CPU"
  | "FOLIO_SANDBOX_MEMORY"
  | "FOLIO_SANDBOX_TMP_SIZE"
  | "FOLIO_SANDBOX_SERVICE_ACCOUNT"
  | "FOLIO_SANDBOX_JOB_TTL_SECONDS"
>;

export type NetworkPolicySettings = Pick<OperatorConfig, "FOLIO_CONVERSION_POD_SELECTOR" | "FOLIO_BROKER_PORT">;

const MAX_LABEL_VALUE = 63;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The Job's name for a sandbox: the sandbox's own name when that is a valid
 * DNS label of at most 63 characters (Kubernetes copies the Job name into the
 * pod's `job-name` label, whose values are limited to 63), else a readable
 * prefix plus a hash of the full name. Deterministic, so a reconcile repeated
 * after a crash finds the Job it made instead of making a second one.
 */
export function jobNameFor(sandboxName: string): string {
  if (sandboxName.length <= MAX_LABEL_VALUE && DNS_LABEL.test(sandboxName)) return sandboxName;
  const hash = createHash("sha256").update(sandboxName).digest("hex").slice(0, 10);
  const prefix = sandboxName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .slice(0, MAX_LABEL_VALUE - hash.length - 1)
    .replace(/^-+|-+$/g, "");
  return prefix ? `${prefix}-${hash}` : `sandbox-${hash}`;
}

/** Labels of a sandbox's Job and pod: the fixed sandbox labels plus the sandbox's name. */
export function sandboxLabels(sandbox: ConversionSandbox): Record<string, string> {
  return { ...SANDBOX_POD_LABELS, [LABELS.sandbox]: labelValue(sandbox.metadata.name) };
}

/** A sandbox name as a label value (names longer than 63 characters are hashed the same way as Job names). */
function labelValue(name: string): string {
  return name.length <= MAX_LABEL_VALUE ? name : jobNameFor(name);
}

/** The owner reference that makes the sandbox the Job's controller (garbage collection, and how events map back). */
export function ownerReference(sandbox: ConversionSandbox): V1OwnerReference {
  if (!sandbox.metadata.uid) throw new TypeError(`ConversionSandbox ${sandbox.metadata.name} has no uid: it was not read from the API server`);
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: sandbox.metadata.name,
    uid: sandbox.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The Job that runs one sandbox. */
export function buildJob(sandbox: ConversionSandbox, settings: JobSettings): V1Job {
  const { spec } = sandbox;
  const labels = sandboxLabels(sandbox);
  const cpu = spec.resources?.cpu ?? settings.FOLIO_SANDBOX_CPU;
  const memory = spec.resources?.memory ?? settings.FOLIO_SANDBOX_MEMORY;
  const env = [
    { name: SANDBOX_ENV.brokerAddress, value: spec.broker.address },
    { name: SANDBOX_ENV.brokerToken, value: spec.broker.token },
    ...(spec.traceparent ? [{ name: SANDBOX_ENV.traceparent, value: spec.traceparent }] : []),
    // LibreOffice writes its profile under $HOME; the root is read-only and nobody's home does not exist.
    { name: "HOME", value: "/tmp" },
    { name: "TMPDIR", value: "/tmp" },
  ];
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: {
      name: jobNameFor(sandbox.metadata.name),
      namespace: sandbox.metadata.namespace,
      labels,
      ownerReferences: [ownerReference(sandbox)],
    },
    spec: {
      // One attempt: a retry would reuse a one-time broker token that is already spent.
      backoffLimit: 0,
      // The schema requires whole seconds; ceil keeps a fractional value from a lax client a limit, not an error.
      activeDeadlineSeconds: Math.ceil(spec.timeoutSeconds),
      ttlSecondsAfterFinished: settings.FOLIO_SANDBOX_JOB_TTL_SECONDS,
      template: { metadata: { labels }, spec: sandboxPodSpec(settings, env, { cpu, memory }) },
    },
  };
}

/**
 * The locked-down pod of every sandbox, per-document or warm (docs/operator.md,
 * "The Job"): gVisor, no service-account token, nobody, read-only root, no
 * capability, Guaranteed resources, memory-backed /tmp.
 */
export function sandboxPodSpec(settings: JobSettings, env: V1EnvVar[], resources: { cpu: string; memory: string }): V1PodSpec {
  const { cpu, memory } = resources;
  return {
    restartPolicy: "Never",
    // "none" (or empty) leaves the cluster default runtime: an empty variable reads as unset, so the sentinel is what operators can set.
    ...(settings.FOLIO_SANDBOX_RUNTIME_CLASS && settings.FOLIO_SANDBOX_RUNTIME_CLASS !== "none" ? { runtimeClassName: settings.FOLIO_SANDBOX_RUNTIME_CLASS } : {}),
    ...(settings.FOLIO_SANDBOX_SERVICE_ACCOUNT ? { serviceAccountName: settings.FOLIO_SANDBOX_SERVICE_ACCOUNT } : {}),
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    hostNetwork: false,
    hostPID: false,
    hostIPC: false,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: SANDBOX_UID,
      runAsGroup: SANDBOX_UID,
      seccompProfile: { type: "RuntimeDefault" },
    },
    containers: [
      {
        name: CONTAINER_NAME,
        image: settings.FOLIO_SANDBOX_IMAGE,
        imagePullPolicy: "IfNotPresent",
        env,
        resources: { requests: { cpu, memory }, limits: { cpu, memory } },
        securityContext: {
          runAsNonRoot: true,
          runAsUser: SANDBOX_UID,
          runAsGroup: SANDBOX_UID,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          privileged: false,
          capabilities: { drop: ["ALL"] },
          seccompProfile: { type: "RuntimeDefault" },
        },
        volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
        terminationMessagePath: TERMINATION_MESSAGE_PATH,
        terminationMessagePolicy: "File",
      },
    ],
    // Memory-backed: the document and its pages never touch the node's disk, and the
    // bytes count against the pod's memory limit, so the limit bounds both.
    volumes: [{ name: "tmp", emptyDir: { medium: "Memory", sizeLimit: settings.FOLIO_SANDBOX_TMP_SIZE } }],
  };
}

/** Parses `k=v,k=v` (FOLIO_CONVERSION_POD_SELECTOR) into matchLabels. */
export function parseLabelSelector(selector: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const part of selector.split(",")) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const eq = trimmed.indexOf("=");
    const key = eq > 0 ? trimmed.slice(0, eq).trim() : "";
    const value = eq > 0 ? trimmed.slice(eq + 1).trim() : "";
    if (!key || trimmed.includes("!") || value.startsWith("=")) {
      throw new TypeError(`label selector ${JSON.stringify(selector)}: expected k=v pairs separated by commas, got ${JSON.stringify(trimmed)}`);
    }
    labels[key] = value;
  }
  if (Object.keys(labels).length === 0) throw new TypeError(`label selector ${JSON.stringify(selector)} selects nothing`);
  return labels;
}

/**
 * The NetworkPolicy of every sandbox pod in a namespace: nothing may connect
 * to them, and they may connect only to the conversion service's broker port
 * and to the cluster DNS. DNS is allowed because `spec.broker.address` is a
 * Service name (e.g. `folio-conversion.folio.svc:50053`) that the pod must
 * resolve before it can dial it; without it every sandbox would fail with a
 * lookup error. DNS answers only names: it does not let a pod reach any
 * other address, which the broker rule keeps to the conversion pods.
 */
export function buildNetworkPolicy(namespace: string, settings: NetworkPolicySettings): V1NetworkPolicy {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: NETWORK_POLICY_NAME,
      namespace,
      labels: { [LABELS.name]: "folio", [LABELS.component]: "sandbox", [LABELS.managedBy]: SANDBOX_POD_LABELS[LABELS.managedBy]! },
    },
    spec: networkPolicySpec(settings),
  };
}

function networkPolicySpec(settings: NetworkPolicySettings): V1NetworkPolicySpec {
  return {
    podSelector: { matchLabels: { ...SANDBOX_POD_LABELS } },
    policyTypes: ["Ingress", "Egress"],
    // No ingress rule with policyType Ingress: every inbound connection is refused.
    ingress: [],
    egress: [
      {
        // A podSelector without namespaceSelector means pods of the policy's own namespace:
        // the conversion service runs beside its sandboxes.
        to: [{ podSelector: { matchLabels: parseLabelSelector(settings.FOLIO_CONVERSION_POD_SELECTOR) } }],
        ports: [{ protocol: "TCP", port: settings.FOLIO_BROKER_PORT }],
      },
      {
        to: [
          {
            namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } },
            podSelector: { matchLabels: { "k8s-app": "kube-dns" } },
          },
        ],
        ports: [
          { protocol: "UDP", port: 53 },
          { protocol: "TCP", port: 53 },
        ],
      },
    ],
  };
}

/**
 * Whether a NetworkPolicy read from the API server still has the spec the
 * operator wants. Empty lists and absent ones are the same to the API server
 * (it may drop `ingress: []`), so both sides are normalized first.
 */
export function networkPolicyMatches(actual: { spec?: unknown } | undefined, wanted: V1NetworkPolicy): boolean {
  return canonical(actual?.spec) === canonical(wanted.spec);
}

function canonical(value: unknown): string {
  return JSON.stringify(normalize(value)) ?? "null";
}

function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.length ? value.map(normalize) : undefined;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = normalize((value as Record<string, unknown>)[key]);
      if (v !== undefined && !(typeof v === "object" && v !== null && Object.keys(v).length === 0 && key !== "podSelector")) out[key] = v;
    }
    return out;
  }
  return value;
}
