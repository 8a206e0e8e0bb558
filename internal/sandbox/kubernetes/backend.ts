/**
 * The `kubernetes` sandbox backend: one ConversionSandbox custom resource per
 * document, which the operator (`internal/operator`) turns into a gVisor
 * batch/v1 Job. This backend never creates Jobs or pods itself.
 *
 * Per document:
 * 1. the document is registered with the {@link SandboxBroker}, which hands
 *    out a one-time token; the resource carries only that token and the
 *    broker's address (never the document, never another secret), and the
 *    sandbox pod fetches the document and returns its pages (with output
 *    `pdf`, the PDF: the broker checks either) over gRPC;
 * 2. the ConversionSandbox is created (`csb-<random>`);
 * 3. the first of these decides the answer:
 *    - the broker's result (pages, or the program's own conversion failure);
 *    - the resource's status turning `Failed` (the pod was OOM-killed, ran past
 *      its deadline, could not pull its image, ... — see {@link statusError});
 *    - the wall-clock limit, `timeoutMs + startupGraceMs` → `timeout`;
 *    - the caller's abort signal;
 * 4. the broker registration is cancelled (a late sandbox gets nothing) and
 *    the resource is deleted, whatever happened; the operator's finalizer
 *    deletes the Job and its pod.
 *
 * computeMillis (what is billed) is the operator's `status.computeMillis`
 * (container start to exit, from the kubelet's times refined by the sandbox's
 * own measure) once the resource reports `Succeeded`; the backend waits up to
 * {@link COMPUTE_MILLIS_WAIT_MS} for it after the pages arrived. When it does
 * not come in time, the broker's view stands in: from the sandbox's FetchJob
 * to its submitted result, which leaves out only the program's start and exit.
 *
 * Warm pods first (docs/operator.md, "The warm pool"). When a
 * ConversionSandboxPool keeps warm pods waiting at this replica's broker,
 * the document goes down the oldest one's open call ({@link SandboxBroker.offer}):
 * no ConversionSandbox, no API request on the way. Only when none waits
 * does the document take the path above (counted in
 * `folio_sandbox_pool_fallbacks_total`). A warm pod that goes away holding
 * the document (its connection dropped before a result) has the document
 * retried once, on another warm pod or the cold path; a second loss, or a
 * conversion failure the program reported, is the answer.
 *
 * Watching the resource. One watch per document (`fieldSelector
 * metadata.name=<name>`, from the resourceVersion the create returned, with
 * bookmarks) rather than polling: a failure is seen as soon as the operator
 * writes it, and the load on the API server is one idle connection per running
 * sandbox instead of 2–4 GETs a second each. Whatever ends a watch (410 Gone
 * after a compaction, an ERROR event, a dropped connection, client-node's 30 s
 * idle timeout) the object is read again (a LIST of just it), so nothing
 * missed in the gap is lost, and a new watch starts from that list's
 * resourceVersion. A
 * process with very many concurrent sandboxes would do better with one shared
 * informer over all of its resources; the concurrency of one conversion
 * process is small (FOLIO_CONVERSION_CONCURRENCY), so this is kept simple.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { CustomObjectsApi, Watch, type KubeConfig } from "@kubernetes/client-node";
import { API_VERSION, GROUP, KIND, LABELS, PLURAL, VERSION, type ConversionSandbox, type ConversionSandboxSpec, type ConversionSandboxStatus } from "../../operator/types.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { Logger } from "../../platform/log/index.ts";
import type { Metrics } from "../../platform/metrics/index.ts";
import { FORMAT_EXTENSIONS } from "../../formats/index.ts";
import type { SandboxBackend, SandboxInput, SandboxResult } from "../interface.ts";
import { jobError } from "../jobdir.ts";
import { WarmPodLostError, type BrokerJobInput, type BrokerResult, type SandboxBroker, type WarmRegistration } from "./broker.ts";
import { DEFAULT_POOL_NAME, PoolMetrics, WarmPool } from "./pool.ts";

export interface KubernetesBackendOptions {
  kubeConfig: KubeConfig;
  /** Namespace of the ConversionSandboxes (the operator's namespace). */
  namespace: string;
  /** host:port sandbox pods dial to reach the broker. */
  brokerAddress: string;
  broker: SandboxBroker;
  /** Largest total size of one document's pages. */
  maxOutputBytes: number;
  log: Logger;
  /** Overrides of the operator's default pod resources (Kubernetes quantities). */
  resources?: { cpu?: string; memory?: string };
  /** extra ms granted beyond timeoutMs for scheduling/image pull before the answer is timeout */
  startupGraceMs?: number;
  /** How long to wait for the operator's computeMillis after the pages arrived; default {@link COMPUTE_MILLIS_WAIT_MS}. */
  computeMillisWaitMs?: number;
  /**
   * The warm pool this replica reports to and takes warm pods from: default
   * the pool {@link DEFAULT_POOL_NAME}, this host's name as the replica key.
   * `false`: every document takes the cold path (no Job watch, no reports).
   * `queued`: requests waiting in front of this backend for a conversion
   * slot (the service's queue, internal/conversion/slots.ts), reported as
   * the replica's `waiting`; none when omitted.
   */
  pool?: { name?: string; replica?: string; reportIntervalMs?: number; queued?: () => number } | false;
  /** The registry the warm path's counters go into (the conversion process's); a private one when omitted. */
  metrics?: Metrics;
}

