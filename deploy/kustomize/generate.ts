/**
 * The kustomize base is the Helm chart rendered with its default values, so
 * the two cannot drift: this script writes `base/` (and the monitoring
 * component, the chart's ServiceMonitor and PrometheusRule, and the
 * stable-broker-names component, the chart's `conversion.stableBrokerNames`)
 * from `helm template`, minus what only Helm understands (its labels, hook and
 * checksum annotations) and minus namespaces (kustomize sets them); the
 * migration hook Job becomes the edge's init container (migrateBeforeEdge). It also
 * copies the ConversionSandbox CRD that scripts/gen-crd.ts generates
 * (deploy/crds) into the chart's crds/ and the base. test/deploy.*.test.ts
 * fails when any of these files differs from a fresh run.
 *
 *   npx tsx deploy/kustomize/generate.ts           rewrite the generated files
 *   npx tsx deploy/kustomize/generate.ts --check   exit 1 when they are out of date
 *
 * helm and kubectl come from scripts/k8s-tools.sh (.tools/k8s/bin). The
 * functions below are also what the test renders the chart with.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { fileURLToPath } from "node:url";
import { parseAllDocuments, stringify } from "yaml";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CHART_DIR = join(ROOT, "deploy", "helm", "folio");
export const KUSTOMIZE_DIR = join(ROOT, "deploy", "kustomize");
/** Release name and namespace the base is rendered with (the base's kustomization sets the namespace again). */
export const BASE_RELEASE = "folio";
export const BASE_NAMESPACE = "folio";
/** Lets `helm template` render the Prometheus Operator's objects as if the cluster served them. */
export const MONITORING_API_VERSIONS = ["monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"];

/** A Kubernetes object as rendered (only the fields every object has are typed). */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
}

export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`${command} failed: ${stderr.trim()}`);
    this.name = "CommandError";
  }
}

let tools: { helm: string; kubectl: string; env: NodeJS.ProcessEnv } | undefined;

