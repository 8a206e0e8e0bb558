/**
 * The built images, run for real (issue 24 part 2): scripts/build-images.sh
 * builds both images (seconds when nothing changed), then podman runs the
 * service image as the Helm chart runs it: the chart is rendered (`helm
 * template`) and each container gets its args, its environment (secrets and
 * field references filled in), its user, a read-only root file system with
 * a writable /tmp, no capabilities and no privilege escalation.
 *
 * - `folio migrate` migrates an empty database of its own;
 * - edge, extraction, conversion and the operator run as four containers
 *   talking gRPC, against the host's Postgres and Redis;
 * - conversion uses the kubernetes backend against the fake API server
 *   (test/fake-kube-api.ts, in this process): it creates a ConversionSandbox,
 *   the operator container makes its Job, the fake's Job controller its Pod,
 *   and the kubelet below runs that pod's container from the sandbox image
 *   under runsc, with the pod's environment (FOLIO_BROKER_ADDRESS,
 *   FOLIO_BROKER_TOKEN), user, read-only root and in-memory /tmp; the sandbox
 *   fetches the document from the conversion container's broker and returns
 *   the pages there.
 *
 * What it does not prove (docs/operations-images.md, "Run for real"):
 * a real API server and kubelet, the RuntimeClass, the NetworkPolicy, CPU and
 * memory limits, Services and DNS (every process is on the host's network:
 * `podman run` works here only with runsc and host networking, so each
 * listener gets a free loopback port instead of the chart's fixed ones), and
 * the sandbox pool (rendered with sandboxPool.enabled=false: one sandbox a
 * document).
 *
 * Needs root, buildah, podman and runsc (scripts/ensure-deps.sh test);
 * skipped with the reason printed otherwise.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, k8sTools, renderChart, type K8sObject } from "../deploy/kustomize/generate.ts";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { RedisRateLimiter } from "../internal/ratelimit/index.ts";
import { startFakeKubeApi, plainHttpKubeConfig, type FakeKubeApi, type KubeObject } from "./fake-kube-api.ts";
import { call, privateDatabase, redisUrl } from "./harness.ts";
import { expectCerBelow, freePort, ocrFixture, ocrTruth } from "./support.ts";
import { cer } from "./cer.ts";

const has = (tool: string) => spawnSync(tool, ["--version"], { stdio: "ignore" }).status === 0;
const missing = ["buildah", "podman", "runsc"].filter((t) => !has(t));
const skipReason =
  missing.length > 0
    ? `${missing.join(", ")} missing (scripts/ensure-deps.sh test installs them)`
    : process.getuid?.() !== 0
      ? "needs root (rootful podman and runsc)"
      : undefined;
if (skipReason) console.warn(`images.podman.test.ts skipped: ${skipReason}`);

/** Every container this file starts carries this label, and the pid of the run that started it. */
const LABEL = "dev.folio.test=images";
const PREFIX = `folio-images-${process.pid}`;
const NAMESPACE = "folio";
const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

/** podman with the only setup that runs containers here: gVisor with the host's network (crun cannot set rlimits). */
const RUNTIME = ["--runtime=runsc", "--runtime-flag", "network=host", "--network", "host"];