/**
 * Default of {@link KubernetesBackendOptions.startupGraceMs}. The Job's own
 * deadline (activeDeadlineSeconds = timeoutSeconds) already counts from the
 * Job's start, scheduling and image pull included, and ends as
 * DeadlineExceeded; this grace covers the operator noticing and writing
 * that, and is the backstop when no operator acts at all.
 */
export const DEFAULT_STARTUP_GRACE_MS = 30_000;
/** Default wait for the operator's computeMillis after the pages arrived (see the module comment). */
export const COMPUTE_MILLIS_WAIT_MS = 5_000;
/** Beyond a warm document's timeoutMs: the pages' upload and the answer (the pod's own limit is timeoutMs). */
export const WARM_GRACE_MS = 10_000;
/** Labels of every ConversionSandbox this backend creates. */
export const REQUEST_LABELS = Object.freeze({ [LABELS.name]: "folio", [LABELS.component]: "sandbox-request" });
/** Bounds of spec.timeoutSeconds in the CRD's schema. */
const MIN_TIMEOUT_SECONDS = 1;
const MAX_TIMEOUT_SECONDS = 3600;
/** Attempts at deleting a resource when the API server fails transiently. */
const DELETE_ATTEMPTS = 3;
/** Pause between re-reads when a watch keeps failing: doubles from the first to the last. */
const WATCH_BACKOFF_MS = [100, 250, 500, 1000, 2000] as const;

export class KubernetesBackend implements SandboxBackend {
  private readonly api: CustomObjectsApi;
  private readonly watcher: Watch;
  private readonly startupGraceMs: number;

  private readonly pool: WarmPool | undefined;
  readonly poolMetrics: PoolMetrics;
  /** Documents asked for so far (the hand-in rate this replica reports). */
  private requests = 0;

  constructor(private readonly opts: KubernetesBackendOptions) {
    // An IPv6 pod IP ("$(POD_IP):50053" in the chart) gets its brackets here, once.
    this.opts = opts = { ...opts, brokerAddress: brokerAddressForPods(opts.brokerAddress) };
    this.api = opts.kubeConfig.makeApiClient(CustomObjectsApi);
    this.watcher = new Watch(opts.kubeConfig);
    this.startupGraceMs = opts.startupGraceMs ?? DEFAULT_STARTUP_GRACE_MS;
    this.poolMetrics = new PoolMetrics(opts.metrics);
    if (opts.pool !== false) {
      const queued = opts.pool?.queued;
      this.pool = new WarmPool({
        kubeConfig: opts.kubeConfig,
        namespace: opts.namespace,
        pool: opts.pool?.name ?? DEFAULT_POOL_NAME,
        replica: opts.pool?.replica ?? hostname(),
        brokerAddress: opts.brokerAddress,
        broker: opts.broker,
        log: opts.log.child({ component: "sandbox-pool" }),
        // Waiting: requests each of which wants a sandbox as soon as a slot frees. Not cold
        // conversions under way: they have a sandbox, and the rate counted them already.
        demand: () => ({ waiting: queued?.() ?? 0, requests: this.requests }),
        ...(opts.pool?.reportIntervalMs ? { reportIntervalMs: opts.pool.reportIntervalMs } : {}),
      });
      this.pool.start();
    }
  }

