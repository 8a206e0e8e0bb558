/**
 * The Grafana dashboard (deploy/grafana/folio-dashboard.json) evaluated by a
 * real Prometheus against a real `folio dev`: Debian's `prometheus` binary
 * with a configuration and storage folder of this file's own, scraping folio
 * dev's metrics endpoint every second (folio dev serves every service's
 * registry, edge, extraction, conversion and worker, on its one
 * FOLIO_METRICS_PORT). The scrape adds the labels the chart's ServiceMonitor
 * adds: `job` (the metrics Service's name), `namespace` and `component`.
 *
 * folio dev gets a little of every kind of traffic: OCR of a PNG with the
 * local engine and with an upstream model (the fake OpenRouter upstream, a
 * test double), a chat completion, an office conversion (runsc sandboxes), a
 * durable job, usage reads, an upstream failure answered 502, and one
 * refusal of each kind (400, 401, 402, 403, 404, 429; the 402 and 429
 * accounts are made with `folio admin account create` before folio dev
 * starts, PGlite allowing one process). Once Prometheus has scraped it all,
 * every panel query runs through /api/v1/query: it must parse and return at
 * least one series, unless {@link expectedEmpty} lists it with the reason
 * folio dev cannot produce its series. A listed query that does return
 * series fails too, so the list stays true.
 *
 * Without the prometheus binary the file is skipped and says so.
 */
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { ConversionMetrics, EdgeMetrics } from "../internal/platform/metrics/index.ts";
import { OperatorMetrics } from "../internal/operator/metrics.ts";
import { PoolMetrics } from "../internal/sandbox/kubernetes/pool.ts";
import { FAKE_UPSTREAM_MODEL as UPSTREAM_MODEL, startFakeUpstream, type FakeUpstream } from "./fake-upstream.ts";
import { createAccountWithCli, ROOT, startFolio, startProcess, type FolioProcess } from "./folio-processes.ts";
import { call } from "./harness.ts";
import { freePort, ocrFixture } from "./support.ts";

const PROMETHEUS = process.env.FOLIO_TEST_PROMETHEUS ?? "prometheus";
const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

const havePrometheus = spawnSync(PROMETHEUS, ["--version"], { encoding: "utf8" }).status === 0;
if (!havePrometheus) console.warn("test/dashboards.prometheus.test.ts skipped: the prometheus binary is not installed (Debian package prometheus; scripts/ensure-deps.sh test installs it)");

/** The labels the scrape gives every series, as the chart's ServiceMonitor would (job: the metrics Service's name). */
const SCRAPE = { job: "folio-metrics", namespace: "folio-dev", component: "dev" };

/**
 * Values of the dashboard's variables. $namespace is the scrape's namespace
 * (the variable's own query must offer it, tested below). $__rate_interval is
 * Grafana's rate window, at least four scrape intervals; one minute holds the
 * whole traffic phase at a 1-second scrape interval, so the counters it
 * moved show a rate.
 */
const VARIABLES: Record<string, string> = { namespace: SCRAPE.namespace, __rate_interval: "1m" };

/**
 * Panel queries folio dev cannot give a series, keyed `<panel title> / <legend>`,
 * with the reason.
 */
const expectedEmpty: Record<string, string> = {
  "Redis errors / {{op}} per minute": "folio dev rate-limits in process: there is no Redis to fail",
  "Sandbox outcomes / {{phase}} {{reason}}": "operator-only metric: folio dev converts in runsc sandboxes, with no operator",
  "Conversion backlog / operator queue": "operator-only metric",
  "Operator / jobs created": "operator-only metric",
  "Operator / sandboxes deleted": "operator-only metric",
  "Operator / errors: {{kind}}": "operator-only metric",
  "Reconcile time p95 / p95": "operator-only metric",
  "Operator leader / leader": "operator-only metric",
  "Watch restarts (1h) / restarts": "operator-only metric",
  "Warm pool pods / {{pool}} {{state}}": "operator-only metric (warm pools exist only with the kubernetes sandbox backend)",
  "Hand-in latency / p50": "kubernetes sandbox backend only (warm pool hand-ins); folio dev uses runsc",
  "Hand-in latency / p99": "kubernetes sandbox backend only (warm pool hand-ins); folio dev uses runsc",
  "Cold fallbacks / fallback {{reason}}": "kubernetes sandbox backend only (warm pool fallbacks); folio dev uses runsc",
  "Cold fallbacks / warm hand-ins": "kubernetes sandbox backend only (warm pool hand-ins); folio dev uses runsc",
};