function podman(args: string[], timeoutMs = 120_000): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync("podman", args, { encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}
const logsOf = (name: string) => {
  const r = podman(["logs", "--tail", "40", name]);
  return `--- podman logs ${name} (last 40 lines)\n${r.stdout}${r.stderr}`;
};

/** Containers of earlier runs whose process is gone (a killed run leaves them): removed. */
function removeLeftovers(): void {
  const r = podman(["ps", "-a", "--filter", `label=${LABEL}`, "--format", '{{.Names}} {{index .Labels "dev.folio.test.pid"}}']);
  for (const line of r.stdout.split("\n").filter(Boolean)) {
    const [name, pid] = line.split(" ");
    const alive = (() => {
      try {
        process.kill(Number(pid), 0);
        return true;
      } catch {
        return false;
      }
    })();
    if (!alive && name) podman(["rm", "-f", "-t", "0", name]);
  }
}

type Obj = Record<string, unknown>;
interface EnvVar { name: string; value?: string; valueFrom?: { secretKeyRef?: { key: string; optional?: boolean }; fieldRef?: { fieldPath: string } } }
interface Container { name: string; args?: string[]; command?: string[]; env?: EnvVar[]; securityContext?: Obj; image?: string }
interface PodSpec { containers: Container[]; securityContext?: { runAsUser?: number; runAsGroup?: number }; volumes?: Obj[] }

/** The pod template of the chart's object `kind`/`name`. */
function podSpecOf(objects: K8sObject[], kind: string, name: string): PodSpec {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`the chart renders no ${kind} ${name}: ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(", ")}`);
  const spec = (o as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
  return spec;
}

/**
 * A container's environment as the kubelet would give it: secretKeyRef from
 * `secrets` (an optional one absent is left out), fieldRef from `fields`,
 * `$(VAR)` expanded from the variables before it.
 */
function resolveEnv(env: EnvVar[], secrets: Record<string, string>, fields: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of env) {
    let value: string | undefined;
    if (e.value !== undefined) value = e.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string) => out[v] ?? m);
    else if (e.valueFrom?.secretKeyRef) {
      value = secrets[e.valueFrom.secretKeyRef.key];
      if (value === undefined && !e.valueFrom.secretKeyRef.optional) throw new Error(`no secret value for ${e.name} (key ${e.valueFrom.secretKeyRef.key})`);
    } else if (e.valueFrom?.fieldRef) {
      value = fields[e.valueFrom.fieldRef.fieldPath];
      if (value === undefined) throw new Error(`no field ${e.valueFrom.fieldRef.fieldPath} for ${e.name}`);
    }
    if (value !== undefined) out[e.name] = value;
  }
  return out;
}

/**
 * `podman run` arguments for a pod's first container as the kubelet runs it:
 * the pod's user, the container's security context (read-only root, no
 * capabilities, no privilege escalation), the pod's tmp volume at /tmp.
 */
function securityArgs(pod: PodSpec, container: Container, tmpSize: string): string[] {
  const sc = (container.securityContext ?? {}) as { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] }; runAsUser?: number; runAsGroup?: number; privileged?: boolean };
  const user = sc.runAsUser ?? pod.securityContext?.runAsUser;
  const group = sc.runAsGroup ?? pod.securityContext?.runAsGroup ?? user;
  const args: string[] = [];
  if (user !== undefined) args.push("--user", `${user}:${group}`);
  if (sc.readOnlyRootFilesystem) args.push("--read-only", "--read-only-tmpfs=false");
  if (sc.allowPrivilegeEscalation === false) args.push("--security-opt", "no-new-privileges");
  for (const cap of sc.capabilities?.drop ?? []) args.push("--cap-drop", cap);
  if (sc.privileged) throw new Error(`${container.name} asks to be privileged`);
  // Every Folio pod mounts an emptyDir at /tmp (the only writable place).
  args.push("--tmpfs", `/tmp:rw,size=${tmpSize},mode=1777`);
  return args;
}

/** Kubernetes quantities the pods use (768Mi, 1Gi) as tmpfs sizes. */
const tmpfsSize = (quantity: string | undefined, fallback: string): string => {
  const m = /^(\d+)(Mi|Gi)?$/.exec(quantity ?? "");
  return m ? `${m[1]}${m[2] === "Gi" ? "g" : "m"}` : fallback;
};

const envArgs = (env: Record<string, string>) => Object.entries(env).flatMap(([k, v]) => ["--env", `${k}=${v}`]);

interface PodmanRun {
  pod: string;
  container: string;
  image: string;
  env: Record<string, string>;
  args: string[];
  exitCode?: number;
  logs?: string;
}

/**
 * A kubelet for the fake API server that runs each new pod's container with
 * podman under runsc (its image, env, args, user, read-only root, in-memory
 * /tmp and /dev/termination-log), reports Running, then the container's end
 * (exit code, termination message) and, as the Job controller, the Job's
 * Complete or Failed condition. A deleted pod's container is removed.
 */