  /** Stops the pool's Job watch and reports (conversions under way finish). */
  async close(): Promise<void> {
    await this.pool?.close();
  }

  /** Writes this replica's demand report now (tests; it is written on a timer anyway). */
  reportDemand(): Promise<void> {
    return this.pool?.report() ?? Promise.resolve();
  }

  async convert(input: SandboxInput, signal?: AbortSignal): Promise<SandboxResult> {
    checkInput(input);
    signal?.throwIfAborted();
    this.requests++;
    const received = Date.now();
    if (this.pool) {
      const warm = this.offerWarm(input, new Set());
      if (warm) return this.convertWarm(input, signal, warm, received, 1);
      this.poolMetrics.fallbacks.inc({ reason: "empty" });
    }
    return this.convertCold(input, signal);
  }

  private offerWarm(input: SandboxInput, exclude: ReadonlySet<string>): WarmRegistration | undefined {
    return this.opts.broker.offer(this.brokerJob(input, Date.now() + input.timeoutMs + WARM_GRACE_MS), exclude);
  }

  /** What the broker hands a sandbox for `input`, warm or cold; its registration expires at `expiresAt`. */
  private brokerJob(input: SandboxInput, expiresAt: number): BrokerJobInput {
    return {
      document: input.document,
      format: input.format,
      maxPages: input.maxPages,
      ...(input.pages ? { pages: input.pages } : {}),
      ...(input.output === "pdf" ? { output: "pdf" as const } : {}),
      timeoutMs: input.timeoutMs,
      maxOutputBytes: this.opts.maxOutputBytes,
      ...(input.traceparent ? { traceparent: input.traceparent } : {}),
      expiresAt,
    };
  }