interface Target {
  expr?: string;
  legendFormat?: string;
  refId?: string;
}
interface Panel {
  title?: string;
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; query?: string | { query?: string } }[] };
}

const dashboard = JSON.parse(readFileSync(join(ROOT, "deploy", "grafana", "folio-dashboard.json"), "utf8")) as Dashboard;

/** Every panel query (rows' panels included), named `<panel title> / <legend or refId>`. */
function panelQueries(): { name: string; expr: string }[] {
  const out: { name: string; expr: string }[] = [];
  const walk = (panels: Panel[] | undefined) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) if (t.expr) out.push({ name: `${p.title} / ${t.legendFormat ?? t.refId}`, expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

/** `expr` with the dashboard's variables replaced; fails on a variable it does not know. */
function substitute(expr: string): string {
  const out = expr.replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g, (whole, braced: string | undefined, bare: string | undefined) => {
    const value = VARIABLES[(braced ?? bare)!];
    if (value === undefined) throw new Error(`unknown dashboard variable ${whole} in ${expr}`);
    return value;
  });
  return out;
}

let dataDir: string;
let upstream: FakeUpstream;
/** A webhook receiver: answers 200 to every delivery (its event types kept), for the Webhooks row. */
let receiver: Server;
const received: string[] = [];
let dev: FolioProcess | undefined;
let prometheus: FolioProcess | undefined;
let promUrl: string;
let metricsUrl: string;
const edge = { url: "" };

/** Prometheus' HTTP API: the JSON answer (status "success" or "error"). */
async function promApi<T>(path: string, params: Record<string, string> = {}): Promise<{ status: string; data: T; error?: string; errorType?: string }> {
  const res = await fetch(`${promUrl}${path}?${new URLSearchParams(params).toString()}`);
  return (await res.json()) as { status: string; data: T; error?: string; errorType?: string };
}
type Vector = { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
const query = (q: string) => promApi<Vector>("/api/v1/query", { query: q });

/** Sum of a counter's samples in folio dev's own /metrics text (all its label sets). */
async function scrapedTotal(metric: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(`${metric}{`) || line.startsWith(`${metric} `)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

describe.skipIf(!havePrometheus)("the Grafana dashboard against Prometheus scraping folio dev", () => {
  let devKey: string;
  let poorKey: string;
  let hurriedKey: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "folio-dashboards-"));
    upstream = await startFakeUpstream();
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        received.push((JSON.parse(body) as { type: string }).type);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const receiverPort = (receiver.address() as { port: number }).port;
    const [httpPort, metricsPort, promPort] = [await freePort(), await freePort(), await freePort()];
    edge.url = `http://127.0.0.1:${httpPort}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    promUrl = `http://127.0.0.1:${promPort}`;

    const env = {
      FOLIO_DATA_DIR: dataDir,
      FOLIO_HTTP_PORT: String(httpPort),
      FOLIO_METRICS_PORT: String(metricsPort),
      FOLIO_UPSTREAM_BASE_URL: upstream.baseUrl,
      FOLIO_UPSTREAM_API_KEY: upstream.apiKey,
      FOLIO_FETCH_ALLOW: `127.0.0.1:${receiverPort}`,
    };
    // PGlite allows one process: the accounts are made before folio dev opens the data folder.
    poorKey = createAccountWithCli(env, "poor@example.test", "--credits-cents", "0");
    hurriedKey = createAccountWithCli(env, "hurried@example.test", "--credits-cents", "0", "--requests-per-minute", "1");

    dev = await startFolio("dev", env, `${edge.url}/healthz`, 120_000);
    devKey = readFileSync(join(dataDir, "dev-admin-key"), "utf8").trim();

    const config = join(dataDir, "prometheus.yml");
    writeFileSync(
      config,
      stringify({
        global: { scrape_interval: "1s", scrape_timeout: "1s", evaluation_interval: "1s" },
        scrape_configs: [{ job_name: SCRAPE.job, metrics_path: "/metrics", static_configs: [{ targets: [`127.0.0.1:${metricsPort}`], labels: { namespace: SCRAPE.namespace, component: SCRAPE.component } }] }],
      }),
    );
    prometheus = await startProcess("prometheus", PROMETHEUS, [`--config.file=${config}`, `--storage.tsdb.path=${join(dataDir, "prometheus")}`, `--web.listen-address=127.0.0.1:${promPort}`, "--log.level=warn"], { cwd: dataDir }, `${promUrl}/-/ready`, 120_000);

    await sendTraffic(devKey, poorKey, hurriedKey, `http://127.0.0.1:${receiverPort}/hooks`);

    // Prometheus has it all once its latest sample of the request counter equals folio dev's own
    // count (scrapes of /metrics are not requests of the API), and a few scrapes later every new
    // series has the two samples a rate needs.
    const want = await scrapedTotal("folio_http_requests_total");
    await vi.waitFor(
      async () => {
        const got = await query(`sum(folio_http_requests_total{job="${SCRAPE.job}"})`);
        expect(Number(got.data.result[0]?.value[1])).toBe(want);
      },
      { timeout: 30_000, interval: 500 },
    );
    await new Promise((r) => setTimeout(r, 4_000));
  }, 420_000);

  afterAll(async () => {
    await prometheus?.stop();
    await dev?.stop();
    await upstream?.close();
    await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("scrapes folio dev's metrics endpoint with every service's registry in it", async () => {
    const targets = await promApi<{ activeTargets: { health: string; lastError: string; labels: Record<string, string> }[] }>("/api/v1/targets");
    expect(targets.data.activeTargets.map((t) => ({ health: t.health, lastError: t.lastError, job: t.labels.job }))).toEqual([{ health: "up", lastError: "", job: SCRAPE.job }]);
    const processes = await query(`count by (process) ({job="${SCRAPE.job}",process!=""})`);
    expect(processes.data.result.map((r) => r.metric.process).sort()).toEqual(["conversion", "edge", "extraction", "worker"]);
  });

  it("offers the scrape's namespace in the $namespace variable (its label_values query)", async () => {
    const variable = dashboard.templating.list.find((v) => v.name === "namespace")!;
    const q = typeof variable.query === "string" ? variable.query : variable.query!.query!;
    const m = /^label_values\((\w+), (\w+)\)$/.exec(q);
    expect(m, q).not.toBeNull();
    const values = await promApi<string[]>(`/api/v1/label/${m![2]}/values`, { "match[]": m![1]! });
    expect(values.data).toContain(SCRAPE.namespace);
  });

  it("lists as expected-empty only queries the dashboard has", () => {
    const names = new Set(panelQueries().map((q) => q.name));
    expect(Object.keys(expectedEmpty).filter((n) => !names.has(n))).toEqual([]);
    expect(names.size, "two queries of the dashboard share a panel title and legend").toBe(panelQueries().length);
  });

  // Prometheus cannot vouch for these names against folio dev: the registries that export them can.
  it("queries, where folio dev gives no series, only names and labels Folio registers (edge, operator, kubernetes backend)", () => {
    const conversion = new ConversionMetrics(() => ({ waiting: 0 }), false);
    new PoolMetrics(conversion);
    const labelsOf = new Map<string, Set<string>>();
    for (const registry of [new EdgeMetrics().registry, new OperatorMetrics(false).registry, conversion.registry]) {
      for (const m of registry.getMetricsAsArray() as unknown as { name: string; labelNames?: readonly string[]; constructor: { name: string } }[]) {
        const names = m.constructor.name === "Histogram" ? ["_bucket", "_sum", "_count"].map((x) => m.name + x) : [m.name];
        for (const n of names) labelsOf.set(n, new Set([...(m.labelNames ?? []), ...(n.endsWith("_bucket") ? ["le"] : [])]));
      }
    }
    const problems: string[] = [];
    for (const { name, expr } of panelQueries().filter((q) => expectedEmpty[q.name])) {
      const metrics = [...expr.matchAll(/\b(folio_\w+)\{([^}]*)\}/g)];
      const labels = new Set([...metrics.flatMap((m) => [...m[2]!.matchAll(/(\w+)\s*[=!]~?"/g)].map((l) => l[1]!)), ...[...expr.matchAll(/\bby \(([^)]*)\)/g)].flatMap((b) => b[1]!.split(",").map((l) => l.trim()))]);
      for (const [, metric] of metrics) if (!labelsOf.has(metric!)) problems.push(`${name}: ${metric} is not registered`);
      for (const l of labels) if (l !== "namespace" && !metrics.some(([, metric]) => labelsOf.get(metric!)?.has(l))) problems.push(`${name}: no metric of ${expr} has the label ${l}`);
    }
    expect(problems).toEqual([]);
  });

  it.each(panelQueries())("$name: parses and returns series (or is expected empty)", async ({ name, expr }) => {
    const q = substitute(expr);
    const got = await query(q);
    expect({ status: got.status, error: got.error }, q).toEqual({ status: "success", error: undefined });
    const series = got.data.result.length;
    if (expectedEmpty[name]) expect(series, `${q} is listed as empty (${expectedEmpty[name]}) but returned ${JSON.stringify(got.data.result)}`).toBe(0);
    else expect(series, `${q} returned no series`).toBeGreaterThan(0);
  });
});

/** A little of every kind of traffic; each answer is checked, so a missing series points at the dashboard, not at the traffic. */
async function sendTraffic(devKey: string, poorKey: string, hurriedKey: string, hookUrl: string): Promise<void> {
  const png = ocrFixture("english.png").toString("base64");
  const expectStatus = async (p: ReturnType<typeof call>, status: number, what: string) => {
    const r = await p;
    expect(r.status, `${what}: ${JSON.stringify(r.body).slice(0, 400)}`).toBe(status);
    return r;
  };
  await expectStatus(call(edge, "POST", "/v1/ocr", devKey, { base64: png, mime_type: "image/png", model: "local/tesseract" }), 200, "OCR with tesseract");
  await expectStatus(call(edge, "POST", "/v1/ocr", devKey, { base64: png, mime_type: "image/png", model: UPSTREAM_MODEL }), 200, "OCR with an upstream model");
  await expectStatus(call(edge, "POST", "/v1/chat/completions", devKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: "Say hello." }] }), 200, "chat completion");
  const docx = readFileSync(join(ROOT, "test", "fixtures", "convert", "two-pages.docx")).toString("base64");
  await expectStatus(call(edge, "POST", "/v1/convert", devKey, { file: docx, filename: "two-pages.docx", mimeType: DOCX }), 200, "office conversion");
  // A webhook endpoint before the job: its events are delivered to the receiver.
  await expectStatus(call(edge, "POST", "/v1/webhook-endpoints", devKey, { url: hookUrl }), 201, "webhook endpoint");
  const job = await expectStatus(call(edge, "POST", "/v1/ocr/jobs", devKey, { base64: png, model: "local/tesseract" }), 202, "durable job");
  await vi.waitFor(async () => expect((await call(edge, "GET", `/v1/ocr/jobs/${job.body.id}`, devKey)).body.status).toBe("succeeded"), { timeout: 120_000, interval: 250 });
  await vi.waitFor(() => expect(received).toContain("ocr.job.succeeded"), { timeout: 30_000, interval: 100 });
  await expectStatus(call(edge, "GET", "/v1/usage", devKey), 200, "usage list");
  await expectStatus(call(edge, "GET", "/v1/usage/summary", devKey), 200, "usage summary");
  await expectStatus(call(edge, "GET", "/v1/account/balance", devKey), 200, "balance");
  await expectStatus(call(edge, "GET", "/v1/models", devKey), 200, "models");

  // An upstream that fails every attempt: a 5xx of Folio's own.
  upstream.script(UPSTREAM_MODEL, { kind: "status", status: 500 }, { times: 20 });
  const failed = await call(edge, "POST", "/v1/chat/completions", devKey, { model: UPSTREAM_MODEL, messages: [{ role: "user", content: "Say hello." }] });
  expect(failed.status, JSON.stringify(failed.body)).toBeGreaterThanOrEqual(500);
  upstream.reset();

  // One refusal of each kind.
  await expectStatus(call(edge, "POST", "/v1/ocr", devKey, { base64: 42 }), 400, "invalid body");
  await expectStatus(call(edge, "GET", "/v1/account/balance"), 401, "no key");
  await expectStatus(call(edge, "POST", "/v1/ocr", poorKey, { base64: png, mime_type: "image/png", model: "local/tesseract" }), 402, "no credit");
  const readOnly = await expectStatus(call(edge, "POST", "/v1/api-keys", devKey, { name: "read only", permissions: ["models:read"] }), 200, "read-only key");
  await expectStatus(call(edge, "POST", "/v1/ocr", readOnly.body.key as string, { base64: png, mime_type: "image/png", model: "local/tesseract" }), 403, "missing permission");
  await expectStatus(call(edge, "GET", "/v1/ocr/jobs/job_doesnotexist", devKey), 404, "unknown job");
  await expectStatus(call(edge, "GET", "/v1/account/balance", hurriedKey), 200, "first request of a one-a-minute key");
  await expectStatus(call(edge, "GET", "/v1/account/balance", hurriedKey), 429, "second request of a one-a-minute key");
}
