/**
 * Shared pieces of the operator's integration tests (not a test itself; excluded
 * from the build by tsconfig.build.json like every `testserver.ts`):
 * a fake API server per test, operators with short timings, a recording
 * proxy that tells one replica's requests from another's, and `until`.
 */
import { createServer, request, type Server } from "node:http";
import type { Socket } from "node:net";
import { inspect } from "node:util";
import type { KubeConfig } from "@kubernetes/client-node";
import { plainHttpKubeConfig, startFakeKubeApi, type FakeKubeApi, type KubeObject } from "../../test/fake-kube-api.ts";
import { operatorSchema, parseConfig, type Env, type OperatorConfig } from "../platform/config/index.ts";
import { createLogger } from "../platform/log/index.ts";
import { startOperator, type OperatorTiming, type RunningOperator } from "./index.ts";
import type { ConversionSandbox, ConversionSandboxSpec } from "./types.ts";

export const NS = "folio-test";

type Truthy<T> = Exclude<T, false | "" | 0 | null | undefined>;

/** Polls `check` until it returns something truthy; on timeout the error shows what it last returned. */
export async function until<T>(check: () => T | Promise<T>, timeoutMs = 10_000, what: string | (() => string) = "the condition"): Promise<Truthy<T>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as Truthy<T>;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) {
      const described = typeof what === "function" ? what() : what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}; last saw: ${inspect(last, { depth: 6 })}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** An RFC 3339 time with second resolution, as the kubelet reports it, `secondsAgo` before now. */
export function kubeletTime(secondsAgo: number): string {
  return new Date(Math.floor(Date.now() / 1000 - secondsAgo) * 1000).toISOString().replace(/\.000Z$/, "Z");
}

export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Short intervals so the tests take seconds; generous enough not to race on a slow machine. */
export const FAST_TIMING: Partial<OperatorTiming> = {
  resyncMs: 1000,
  queueBackoff: { baseMs: 20, maxMs: 500 },
  watchBackoff: { baseMs: 20, maxMs: 200 },
  imagePullGraceMs: 500,
  jobVerdictGraceMs: 500,
  requestTimeoutMs: 5000,
};

export function testConfig(overrides: Env = {}): OperatorConfig {
  return parseConfig(operatorSchema, {
    FOLIO_OPERATOR_NAMESPACE: NS,
    FOLIO_LEASE_DURATION_SECONDS: "2",
    FOLIO_LEASE_RENEW_SECONDS: "0.2",
    FOLIO_WATCH_IDLE_SECONDS: "30",
    FOLIO_METRICS_ENABLED: "false",
    LOG_LEVEL: process.env.OPERATOR_TEST_LOG ?? "silent",
    ...overrides,
  });
}

export function sandboxObject(name: string, spec: Partial<ConversionSandboxSpec> = {}): KubeObject {
  const sandbox: ConversionSandbox = {
    apiVersion: "folio.dev/v1alpha1",
    kind: "ConversionSandbox",
    metadata: { name, namespace: NS },
    spec: {
      format: "DOCX",
      maxPages: 20,
      timeoutSeconds: 45,
      broker: { address: "folio-conversion.folio-test.svc:50053", token: `tok_${name}_0123456789abcdef` },
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      ...spec,
    },
  };
  return sandbox as unknown as KubeObject;
}

export interface RecordingProxy {
  readonly url: string;
  /** Every request this replica sent, with the time the proxy received it. */
  readonly requests: { method: string; path: string; at: number }[];
  /** While blocked every request is answered 503 and open connections (watches) are cut. */
  block(blocked: boolean): void;
  close(): Promise<void>;
}

/** An HTTP proxy in front of the fake API server that records what one replica sends. */
export async function recordingProxy(target: string): Promise<RecordingProxy> {
  const requests: { method: string; path: string; at: number }[] = [];
  const sockets = new Set<Socket>();
  let blocked = false;
  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method ?? "", path: req.url ?? "", at: Date.now() });
    if (blocked) {
      req.resume();
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code: 503, reason: "ServiceUnavailable", message: "blocked by the test" }));
      return;
    }
    const upstream = request(target + (req.url ?? "/"), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    url,
    requests,
    block(b) {
      blocked = b;
      if (b) for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

export function kubeConfigFor(url: string): KubeConfig {
  return plainHttpKubeConfig(url, NS, "test");
}

/** One fake API server and the operators started against it; `close` stops them all. */
export class Harness {
  readonly operators: RunningOperator[] = [];
  private readonly proxies: RecordingProxy[] = [];

  private constructor(readonly api: FakeKubeApi) {}

  static async start(options: Parameters<typeof startFakeKubeApi>[0] = {}): Promise<Harness> {
    return new Harness(await startFakeKubeApi({ jobController: true, ...options }));
  }

  /** Starts an operator (through its own recording proxy when `proxied`). */
  async operator(
    env: Env = {},
    options: { proxied?: boolean; timing?: Partial<OperatorTiming>; config?: Partial<OperatorConfig> } = {},
  ): Promise<{ operator: RunningOperator; proxy?: RecordingProxy }> {
    // `config` sets values the environment cannot express (parseConfig reads an empty variable as unset).
    const config = { ...testConfig(env), ...options.config };
    const proxy = options.proxied ? await recordingProxy(this.api.url) : undefined;
    if (proxy) this.proxies.push(proxy);
    const operator = await startOperator({
      config,
      log: createLogger(config.LOG_LEVEL).child({ replica: config.FOLIO_OPERATOR_IDENTITY ?? "test" }),
      kubeConfig: proxy ? kubeConfigFor(proxy.url) : this.api.kubeConfig(),
      timing: { ...FAST_TIMING, ...options.timing },
    });
    this.operators.push(operator);
    return { operator, ...(proxy ? { proxy } : {}) };
  }

  /** Starts one operator and waits until it leads. */
  async leader(env: Env = {}, options: { timing?: Partial<OperatorTiming>; config?: Partial<OperatorConfig> } = {}): Promise<RunningOperator> {
    const { operator } = await this.operator(env, options);
    await until(() => operator.isLeader() && operator.ready(), 10_000, "the operator to lead with its watches synced");
    return operator;
  }

  createSandbox(name: string, spec: Partial<ConversionSandboxSpec> = {}): KubeObject {
    return this.api.put("conversionsandboxes", sandboxObject(name, spec));
  }

  sandbox(name: string): ConversionSandbox | undefined {
    return this.api.get("conversionsandboxes", NS, name) as unknown as ConversionSandbox | undefined;
  }

  /** The pod the fake Job controller made for a Job. */
  podOf(jobName: string): KubeObject | undefined {
    return this.api.list("pods", NS).find((p) => (p.metadata.labels as Record<string, string> | undefined)?.["job-name"] === jobName);
  }

  async close(): Promise<void> {
    await Promise.all(this.operators.splice(0).map((o) => o.close()));
    await Promise.all(this.proxies.splice(0).map((p) => p.close()));
    await this.api.close();
  }
}