  /** A document already on its way to a warm pod: its answer, with one retry when the pod went away (see the module comment). */
  private async convertWarm(input: SandboxInput, signal: AbortSignal | undefined, warm: WarmRegistration, received: number, attempt: 1 | 2): Promise<SandboxResult> {
    this.poolMetrics.handIns.inc({ path: "warm" });
    this.poolMetrics.handInSeconds.observe({ path: "warm" }, Math.max(0, warm.handedInAtMs - received) / 1000);
    const log = this.opts.log.child({ seat: warm.seat.job, job: warm.id });
    const onAbort = () => warm.cancel(signal?.reason instanceof Error ? signal.reason : new FolioError("timeout", "the conversion was cancelled"));
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      // The broker's registration expires at timeoutMs + WARM_GRACE_MS (a timeout), so this always settles.
      const result = await warm.result;
      if (!result.outcome.ok) throw outcomeError(result);
      // A warm pod has no ConversionSandbox status: the broker's hand-in to result is the compute time.
      const computeMillis = Math.max(1, result.submittedAtMs - warm.handedInAtMs);
      log.info({ pageCount: result.pageCount, ...pdfLog(result), computeMillis, attempt }, "warm sandbox finished");
      return sandboxResult(result, computeMillis);
    } catch (err) {
      if (!(err instanceof WarmPodLostError) || signal?.aborted) throw err;
      if (attempt === 2) throw new FolioError("conversion_failed", "the sandbox went away twice before returning a result for this document");
      log.warn({ err: err.message }, "warm sandbox went away holding the document; retrying it once");
      this.poolMetrics.retries.inc();
      const again = this.offerWarm(input, new Set([warm.seat.job]));
      if (again) return this.convertWarm(input, signal, again, Date.now(), 2);
      this.poolMetrics.fallbacks.inc({ reason: "retry" });
      return this.convertCold(input, signal);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** One ConversionSandbox for the document (the module comment's steps 1–4). */
  private convertCold(input: SandboxInput, signal?: AbortSignal): Promise<SandboxResult> {
    this.poolMetrics.handIns.inc({ path: "cold" });
    return this.convertOwnSandbox(input, signal);
  }

  private async convertOwnSandbox(input: SandboxInput, signal?: AbortSignal): Promise<SandboxResult> {
    signal?.throwIfAborted();
    const started = Date.now();
    const limitMs = input.timeoutMs + this.startupGraceMs;
    const name = `csb-${randomBytes(8).toString("hex")}`;
    const log = this.opts.log.child({ sandbox: name });
    const registration = this.opts.broker.register(this.brokerJob(input, started + limitMs));
    // Ends everything this call started waits on: the limit, the caller's abort, the end of the call.
    const done = new AbortController();
    const ended = new Promise<never>((_, reject) => {
      const timer = setTimeout(() => reject(new FolioError("timeout", `the conversion did not finish within ${input.timeoutMs} ms`)), limitMs);
      const onAbort = () => reject(signal?.reason ?? new FolioError("timeout", "the conversion was cancelled"));
      signal?.addEventListener("abort", onAbort, { once: true });
      done.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      });
    });
    ended.catch(() => undefined);
    let watch: SandboxWatch | undefined;
    let creating: Promise<ConversionSandbox> | undefined;
    let created = false;
    let outcome = "error";
    try {
      const spec: ConversionSandboxSpec = {
        format: input.format,
        maxPages: input.maxPages,
        timeoutSeconds: Math.min(MAX_TIMEOUT_SECONDS, Math.max(MIN_TIMEOUT_SECONDS, Math.ceil(input.timeoutMs / 1000))),
        broker: { address: this.opts.brokerAddress, token: registration.token },
        ...(input.traceparent ? { traceparent: input.traceparent } : {}),
        ...(this.opts.resources ? { resources: { ...this.opts.resources } } : {}),
      };
      creating = this.create(name, spec);
      const made = await Promise.race([creating, ended]);
      created = true;
      log.info({ job: registration.id, format: input.format, bytes: input.document.length, timeoutSeconds: spec.timeoutSeconds }, "sandbox requested");
      watch = new SandboxWatch({ api: this.api, watcher: this.watcher, namespace: this.opts.namespace, name, resourceVersion: made.metadata.resourceVersion, log });
      const finished = watch.until((s) => s.deleted || s.status?.phase === "Failed" || s.status?.phase === "Succeeded");

      const first = await Promise.race([
        registration.result.then((result) => ({ kind: "result" as const, result })),
        finished.then((state) => ({ kind: "finished" as const, state })),
        ended,
      ]);
      const result = first.kind === "result" ? first.result : await this.resultAfterFinish(first.state, registration.result, spec, ended);
      if (!result.outcome.ok) throw outcomeError(result);
      const computeMillis = await this.computeMillis(watch, result);
      outcome = "ok";
      log.info({ job: registration.id, pageCount: result.pageCount, ...pdfLog(result), computeMillis: computeMillis.value, computeMillisFrom: computeMillis.from }, "sandbox finished");
      return sandboxResult(result, computeMillis.value);
    } catch (err) {
      outcome = err instanceof FolioError ? err.code : "internal_error";
      throw err;
    } finally {
      done.abort();
      registration.cancel(new FolioError("internal_error", "the conversion ended before the sandbox returned a result"));
      watch?.stop();
      if (created) {
        await this.delete(name, log);
      } else if (creating) {
        // Given up while the create was in flight: delete it if it lands, without holding up the answer.
        void creating.then(
          () => this.delete(name, log),
          () => undefined,
        );
      }
      log.debug({ outcome, millis: Date.now() - started }, "sandbox released");
    }
  }

  /**
   * The answer when the resource finished before the broker had a result.
   * Failed or deleted: the status says why. Succeeded: the program exits 0
   * only after its result was accepted, so the result is normally already
   * here (a gRPC answer and a watch event race); one that does not come
   * within the computeMillis wait means a sandbox that exited without
   * returning anything, which is the document's doing as much as anything.
   */
  private async resultAfterFinish(state: SandboxState, result: Promise<BrokerResult>, spec: ConversionSandboxSpec, ended: Promise<never>): Promise<BrokerResult> {
    if (state.deleted) throw new FolioError("internal_error", "the ConversionSandbox was deleted before its sandbox finished", { retryable: true });
    if (state.status?.phase === "Failed") throw statusError(state.status, spec);
    const wait = new AbortController();
    try {
      const late = await Promise.race([
        result,
        ended,
        sleep(this.opts.computeMillisWaitMs ?? COMPUTE_MILLIS_WAIT_MS, undefined, { signal: wait.signal }).then(() => undefined),
      ]);
      if (late) return late;
      throw new FolioError("conversion_failed", "the sandbox finished without returning a result");
    } finally {
      wait.abort();
    }
  }