function startPodmanKubelet(api: FakeKubeApi, workDir: string): { runs: PodmanRun[]; close(): Promise<void> } {
  const runs: PodmanRun[] = [];
  const live = new Map<string, { container: string; done: Promise<void> }>();
  let closed = false;
  const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
  const setStatus = (resource: "pods" | "jobs", ns: string, name: string, status: Obj) => {
    if (!api.get(resource, ns, name)) return;
    try {
      api.setStatus(resource, ns, name, status);
    } catch {
      // deleted meanwhile
    }
  };

  const start = (pod: KubeObject) => {
    const ns = pod.metadata.namespace ?? "default";
    const spec = pod.spec as PodSpec;
    const c = spec.containers[0]!;
    const env = resolveEnv(c.env ?? [], {}, { "metadata.name": pod.metadata.name, "metadata.namespace": ns, "status.podIP": "127.0.0.1" });
    const tmpVolume = (spec.volumes ?? []).find((v) => v.name === "tmp") as { emptyDir?: { sizeLimit?: string } } | undefined;
    const container = `${PREFIX}-pod-${pod.metadata.name}`.slice(0, 120);
    const terminationLog = join(workDir, `${pod.metadata.name}.termination-log`);
    writeFileSync(terminationLog, "");
    chmodSync(terminationLog, 0o666);
    const args = [
      "run",
      "--detach",
      "--name",
      container,
      "--label",
      LABEL,
      "--label",
      `dev.folio.test.pid=${process.pid}`,
      ...RUNTIME,
      ...securityArgs(spec, c, tmpfsSize(tmpVolume?.emptyDir?.sizeLimit, "768m")),
      "--volume",
      `${terminationLog}:/dev/termination-log:rw`,
      ...envArgs(env),
      ...(c.command ? ["--entrypoint", JSON.stringify(c.command)] : []),
      c.image!,
      ...(c.args ?? []),
    ];
    const run: PodmanRun = { pod: pod.metadata.name, container, image: c.image!, env, args };
    runs.push(run);
    const started = podman(args);
    const startedAt = now();
    const job = (pod.metadata.labels as Record<string, string> | undefined)?.["job-name"];
    const finish = (exitCode: number, message: string) => {
      run.exitCode = exitCode;
      if (closed) return;
      const ok = exitCode === 0;
      setStatus("pods", ns, pod.metadata.name, {
        phase: ok ? "Succeeded" : "Failed",
        containerStatuses: [
          {
            name: c.name,
            image: c.image,
            imageID: c.image,
            ready: false,
            started: false,
            restartCount: 0,
            state: { terminated: { exitCode, reason: ok ? "Completed" : "Error", startedAt, finishedAt: now(), ...(message ? { message: message.slice(0, 4096) } : {}) } },
          },
        ],
      });
      if (!job) return;
      const t = now();
      setStatus("jobs", ns, job, {
        active: 0,
        ...(ok ? { succeeded: 1, completionTime: t } : { failed: 1 }),
        conditions: ok
          ? [{ type: "Complete", status: "True", reason: "CompletionsReached", message: "Reached expected number of succeeded pods", lastProbeTime: t, lastTransitionTime: t }]
          : [{ type: "Failed", status: "True", reason: "BackoffLimitExceeded", message: "Job has reached the specified backoff limit", lastProbeTime: t, lastTransitionTime: t }],
      });
    };
    if (started.status !== 0) {
      run.logs = started.stderr;
      finish(128, `podman run failed: ${started.stderr.slice(0, 1000)}`);
      return;
    }
    setStatus("pods", ns, pod.metadata.name, {
      phase: "Running",
      startTime: startedAt,
      containerStatuses: [{ name: c.name, image: c.image, imageID: c.image, ready: true, started: true, restartCount: 0, state: { running: { startedAt } } }],
    });
    const done = new Promise<void>((resolve) => {
      const wait = spawn("podman", ["wait", container], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      wait.stdout.on("data", (b: Buffer) => (out += b.toString()));
      wait.once("close", () => {
        const exitCode = Number.parseInt(out.trim(), 10);
        run.logs = logsOf(container);
        let message: string;
        try {
          message = readFileSync(terminationLog, "utf8");
        } catch {
          message = "";
        }
        podman(["rm", "-f", "-t", "0", container]);
        live.delete(`${ns}/${pod.metadata.name}`);
        finish(Number.isNaN(exitCode) ? 137 : exitCode, message);
        resolve();
      });
    });
    live.set(`${ns}/${pod.metadata.name}`, { container, done });
  };

  const unsubscribe = api.onChange((event) => {
    if (closed || event.resource !== "pods") return;
    const key = `${event.object.metadata.namespace ?? "default"}/${event.object.metadata.name}`;
    if (event.type === "ADDED") {
      // The listener runs inside the fake's request handling: start the pod after it.
      const pod = event.object;
      setImmediate(() => {
        if (!closed) start(pod);
      });
    } else if (event.type === "DELETED") {
      const running = live.get(key);
      if (running) podman(["rm", "-f", "-t", "0", running.container]);
    }
  });

  return {
    runs,
    close: async () => {
      closed = true;
      unsubscribe();
      for (const { container } of live.values()) podman(["rm", "-f", "-t", "0", container]);
      await Promise.all([...live.values()].map((l) => l.done));
    },
  };
}

describe.skipIf(skipReason !== undefined)("the service and sandbox images under podman (runsc), as the Helm chart runs them", () => {
  let images: { service: string; sandbox: string };
  let db: Awaited<ReturnType<typeof privateDatabase>>;
  let api: FakeKubeApi;
  let kubelet: ReturnType<typeof startPodmanKubelet>;
  let work: string;
  let chart: K8sObject[];
  let edgeUrl: string;
  let adminKey: string;
  const started: string[] = [];
  const metricsPorts: Record<string, number> = {};
  let migrate: { status: number | null; stdout: string; stderr: string };

  /** Starts a chart component's container detached; its name. */
  const runComponent = (component: string, env: Record<string, string>, spec: PodSpec, detach = true) => {
    const c = spec.containers[0]!;
    const name = `${PREFIX}-${component}`;
    const args = [
      "run",
      ...(detach ? ["--detach"] : []),
      "--name",
      name,
      "--label",
      LABEL,
      "--label",
      `dev.folio.test.pid=${process.pid}`,
      ...RUNTIME,
      ...securityArgs(spec, c, tmpfsSize(((spec.volumes ?? []).find((v) => v.name === "tmp") as { emptyDir?: { sizeLimit?: string } } | undefined)?.emptyDir?.sizeLimit, "1g")),
      "--volume",
      `${join(work, "kubeconfig")}:/etc/folio/kubeconfig:ro`,
      ...envArgs(env),
      images.service,
      ...(c.args ?? []),
    ];
    started.push(name);
    return podman(args, 180_000);
  };

  beforeAll(async () => {
    removeLeftovers();
    // 1. The images (cached: seconds when nothing changed; docs/operations-images.md has the cold time).
    const build = spawnSync("scripts/build-images.sh", [], { cwd: ROOT, encoding: "utf8", timeout: 14 * 60_000, maxBuffer: 256 * 1024 * 1024 });
    const line = /FOLIO_IMAGE=(\S+) FOLIO_SANDBOX_IMAGE=(\S+)/.exec(build.stdout ?? "");
    if (build.status !== 0 || !line) throw new Error(`scripts/build-images.sh failed (${build.status ?? build.signal}):\n${(build.stderr ?? "").slice(-4000)}`);
    images = { service: line[1]!, sandbox: line[2]! };

    // 2. What the chart runs: helm template with the built images, one sandbox per document.
    k8sTools();
    const [repository, tag] = images.sandbox.split(":");
    chart = renderChart({
      set: [
        "database.url=postgres://unused",
        "redis.url=redis://unused",
        `image.repository=${images.service.split(":")[0]}`,
        `image.tag=${images.service.split(":")[1]}`,
        `sandbox.image.repository=${repository}`,
        `sandbox.image.tag=${tag}`,
        "sandboxPool.enabled=false",
      ],
    });

    work = mkdtempSync(join(tmpdir(), "folio-images-"));
    chmodSync(work, 0o755);
    api = await startFakeKubeApi({ jobController: true });
    writeFileSync(join(work, "kubeconfig"), plainHttpKubeConfig(api.url, NAMESPACE, "folio").exportConfig(), { mode: 0o644 });
    kubelet = startPodmanKubelet(api, work);
    db = await privateDatabase(`images_${process.pid}`);

    // Host networking: every listener gets a free loopback port instead of the chart's fixed ones.
    const port = async () => String(await freePort());
    const ports = { http: await port(), extraction: await port(), conversion: await port(), broker: await port(), health: await port() };
    for (const c of ["edge", "extraction", "conversion", "operator"]) metricsPorts[c] = Number(await port());
    const secrets = { DATABASE_URL: db.url, REDIS_URL: redisUrl() };
    const fields = { "metadata.namespace": NAMESPACE, "status.podIP": "127.0.0.1" };
    const envFor = (component: string, spec: PodSpec, overrides: Record<string, string>) => ({
      ...resolveEnv(spec.containers[0]!.env ?? [], secrets, { ...fields, "metadata.name": `${PREFIX}-${component}` }),
      KUBECONFIG: "/etc/folio/kubeconfig",
      ...overrides,
    });
    const loopback = (component: string) => ({ FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(metricsPorts[component]) });

    // 3. `folio migrate` as the chart's pre-install Job runs it, on an empty database.
    const migrateSpec = podSpecOf(chart, "Job", "folio-migrate");
    migrate = runComponent("migrate", envFor("migrate", migrateSpec, {}), migrateSpec, false);
    if (migrate.status !== 0) throw new Error(`folio migrate exited ${migrate.status}:\n${migrate.stdout}${migrate.stderr}`);

    // 4. The long-running components.
    const extraction = podSpecOf(chart, "Deployment", "folio-extraction");
    const conversion = podSpecOf(chart, "Deployment", "folio-conversion");
    const operator = podSpecOf(chart, "Deployment", "folio-operator");
    const edge = podSpecOf(chart, "Deployment", "folio-edge");
    const runs = [
      runComponent("extraction", envFor("extraction", extraction, { ...loopback("extraction"), FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: ports.extraction }), extraction),
      runComponent(
        "conversion",
        envFor("conversion", conversion, {
          ...loopback("conversion"),
          FOLIO_GRPC_HOST: "127.0.0.1",
          FOLIO_GRPC_PORT: ports.conversion,
          FOLIO_BROKER_HOST: "127.0.0.1",
          FOLIO_BROKER_PORT: ports.broker,
          FOLIO_BROKER_ADDRESS: `127.0.0.1:${ports.broker}`,
        }),
        conversion,
      ),
      runComponent("operator", envFor("operator", operator, { ...loopback("operator"), FOLIO_OPERATOR_HEALTH_PORT: ports.health, FOLIO_BROKER_PORT: ports.broker }), operator),
      runComponent(
        "edge",
        envFor("edge", edge, {
          ...loopback("edge"),
          FOLIO_HTTP_HOST: "127.0.0.1",
          FOLIO_HTTP_PORT: ports.http,
          FOLIO_EXTRACTION_ADDRESS: `127.0.0.1:${ports.extraction}`,
          FOLIO_CONVERSION_ADDRESS: `127.0.0.1:${ports.conversion}`,
        }),
        edge,
      ),
    ];
    for (const r of runs) if (r.status !== 0) throw new Error(`podman run failed: ${r.stderr}`);
    edgeUrl = `http://127.0.0.1:${ports.http}`;

    // 5. Ready: the edge's /readyz (database and Redis) and the operator's.
    const deadline = Date.now() + 120_000;
    for (;;) {
      const ready = await Promise.all([`${edgeUrl}/readyz`, `http://127.0.0.1:${ports.health}/readyz`].map((u) => fetch(u).then((r) => r.ok, () => false)));
      if (ready.every(Boolean)) break;
      const exited = started.filter((n) => podman(["inspect", "--format", "{{.State.Running}}", n]).stdout.trim() === "false" && !n.endsWith("-migrate"));
      if (exited.length > 0 || Date.now() > deadline) {
        throw new Error(`not ready after ${Math.round((Date.now() - deadline + 120_000) / 1000)} s (stopped: ${exited.join(", ") || "none"}):\n${started.map(logsOf).join("\n")}`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }

    const limiter = new RedisRateLimiter(redisUrl(), { onError: "local", log: createLogger("silent") });
    try {
      const r = await adminCreateAccount(
        { db: db.db, limiter },
        { email: `images.${process.pid}@example.test`, name: "images test", creditsCents: 1000, requestsPerMinute: 10_000, requestsPerDay: 1_000_000 },
      );
      adminKey = r.api_key.key;
    } finally {
      await limiter.close();
    }
  }, 16 * 60_000);

  afterAll(async () => {
    for (const name of started) podman(["rm", "-f", "-t", "0", name]);
    await kubelet?.close();
    await api?.close();
    await db?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 120_000);

  it("runs every container as the chart's non-root user on a read-only root file system", () => {
    for (const name of started.filter((n) => !n.endsWith("-migrate"))) {
      const inspected = JSON.parse(podman(["inspect", name]).stdout) as { Config: { User: string }; HostConfig: { ReadonlyRootfs: boolean; CapDrop: string[] }; State: { Running: boolean } }[];
      const c = inspected[0]!;
      expect({ name, user: c.Config.User, readOnly: c.HostConfig.ReadonlyRootfs, running: c.State.Running }).toEqual({ name, user: "65532:65532", readOnly: true, running: true });
    }
  });

  it("migrates an empty database with `folio migrate` in the service image", async () => {
    expect(migrate.status, migrate.stdout + migrate.stderr).toBe(0);
    const tables = await sql<{ n: number }>`select count(*)::int as n from information_schema.tables where table_schema = 'public' and table_name in ('accounts', 'api_keys', 'ledger_entries')`.execute(db.db);
    expect(tables.rows[0]!.n).toBe(3);
  });

  it("answers /readyz on the edge and /metrics on every component", async () => {
    const ready = await fetch(`${edgeUrl}/readyz`);
    expect(ready.status, await ready.clone().text()).toBe(200);
    for (const [component, port] of Object.entries(metricsPorts)) {
      const r = await fetch(`http://127.0.0.1:${port}/metrics`);
      const text = await r.text();
      expect(r.status, `${component}: ${text.slice(0, 200)}`).toBe(200);
      // Each process's own registry: its default metrics carry its name.
      const processLabel = /^folio_process_cpu_seconds_total\{[^}]*process="([a-z]+)"/m.exec(text)?.[1];
      expect(processLabel, `${component}: ${text.slice(0, 300)}`).toBe(component);
    }
  });

  it("reads a PNG through /v1/ocr: edge → extraction over gRPC, tesseract in the image", async () => {
    const r = await call({ url: edgeUrl }, "POST", "/v1/ocr", adminKey, { base64: ocrFixture("english.png").toString("base64"), model: "local/tesseract" });
    expect(r.status, JSON.stringify(r.body).slice(0, 800)).toBe(200);
    expectCerBelow(r.body.result.text as string, "english.txt", 0.05);
  }, 120_000);

  it("reads a three-page PDF through /v1/ocr: poppler in the edge's image, each page read by extraction", async () => {
    const r = await call({ url: edgeUrl }, "POST", "/v1/ocr", adminKey, { base64: ocrFixture("multipage.pdf").toString("base64"), model: "local/tesseract" });
    expect(r.status, JSON.stringify(r.body).slice(0, 800)).toBe(200);
    const pages = r.body.result.pages as { page_number: number; text: string }[];
    expect(pages.map((p) => p.page_number)).toEqual([1, 2, 3]);
    for (const p of pages) expect(cer(p.text, ocrTruth(`multipage.page-${p.page_number}.txt`)), p.text).toBeLessThan(0.08);
  }, 180_000);

  it("converts a DOCX through /v1/convert: conversion → operator → a sandbox pod from the sandbox image under runsc → pages back at the broker", async () => {
    const docx = readFileSync(join(ROOT, "test/fixtures/convert/two-pages.docx"));
    const before = kubelet.runs.length;
    const r = await call({ url: edgeUrl }, "POST", "/v1/convert", adminKey, { file: docx.toString("base64"), filename: "two-pages.docx", mimeType: DOCX });
    const pods = kubelet.runs.slice(before);
    const seen = pods.map((p) => `${p.pod}: exit ${p.exitCode}\n${p.logs ?? ""}`).join("\n");
    expect(r.status, `${JSON.stringify(r.body).slice(0, 800)}\n${seen}\n${logsOf(`${PREFIX}-conversion`)}\n${logsOf(`${PREFIX}-operator`)}`).toBe(200);
    expect(r.body.result.page_count).toBe(2);
    for (const image of r.body.result.images as { base64: string; mime_type: string; width: number; height: number }[]) {
      expect(image.mime_type).toBe("image/png");
      expect(Buffer.from(image.base64, "base64").subarray(1, 4).toString("latin1")).toBe("PNG");
      // A4 at 200 DPI.
      expect([image.width, image.height]).toEqual([1654, 2339]);
    }
    // It was the sandbox image that converted, under runsc, as nobody with the broker's address and token.
    expect(pods.length, seen).toBe(1);
    const pod = pods[0]!;
    expect(pod.image).toBe(images.sandbox);
    expect(pod.exitCode, seen).toBe(0);
    expect(Object.keys(pod.env)).toEqual(expect.arrayContaining(["FOLIO_BROKER_ADDRESS", "FOLIO_BROKER_TOKEN"]));
    expect(pod.args.join(" ")).toContain("--runtime=runsc");
    expect(pod.args.join(" ")).toContain("--user 65534:65534");
    expect(pod.args).toContain("--read-only");
  }, 300_000);
});
