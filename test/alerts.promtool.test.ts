/**
 * The alert rules of the Helm chart, evaluated by Prometheus' own promtool:
 * the PrometheusRule `helm template` renders (default values, and every value
 * set of deploy/helm/folio/ci) has its `spec.groups` written to a plain rules
 * file, which `promtool check rules` must accept, and the unit tests in
 * test/fixtures/promtool/ (`promtool test rules`) must pass against it.
 *
 * The fixtures are held to two promises: every alert of the chart has a test
 * where it fires (labels and annotations as promtool compares them) and one
 * where it stays quiet; and their input series use only metric names, label
 * names and `process` values that Folio's metrics classes register, so the
 * rules are shown to match what Folio really exports. Labels a scrape adds
 * (job, namespace, pod, component, ...) are the ServiceMonitor's.
 *
 * promtool is Debian's `prometheus` package (scripts/ensure-deps.sh test);
 * without it the file is skipped and says so.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify } from "yaml";
import { CHART_DIR, MONITORING_API_VERSIONS, renderChart, type RenderOptions } from "../deploy/kustomize/generate.ts";
import { ConversionMetrics, EdgeMetrics, ExtractionMetrics, WorkerMetrics, type Metrics } from "../internal/platform/metrics/index.ts";
import { OperatorMetrics } from "../internal/operator/metrics.ts";
import { PoolMetrics } from "../internal/sandbox/kubernetes/pool.ts";

const FIXTURES = fileURLToPath(new URL("./fixtures/promtool/", import.meta.url));
/** The name the fixtures' `rule_files` give the rendered rules (beside them in a temporary folder). */
const RULES_FILE = "folio-rules.yaml";

const promtool = spawnSync("promtool", ["--version"], { encoding: "utf8" });
const havePromtool = promtool.status === 0;
if (!havePromtool) console.warn("test/alerts.promtool.test.ts skipped: promtool is not installed (Debian package prometheus; scripts/ensure-deps.sh test installs it)");

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}
interface RuleGroup {
  name: string;
  rules: Rule[];
}

/** The rule groups of the PrometheusRule the chart renders with `opts` (the Prometheus Operator's kinds forced on). */
function renderedGroups(opts: RenderOptions = {}): RuleGroup[] {
  const objects = renderChart({ ...opts, apiVersions: MONITORING_API_VERSIONS });
  const rule = objects.find((o) => o.kind === "PrometheusRule");
  if (!rule) throw new Error(`the chart rendered no PrometheusRule with ${JSON.stringify(opts)}`);
  return (rule.spec as { groups: RuleGroup[] }).groups;
}