  /** The operator's computeMillis when it comes within the wait, else the broker's fetch-to-submit time. */
  private async computeMillis(watch: SandboxWatch, result: BrokerResult): Promise<{ value: number; from: "operator" | "broker" }> {
    const timeout = new AbortController();
    const settled = await Promise.race([
      watch.until((s) => s.deleted || s.status?.phase === "Failed" || (s.status?.phase === "Succeeded" && typeof s.status.computeMillis === "number")),
      sleep(this.opts.computeMillisWaitMs ?? COMPUTE_MILLIS_WAIT_MS, undefined, { signal: timeout.signal }).then(
        () => undefined,
        () => undefined,
      ),
    ]);
    timeout.abort();
    const millis = settled?.status?.phase === "Succeeded" ? settled.status.computeMillis : undefined;
    if (typeof millis === "number" && Number.isFinite(millis) && millis >= 0) return { value: Math.round(millis), from: "operator" };
    return { value: Math.max(1, result.submittedAtMs - result.fetchedAtMs), from: "broker" };
  }

  private async create(name: string, spec: ConversionSandboxSpec): Promise<ConversionSandbox> {
    const body: ConversionSandbox = {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { name, namespace: this.opts.namespace, labels: { ...REQUEST_LABELS } },
      spec,
    };
    try {
      return (await this.api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.opts.namespace, plural: PLURAL, body })) as ConversionSandbox;
    } catch (err) {
      throw createError(err, this.opts.namespace);
    }
  }

  /** Deletes the resource; gone already is fine. Failures are logged: the operator's retention sweep removes leftovers. */
  private async delete(name: string, log: Logger): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.api.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.opts.namespace, plural: PLURAL, name, propagationPolicy: "Background" });
        return;
      } catch (err) {
        const status = httpStatus(err);
        if (status === 404) return;
        const transient = status === undefined || status === 429 || status >= 500;
        if (!transient || attempt >= DELETE_ATTEMPTS) {
          log.warn({ status, error: errorText(err) }, "could not delete the ConversionSandbox; the operator's retention sweep will");
          return;
        }
        await sleep(200 * attempt);
      }
    }
  }
}

/**
 * The broker address as sandbox pods dial it and the CRDs accept it: a DNS
 * name or IPv4 address with its port as it is, an IPv6 address in brackets.
 * `fd00::5:50053` (what `$(POD_IP):50053` gives on an IPv6 cluster) becomes
 * `[fd00::5]:50053`: the part after the last colon is the port.
 */
export function brokerAddressForPods(address: string): string {
  const colon = address.lastIndexOf(":");
  const host = address.slice(0, colon);
  if (colon < 0 || host.startsWith("[") || !host.includes(":")) return address;
  return `[${host}]${address.slice(colon)}`;
}

/** The checks the other backends make before a sandbox starts (the operator's CRD schema would refuse less clearly). */
function checkInput(input: SandboxInput): void {
  if (!Object.hasOwn(FORMAT_EXTENSIONS, input.format)) throw new FolioError("unsupported_format", `cannot convert format ${String(input.format)}`);
  if (!Number.isInteger(input.maxPages) || input.maxPages < 1) throw new FolioError("invalid_request", "maxPages must be a positive integer");
  if (!(input.timeoutMs > 0)) throw new FolioError("invalid_request", "timeoutMs must be positive");
  if (input.document.length === 0) throw new FolioError("conversion_failed", "the document is empty");
  if (input.output !== undefined && input.output !== "pages" && input.output !== "pdf") throw new FolioError("invalid_request", `unknown output ${String(input.output)}`);
  if (input.output === "pdf" && input.pages) throw new FolioError("invalid_request", "a page selection cannot be combined with output pdf (the PDF holds every page)", { param: "pages" });
}