/** helm and kubectl from .tools/k8s/bin (installed by scripts/k8s-tools.sh on first use). */
export function k8sTools(): { helm: string; kubectl: string; env: NodeJS.ProcessEnv } {
  if (tools) return tools;
  const bin = execFileSync("bash", [join(ROOT, "scripts", "k8s-tools.sh")], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
  // helm keeps caches and configuration under HOME: kept inside .tools so nothing outside the project is touched.
  const home = join(ROOT, ".tools", "helm");
  tools = {
    helm: join(bin, "helm"),
    kubectl: join(bin, "kubectl"),
    env: { ...process.env, HELM_CACHE_HOME: join(home, "cache"), HELM_CONFIG_HOME: join(home, "config"), HELM_DATA_HOME: join(home, "data") },
  };
  return tools;
}

function run(binary: "helm" | "kubectl", args: string[]): string {
  const t = k8sTools();
  try {
    return execFileSync(t[binary], args, { cwd: ROOT, env: t.env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new CommandError(`${binary} ${args.join(" ")}`, e.stderr || e.message);
  }
}

export const helm = (args: string[]): string => run("helm", args);
export const kubectl = (args: string[]): string => run("kubectl", args);

/** Every non-empty document of a multi-document YAML text. */
export function parseObjects(text: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) throw new Error(`unparsable YAML: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as K8sObject | null;
    if (value) out.push(value);
  }
  return out;
}

export interface RenderOptions {
  /** Values files, relative to the repository root. */
  values?: string[];
  /** --set pairs. */
  set?: string[];
  apiVersions?: string[];
  release?: string;
  namespace?: string;
  includeCrds?: boolean;
}

/** The arguments of `helm template` for `opts`. */
export function templateArgs(opts: RenderOptions = {}): string[] {
  const args = ["template", opts.release ?? BASE_RELEASE, CHART_DIR, "--namespace", opts.namespace ?? BASE_NAMESPACE];
  for (const f of opts.values ?? []) args.push("--values", join(ROOT, f));
  for (const s of opts.set ?? []) args.push("--set", s);
  for (const v of opts.apiVersions ?? []) args.push("--api-versions", v);
  if (opts.includeCrds) args.push("--include-crds");
  return args;
}

/** `helm template` of the chart, parsed. */
export function renderChart(opts: RenderOptions = {}): K8sObject[] {
  return parseObjects(helm(templateArgs(opts)));
}

const HELM_ONLY_LABELS = ["helm.sh/chart"];
const HELM_ONLY_ANNOTATION = /^(helm\.sh\/|checksum\/)/;

function stripMetadata(meta: { labels?: Record<string, string>; annotations?: Record<string, string> } | undefined): void {
  if (!meta) return;
  if (meta.labels) {
    for (const key of HELM_ONLY_LABELS) delete meta.labels[key];
    // Only Helm's own value: sandbox selectors carry managed-by=folio-operator, which must stay.
    if (meta.labels["app.kubernetes.io/managed-by"] === "Helm") delete meta.labels["app.kubernetes.io/managed-by"];
  }
  if (meta.annotations) {
    for (const key of Object.keys(meta.annotations)) if (HELM_ONLY_ANNOTATION.test(key)) delete meta.annotations[key];
    if (Object.keys(meta.annotations).length === 0) delete meta.annotations;
  }
}

/**
 * An object of `helm template` as the kustomize base holds it: Helm's labels,
 * hook and checksum annotations and the namespace removed (a copy).
 */
export function forKustomize(obj: K8sObject): K8sObject {
  const copy = structuredClone(obj);
  delete copy.metadata.namespace;
  stripMetadata(copy.metadata);
  const template = (copy.spec as { template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> } } } | undefined)?.template;
  if (template?.metadata) {
    stripMetadata(template.metadata);
    if (template.metadata.annotations === undefined) delete template.metadata.annotations;
  }
  return copy;
}

const KIND_ORDER = [
  "CustomResourceDefinition",
  "RuntimeClass",
  "ServiceAccount",
  "Secret",
  "ConfigMap",
  "Role",
  "RoleBinding",
  "Service",
  "Deployment",
  "StatefulSet",
  "Job",
  "HorizontalPodAutoscaler",
  "PodDisruptionBudget",
  "NetworkPolicy",
  "Ingress",
  "ServiceMonitor",
  "PrometheusRule",
];

/** Objects in a stable order: by kind (dependencies first), then name. */
export function sortObjects(objects: K8sObject[]): K8sObject[] {
  const rank = (k: string) => (KIND_ORDER.includes(k) ? KIND_ORDER.indexOf(k) : KIND_ORDER.length);
  return [...objects].sort((a, b) => rank(a.kind) - rank(b.kind) || a.kind.localeCompare(b.kind) || a.metadata.name.localeCompare(b.metadata.name));
}

function toYamlStream(header: string, objects: K8sObject[]): string {
  return header + objects.map((o) => stringify(o, { lineWidth: 0 })).join("---\n");
}

interface PodSpec {
  containers: { name: string }[];
  initContainers?: unknown[];
  volumes?: { name: string }[];
}
const podSpecOf = (o: K8sObject) => (o.spec as { template: { spec: PodSpec } }).template.spec;

/**
 * kustomize has no hooks, so the chart's pre-install/pre-upgrade `migrate`
 * Job becomes an init container of the edge: `folio migrate` (idempotent,
 * one replica at a time behind the migrator's lock) runs before each edge
 * serves, and a new image's migration runs before its edges do (a Job
 * could not: its template cannot change, and it would run beside them).
 */
export function migrateBeforeEdge(objects: K8sObject[]): K8sObject[] {
  const job = objects.find((o) => o.kind === "Job" && o.metadata.labels?.["app.kubernetes.io/component"] === "migrate");
  const edge = objects.find((o) => o.kind === "Deployment" && o.metadata.labels?.["app.kubernetes.io/component"] === "edge");
  if (!job || !edge) throw new Error("the chart rendered no migrate Job or no edge Deployment");
  const migrate = podSpecOf(job).containers[0]!;
  const edgePod = podSpecOf(edge);
  const jobVolumes = new Set((podSpecOf(job).volumes ?? []).map((v) => v.name));
  const edgeVolumes = new Set((edgePod.volumes ?? []).map((v) => v.name));
  const missing = [...jobVolumes].filter((v) => !edgeVolumes.has(v));
  if (missing.length) throw new Error(`the migrate container mounts volumes the edge pod lacks: ${missing.join(", ")}`);
  edgePod.initContainers = [...(edgePod.initContainers ?? []), migrate];
  return objects.filter((o) => o !== job);
}

const CRD_SOURCE = join("deploy", "crds");
const GENERATED = "# Generated by deploy/kustomize/generate.ts from `helm template` of deploy/helm/folio: do not edit by hand.\n";
const CRD_FILES = ["conversionsandboxes.folio.dev.yaml", "conversionsandboxpools.folio.dev.yaml"];

/** Every generated file, relative to the repository root, with its content. */
export function generatedFiles(): Map<string, string> {
  const files = new Map<string, string>();
  // The CRDs byte for byte as scripts/gen-crd.ts writes them: Helm installs them from crds/, kustomize from the base.
  for (const file of CRD_FILES) {
    const crd = readFileSync(join(ROOT, CRD_SOURCE, file), "utf8");
    files.set(join("deploy", "helm", "folio", "crds", file), crd);
    files.set(join("deploy", "kustomize", "base", "crds", file), crd);
  }
  const rendered = renderChart().map(forKustomize);
  const defaults = sortObjects(migrateBeforeEdge(rendered));
  files.set(
    "deploy/kustomize/base/kustomization.yaml",
    GENERATED +
      "# The chart's objects with its default values (deploy/helm/folio/values.yaml); overlays change them.\n" +
      stringify(
        {
          apiVersion: "kustomize.config.k8s.io/v1beta1",
          kind: "Kustomization",
          namespace: BASE_NAMESPACE,
          resources: [...CRD_FILES.map((f) => `crds/${f}`), "folio.yaml"],
        },
        { lineWidth: 0 },
      ),
  );
  files.set("deploy/kustomize/base/folio.yaml", toYamlStream(GENERATED, defaults));

  const defaultKeys = new Set(rendered.map((o) => `${o.kind}/${o.metadata.name}`));
  const monitoring = sortObjects(
    renderChart({ apiVersions: MONITORING_API_VERSIONS })
      .map(forKustomize)
      .filter((o) => !defaultKeys.has(`${o.kind}/${o.metadata.name}`)),
  );
  files.set(
    "deploy/kustomize/components/monitoring/kustomization.yaml",
    GENERATED +
      "# The ServiceMonitor and PrometheusRule the chart renders when the Prometheus Operator's CRDs exist.\n" +
      stringify({ apiVersion: "kustomize.config.k8s.io/v1alpha1", kind: "Component", resources: ["monitoring.yaml"] }, { lineWidth: 0 }),
  );
  files.set("deploy/kustomize/components/monitoring/monitoring.yaml", toYamlStream(GENERATED, monitoring));

  const stable = variantComponent(
    defaults,
    migrateBeforeEdge(renderChart({ set: STABLE_BROKER_NAMES_SET }).map(forKustomize)),
    "# The chart with conversion.stableBrokerNames=true: the conversion service as a StatefulSet behind a headless\n" +
      "# broker Service, so each replica's broker address is a stable DNS name (docs/operator.md, \"Broker addressing\").\n",
    "stable-broker-names.yaml",
  );
  files.set("deploy/kustomize/components/stable-broker-names/kustomization.yaml", stable.kustomization);
  files.set("deploy/kustomize/components/stable-broker-names/stable-broker-names.yaml", stable.resources);
  return files;
}

/** The chart's values the stable-broker-names component stands for. */
export const STABLE_BROKER_NAMES_SET = ["conversion.stableBrokerNames=true"];

type JsonPatch = { op: "replace" | "add" | "remove"; path: string; value?: unknown }[];

/** JSON patch operations turning `from` into `to`: objects compared key by key, anything else replaced whole. */
function jsonPatch(from: unknown, to: unknown, path = ""): JsonPatch {
  const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (isDeepStrictEqual(from, to)) return [];
  if (!isMap(from) || !isMap(to)) return [{ op: "replace", path, value: to }];
  const at = (key: string) => `${path}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`;
  return [
    ...Object.keys(from)
      .filter((k) => !(k in to))
      .map((k) => ({ op: "remove" as const, path: at(k) })),
    ...Object.keys(to).flatMap((k) => (k in from ? jsonPatch(from[k], to[k], at(k)) : [{ op: "add" as const, path: at(k), value: to[k] }])),
  ];
}

/**
 * A kustomize Component that turns the base (`defaults`) into the chart as
 * `variant` renders it: the objects only the variant has as resources, the
 * ones only the base has deleted, and JSON patches for the ones that differ.
 * Returns the kustomization and its resources' YAML.
 */
export function variantComponent(defaults: K8sObject[], variant: K8sObject[], header: string, resourcesFile: string): { kustomization: string; resources: string } {
  const key = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
  const base = new Map(defaults.map((o) => [key(o), o]));
  const wanted = new Set(variant.map(key));
  const patches: { target?: { kind: string; name: string }; patch: string }[] = [];
  for (const o of defaults.filter((d) => !wanted.has(key(d)))) {
    patches.push({ patch: stringify({ $patch: "delete", apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name } }, { lineWidth: 0 }).trimEnd() });
  }
  for (const o of variant) {
    const was = base.get(key(o));
    const ops = was ? jsonPatch(was, o) : [];
    if (ops.length) patches.push({ target: { kind: o.kind, name: o.metadata.name }, patch: stringify(ops, { lineWidth: 0 }).trimEnd() });
  }
  const added = sortObjects(variant.filter((o) => !base.has(key(o))));
  const kustomization = stringify({ apiVersion: "kustomize.config.k8s.io/v1alpha1", kind: "Component", resources: [resourcesFile], patches }, { lineWidth: 0 });
  return { kustomization: GENERATED + header + kustomization, resources: toYamlStream(GENERATED, added) };
}

/** Paths of generated files whose content on disk differs from `files`. */
export function staleFiles(files: Map<string, string>): string[] {
  const stale: string[] = [];
  for (const [rel, content] of files) {
    let current: string | undefined;
    try {
      current = readFileSync(join(ROOT, rel), "utf8");
    } catch {
      current = undefined;
    }
    if (current !== content) stale.push(rel);
  }
  return stale;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = generatedFiles();
  if (process.argv.includes("--check")) {
    const stale = staleFiles(files);
    if (stale.length) {
      console.error(`out of date: ${stale.join(", ")}; run \`npx tsx deploy/kustomize/generate.ts\``);
      process.exit(1);
    }
    console.log("deploy/kustomize and the chart's CRD are up to date");
  } else {
    for (const [rel, content] of files) {
      mkdirSync(dirname(join(ROOT, rel)), { recursive: true });
      writeFileSync(join(ROOT, rel), content);
      console.log(`wrote ${rel}`);
    }
  }
}