function run(args: string[], cwd: string): { status: number | null; output: string } {
  const r = spawnSync("promtool", args, { cwd, encoding: "utf8", timeout: 60_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

interface AlertTest {
  eval_time: string;
  alertname: string;
  exp_alerts?: { exp_labels?: Record<string, string>; exp_annotations?: Record<string, string> }[];
}
interface UnitTestFile {
  rule_files: string[];
  tests: { input_series: { series: string; values: string }[]; alert_rule_test?: AlertTest[] }[];
}

const fixtureFiles = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".test.yaml"))
  .sort();
const fixtures = fixtureFiles.map((file) => ({ file, doc: parseYaml(readFileSync(join(FIXTURES, file), "utf8")) as UnitTestFile }));

/** A series selector of promtool's input notation: `name{a="x",b="y"}`. */
function parseSeries(text: string): { name: string; labels: Record<string, string> } {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$/.exec(text.trim());
  if (!m) throw new Error(`not a series: ${text}`);
  const labels: Record<string, string> = {};
  for (const pair of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
  return { name: m[1]!, labels };
}

/**
 * What each Folio process registers: sample name (histograms as _bucket,
 * _sum, _count) to its label names and the processes that export it.
 */
function registeredSeries(): Map<string, { labels: Set<string>; processes: Set<string> }> {
  const conversionWithPool = new ConversionMetrics(() => ({ waiting: 0 }), false);
  new PoolMetrics(conversionWithPool);
  const all: [string, Metrics][] = [
    ["edge", new EdgeMetrics()],
    ["extraction", new ExtractionMetrics(() => ({ ageSeconds: 1, stale: false, models: [] }))],
    ["conversion", new ConversionMetrics(() => ({ waiting: 0 }))],
    // The kubernetes backend's warm-pool metrics live in the conversion process's registry.
    ["conversion", conversionWithPool],
    ["operator", new OperatorMetrics()],
    ["worker", new WorkerMetrics(() => Promise.resolve({ jobs: { queued: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 }, queuedPages: 0, oldestQueuedSeconds: 0 }), () => Promise.resolve({ pending: { ready: 0, attempting: 0, waiting: 0 }, oldestReadySeconds: 0, endpoints: { healthy: 0, failing: 0, disabled: 0 } }))],
  ];
  const out = new Map<string, { labels: Set<string>; processes: Set<string> }>();
  for (const [process, m] of all) {
    for (const metric of m.registry.getMetricsAsArray() as unknown as { name: string; labelNames?: readonly string[]; constructor: { name: string } }[]) {
      const histogram = metric.constructor.name === "Histogram";
      const names = histogram ? ["_bucket", "_sum", "_count"].map((s) => metric.name + s) : [metric.name];
      for (const name of names) {
        const entry = out.get(name) ?? { labels: new Set(["process"]), processes: new Set() };
        for (const l of metric.labelNames ?? []) entry.labels.add(l);
        if (name.endsWith("_bucket")) entry.labels.add("le");
        entry.processes.add(process);
        out.set(name, entry);
      }
    }
  }
  return out;
}

/**
 * Labels Prometheus adds to a Folio series scraped through the chart's
 * ServiceMonitor: the target's (job, instance, namespace, service, endpoint,
 * pod, container) and `component`, relabelled from the pod's label.
 */
const SCRAPE_LABELS = new Set(["job", "instance", "namespace", "service", "endpoint", "pod", "container", "component"]);

describe.skipIf(!havePromtool)("the chart's alert rules under promtool", () => {
  let dir: string;
  let groups: RuleGroup[];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "folio-promtool-"));
    groups = renderedGroups();
    writeFileSync(join(dir, RULES_FILE), stringify({ groups }));
    for (const f of fixtureFiles) copyFileSync(join(FIXTURES, f), join(dir, f));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const valueSets = [
    { name: "the default values", opts: {} },
    // The value sets that keep the PrometheusRule (minimal-values.yaml turns it off).
    ...readdirSync(join(CHART_DIR, "ci"))
      .filter((f) => f.endsWith("-values.yaml"))
      .filter((f) => (parseYaml(readFileSync(join(CHART_DIR, "ci", f), "utf8")) as { metrics?: { prometheusRule?: { enabled?: boolean } } }).metrics?.prometheusRule?.enabled !== false)
      .sort()
      .map((f) => ({ name: `ci/${f}`, opts: { values: [`deploy/helm/folio/ci/${f}`] } })),
    { name: "no warm pool and no workers", opts: { set: ["sandboxPool.enabled=false", "worker.enabled=false"] } },
  ];

  it.each(valueSets)("promtool check rules accepts every rule rendered with $name", ({ opts }) => {
    const rendered = renderedGroups(opts);
    const count = rendered.reduce((n, g) => n + g.rules.length, 0);
    const own = mkdtempSync(join(tmpdir(), "folio-promtool-check-"));
    try {
      writeFileSync(join(own, RULES_FILE), stringify({ groups: rendered }));
      const r = run(["check", "rules", RULES_FILE], own);
      expect(r.status, r.output).toBe(0);
      expect(r.output).toContain(`SUCCESS: ${count} rules found`);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });

  it.each(fixtureFiles)("promtool test rules passes %s against the rendered rules", (file) => {
    const r = run(["test", "rules", file], dir);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toContain("SUCCESS");
    // promtool only warns when rule_files matches nothing; the tests must have read the chart's rules.
    expect(r.output).not.toContain("no file match");
  });

  it("has a test where each alert of the chart fires and one where it stays quiet", () => {
    const alerts = groups.flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : []))).sort();
    expect(alerts.length, alerts.join(", ")).toBeGreaterThanOrEqual(12);
    const fires = new Set<string>();
    const quiet = new Set<string>();
    for (const { file, doc } of fixtures) {
      expect(doc.rule_files, file).toEqual([RULES_FILE]);
      for (const t of doc.tests) {
        for (const a of t.alert_rule_test ?? []) (a.exp_alerts?.length ? fires : quiet).add(a.alertname);
      }
    }
    expect({ fires: alerts.filter((a) => !fires.has(a)), quiet: alerts.filter((a) => !quiet.has(a)) }).toEqual({ fires: [], quiet: [] });
    // A test of an alert the chart does not render would pass vacuously.
    expect([...new Set([...fires, ...quiet])].filter((a) => !alerts.includes(a))).toEqual([]);
  });

  it("feeds the rules only series Folio exports, with the labels it registers", () => {
    const registered = registeredSeries();
    const problems: string[] = [];
    for (const { file, doc } of fixtures) {
      for (const input of doc.tests.flatMap((t) => t.input_series)) {
        const { name, labels } = parseSeries(input.series);
        const where = `${file}: ${input.series}`;
        if (name === "up") {
          for (const l of Object.keys(labels)) if (!SCRAPE_LABELS.has(l)) problems.push(`${where}: up has no label ${l}`);
          continue;
        }
        const metric = registered.get(name);
        if (!metric) {
          problems.push(`${where}: no Folio process registers ${name}`);
          continue;
        }
        for (const l of Object.keys(labels)) if (!metric.labels.has(l) && !SCRAPE_LABELS.has(l)) problems.push(`${where}: ${name} has no label ${l}`);
        if (!labels.process || !metric.processes.has(labels.process)) problems.push(`${where}: process="${labels.process}", but ${name} comes from ${[...metric.processes].join(", ")}`);
        if (labels.job !== "folio-metrics") problems.push(`${where}: job is not the chart's metrics Service (folio-metrics)`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("fails a fixture whose alert does not fire as expected (promtool's failures reach the test)", () => {
    const broken = join(dir, "broken.test.yaml");
    writeFileSync(
      broken,
      stringify({
        rule_files: [RULES_FILE],
        evaluation_interval: "1m",
        tests: [
          {
            interval: "1m",
            input_series: [{ series: 'folio_catalog_stale{job="folio-metrics",process="extraction"}', values: "0x30" }],
            alert_rule_test: [{ eval_time: "30m", alertname: "FolioCatalogStale", exp_alerts: [{ exp_labels: { severity: "warning" } }] }],
          },
        ],
      }),
    );
    const r = run(["test", "rules", "broken.test.yaml"], dir);
    expect(r.status, r.output).not.toBe(0);
    expect(r.output).toContain("FolioCatalogStale");
  });
});