/** The error for a sandbox whose status says Failed, by the operator's reason. */
export function statusError(status: ConversionSandboxStatus, spec: Pick<ConversionSandboxSpec, "timeoutSeconds" | "resources">): FolioError {
  const reason = status.reason ?? "Unknown";
  const said = status.message ? `: ${status.message.slice(0, 300)}` : "";
  switch (reason) {
    case "DeadlineExceeded":
      return new FolioError("timeout", `the conversion did not finish within its limit of ${spec.timeoutSeconds}s`);
    case "OOMKilled": {
      const limit = spec.resources?.memory;
      return new FolioError(
        "conversion_failed",
        `the document needs more memory than the sandbox's memory limit${limit ? ` of ${limit}` : ""} allows (the sandbox was OOM-killed)`,
      );
    }
    case "ConversionFailed": {
      // The operator writes "<errorCode>: <message>" from the termination message.
      const code = /^([a-z_]+)(?::|$)/.exec(status.message ?? "")?.[1];
      if (code === "timeout") return new FolioError("timeout", `the conversion ran out of time${said}`);
      if (code === "broker_error") return new FolioError("internal_error", `the sandbox could not exchange the document with the broker${said}`, { retryable: true });
      return new FolioError("conversion_failed", `the conversion failed${said}`);
    }
    default:
      // ImagePullFailed, PodFailed, JobFailed, anything new: the sandbox could not run, which says nothing about the document.
      return new FolioError("internal_error", `the sandbox could not run (${reason})${said}`, { retryable: true });
  }
}

/** The answer from a broker result whose outcome is ok: its pages, or with output `pdf` its PDF (no page). */
function sandboxResult(result: BrokerResult, computeMillis: number): SandboxResult {
  return { pages: result.pages, pageCount: result.pageCount, ...(result.pdf ? { pdf: result.pdf } : {}), documentPageCount: result.documentPageCount, computeMillis };
}

/** What a log line says of a PDF result (nothing for pages). */
function pdfLog(result: BrokerResult): { pdfBytes?: number; documentPageCount?: number } {
  return result.pdf ? { pdfBytes: result.pdf.length, documentPageCount: result.documentPageCount } : {};
}

/** The error for a result whose outcome is not ok (what the program inside reported). */
function outcomeError(result: BrokerResult): FolioError {
  return jobError(result.outcome.errorCode, result.outcome.errorMessage);
}

function createError(err: unknown, namespace: string): FolioError {
  const status = httpStatus(err);
  const text = errorText(err);
  if (status === 403) return new FolioError("internal_error", `not allowed to create ConversionSandboxes in namespace ${namespace} (RBAC): ${text}`, { cause: err });
  if (status === 404) return new FolioError("internal_error", `cannot create ConversionSandboxes in namespace ${namespace}: is the CRD installed and the namespace there? ${text}`, { cause: err });
  if (status === 422 || status === 400) return new FolioError("internal_error", `the API server refused the ConversionSandbox: ${text}`, { cause: err });
  // No answer, 409 (a name collision of 64 random bits), 429 or 5xx: the same request can succeed later.
  return new FolioError("internal_error", `could not create the ConversionSandbox: ${text}`, { cause: err, retryable: true });
}

/** The HTTP status of a client-node error (ApiException.code, or a watch error's statusCode). */
function httpStatus(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e?.code === "number") return e.code;
  if (typeof e?.statusCode === "number") return e.statusCode;
  return undefined;
}

/** A short description of a client-node error: the Status message when the server sent one. */
function errorText(err: unknown): string {
  const body = (err as { body?: unknown })?.body;
  if (typeof body === "string") {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === "string") return parsed.message.slice(0, 300);
    } catch {
      // not JSON: fall through to the error's own message
    }
  }
  if (body && typeof body === "object" && typeof (body as { message?: unknown }).message === "string") return (body as { message: string }).message.slice(0, 300);
  return (err instanceof Error ? err.message : String(err)).split("\n")[0]?.slice(0, 300) ?? "";
}

/** What the backend knows of its resource. */
interface SandboxState {
  status: ConversionSandboxStatus | undefined;
  deleted: boolean;
}

/**
 * Follows one ConversionSandbox through watches (see the module comment).
 * `until` resolves once a predicate holds for the latest state.
 */
class SandboxWatch {
  private state: SandboxState = { status: undefined, deleted: false };
  private readonly waiters = new Set<{ test: (s: SandboxState) => boolean; resolve: (s: SandboxState) => void }>();
  private readonly stopped = new AbortController();
  private controller: AbortController | undefined;

  constructor(
    private readonly o: { api: CustomObjectsApi; watcher: Watch; namespace: string; name: string; resourceVersion: string | undefined; log: Logger },
  ) {
    void this.run();
  }

  until(test: (s: SandboxState) => boolean): Promise<SandboxState> {
    if (test(this.state)) return Promise.resolve(this.state);
    return new Promise((resolve) => this.waiters.add({ test, resolve }));
  }

  stop(): void {
    this.stopped.abort();
    this.controller?.abort();
    this.waiters.clear();
  }

  private apply(next: SandboxState): void {
    this.state = next;
    for (const w of [...this.waiters]) {
      if (w.test(next)) {
        this.waiters.delete(w);
        w.resolve(next);
      }
    }
  }

  private async run(): Promise<void> {
    let resourceVersion = this.o.resourceVersion;
    let failures = 0;
    while (!this.stopped.signal.aborted && !this.state.deleted) {
      const ended = await this.watchOnce(resourceVersion);
      if (this.stopped.signal.aborted || this.state.deleted) return;
      resourceVersion = ended.resourceVersion ?? resourceVersion;
      failures = ended.error === undefined ? 0 : failures + 1;
      if (failures > 0) {
        const level = failures > 3 ? "warn" : "debug";
        this.o.log[level]({ error: errorText(ended.error), failures }, "ConversionSandbox watch ended; reading it again");
        await sleep(WATCH_BACKOFF_MS[Math.min(failures, WATCH_BACKOFF_MS.length) - 1], undefined, { signal: this.stopped.signal }).catch(() => undefined);
        if (this.stopped.signal.aborted) return;
      }
      // Events may have been missed while no watch was open: read the object
      // again. A LIST, not a GET: a GET answers the object's own
      // resourceVersion, which a compaction may have made too old to watch
      // from (410 again, forever); a LIST answers the current one.
      try {
        const list = (await this.o.api.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: this.o.namespace,
          plural: PLURAL,
          fieldSelector: `metadata.name=${this.o.name}`,
        })) as { metadata?: { resourceVersion?: string }; items?: ConversionSandbox[] };
        const current = list.items?.find((o) => o.metadata.name === this.o.name);
        if (!current) {
          this.apply({ status: this.state.status, deleted: true });
          return;
        }
        this.apply({ status: current.status, deleted: false });
        resourceVersion = list.metadata?.resourceVersion ?? current.metadata.resourceVersion;
      } catch (err) {
        failures++;
        this.o.log.debug({ error: errorText(err) }, "could not read the ConversionSandbox");
      }
    }
  }

  /** One watch request, until the server or the client ends it. */
  private watchOnce(resourceVersion: string | undefined): Promise<{ error?: unknown; resourceVersion?: string }> {
    return new Promise((resolve) => {
      let latest = resourceVersion;
      let expired: unknown;
      const query = {
        fieldSelector: `metadata.name=${this.o.name}`,
        allowWatchBookmarks: true,
        ...(resourceVersion ? { resourceVersion } : {}),
      };
      const path = `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(this.o.namespace)}/${PLURAL}`;
      this.o.watcher
        .watch(
          path,
          query,
          (type: string, object: ConversionSandbox & { code?: number; message?: string }) => {
            if (type === "ERROR") {
              // A Status: 410 Expired after a compaction, or a server-side failure. The server ends the watch next.
              expired = Object.assign(new Error(object?.message ?? "watch error"), { statusCode: object?.code });
              if (object?.code === 410) latest = undefined;
              return;
            }
            if (object?.metadata?.resourceVersion) latest = object.metadata.resourceVersion;
            if (type === "BOOKMARK" || object?.metadata?.name !== this.o.name) return;
            if (type === "DELETED") this.apply({ status: object.status ?? this.state.status, deleted: true });
            else this.apply({ status: object.status, deleted: false });
          },
          (err: unknown) => resolve({ error: err ?? expired, ...(latest ? { resourceVersion: latest } : {}) }),
        )
        .then(
          (controller) => {
            this.controller = controller;
            if (this.stopped.signal.aborted) controller.abort();
          },
          (err: unknown) => resolve({ error: err }),
        );
    });
  }
}
