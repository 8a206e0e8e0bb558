/**
 * A small Kubernetes REST client: the few verbs the operator uses, on raw
 * JSON, behind one class (STYLE.md 3).
 *
 * Why not the generated clients of @kubernetes/client-node: they turn
 * timestamps into `Date`s on reads but not on watch events, and their
 * `Watch` aborts any stream silent for 30 s, which would override
 * FOLIO_WATCH_IDLE_SECONDS. The package still does what is hard to get right:
 * loading the kubeconfig or in-cluster credentials, tokens that rotate, client
 * certificates and the cluster CA (`KubeConfig.applySecurityAuthentication`),
 * and its model types describe the objects (with `Wire<T>` for timestamps as
 * the API sends them).
 */
import { RequestContext, type KubeConfig, type V1Job, type V1Lease, type V1NetworkPolicy, type V1Pod, type V1Status } from "@kubernetes/client-node";
import { fetch, type Dispatcher } from "undici";
import { FolioError } from "../platform/errors/index.ts";
import { GROUP, PLURAL, POOL_PLURAL, VERSION, type ConversionSandbox, type ConversionSandboxPool } from "./types.ts";

/** An API object as it travels as JSON: timestamps are RFC 3339 strings, not Dates. */
export type Wire<T> = T extends Date ? string : T extends (infer U)[] ? Wire<U>[] : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;
export type Job = Wire<V1Job>;
export type Pod = Wire<V1Pod>;
export type NetworkPolicy = Wire<V1NetworkPolicy>;
export type Lease = Wire<V1Lease>;

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
}
export interface KubeObject {
  metadata?: ObjectMeta;
}

/** A resource the operator touches: where it lives in the API. */
export interface Resource {
  group: string;
  version: string;
  plural: string;
}
export const RESOURCES = Object.freeze({
  conversionsandboxes: { group: GROUP, version: VERSION, plural: PLURAL },
  conversionsandboxpools: { group: GROUP, version: VERSION, plural: POOL_PLURAL },
  jobs: { group: "batch", version: "v1", plural: "jobs" },
  pods: { group: "", version: "v1", plural: "pods" },
  networkpolicies: { group: "networking.k8s.io", version: "v1", plural: "networkpolicies" },
  leases: { group: "coordination.k8s.io", version: "v1", plural: "leases" },
} satisfies Record<string, Resource>);
export type ResourceName = keyof typeof RESOURCES;

export interface ObjectTypes {
  conversionsandboxes: ConversionSandbox;
  conversionsandboxpools: ConversionSandboxPool;
  jobs: Job;
  pods: Pod;
  networkpolicies: NetworkPolicy;
  leases: Lease;
}

/**
 * Statuses after which the same request may succeed unchanged (STYLE.md 5).
 * 0 is a request that got no answer at all.
 */
const RETRYABLE_STATUS: Record<number, string> = {
  0: "no answer (connection refused or reset, timeout): the API server may be restarting",
  409: "conflict: the object changed since it was read; read it again and retry",
  429: "too many requests: API priority and fairness is throttling this client",
  500: "internal error, often a transient etcd failure",
  502: "bad gateway: a proxy in front of the API server lost it",
  503: "unavailable: the API server is starting or shedding load",
  504: "gateway timeout",
};

/** A request the API server refused or never answered. */
export class KubeApiError extends FolioError {
  /** HTTP status, 0 when there was no response. */
  readonly status: number;
  /** The Status object's reason: NotFound, AlreadyExists, Conflict, Expired, Invalid, Forbidden, ... */
  readonly reason: string;

  constructor(status: number, reason: string, message: string, cause?: unknown) {
    super("upstream_error", message, { retryable: status in RETRYABLE_STATUS, cause });
    this.name = "KubeApiError";
    this.status = status;
    this.reason = reason;
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof KubeApiError && err.status === 404;
export const isConflict = (err: unknown): boolean => err instanceof KubeApiError && err.status === 409;
/** 410 Gone: the resourceVersion a watch resumes from is older than the API server's history. */
export const isGone = (err: unknown): boolean => err instanceof KubeApiError && err.status === 410;

/** A write was refused locally because this replica does not lead (see lease.ts). */
export class NotLeaderError extends Error {
  constructor(what: string) {
    super(`not the leader: refused to ${what}`);
    this.name = "NotLeaderError";
  }
}

export interface WatchEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export interface KubeClientOptions {
  /** Time limit of one non-watch request. */
  requestTimeoutMs?: number;
  /** Aborts every request of this client (a loop that is shutting down). */
  signal?: AbortSignal;
  /** Called before every request that writes; throws to refuse it (followers never write). */
  writeGuard?: (what: string) => void;
  userAgent?: string;
}

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

interface RequestOptions {
  query?: Record<string, string | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

export class KubeClient {
  private readonly timeoutMs: number;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly options: KubeClientOptions = {},
    /** Shared by the clients derived from this one, so they reuse one connection pool. */
    private readonly shared: { dispatcher?: Dispatcher } = {},
  ) {
    this.timeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /** The same client refusing every write for which `guard` throws. */
  guarded(guard: (what: string) => void): KubeClient {
    return new KubeClient(this.kubeConfig, { ...this.options, writeGuard: guard }, this.shared);
  }

  /** The same client with every request also aborted by `signal`. */
  withSignal(signal: AbortSignal): KubeClient {
    return new KubeClient(this.kubeConfig, { ...this.options, signal }, this.shared);
  }

  path(resource: ResourceName, namespace: string, name?: string, subresource?: string): string {
    const r: Resource = RESOURCES[resource];
    let path = `${r.group ? `/apis/${r.group}` : "/api"}/${r.version}/namespaces/${encodeURIComponent(namespace)}/${r.plural}`;
    if (name !== undefined) path += `/${encodeURIComponent(name)}`;
    if (subresource) path += `/${subresource}`;
    return path;
  }

  /** The object, or undefined when it does not exist. */
  async get<R extends ResourceName>(resource: R, namespace: string, name: string): Promise<ObjectTypes[R] | undefined> {
    try {
      return await this.request<ObjectTypes[R]>("GET", this.path(resource, namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list<R extends ResourceName>(resource: R, namespace: string, labelSelector?: string): Promise<ListResult<ObjectTypes[R]>> {
    const list = await this.request<{ items?: ObjectTypes[R][]; metadata?: { resourceVersion?: string } }>("GET", this.path(resource, namespace), {
      query: { labelSelector },
    });
    return { items: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? "" };
  }

  create<R extends ResourceName>(resource: R, namespace: string, body: unknown): Promise<ObjectTypes[R]> {
    return this.request("POST", this.path(resource, namespace), { body });
  }

  /** PUT: fails with 409 when `body.metadata.resourceVersion` is not the current one. */
  replace<R extends ResourceName>(resource: R, namespace: string, name: string, body: unknown, subresource?: string): Promise<ObjectTypes[R]> {
    return this.request("PUT", this.path(resource, namespace, name, subresource), { body });
  }

  /** JSON merge patch (RFC 7386). */
  mergePatch<R extends ResourceName>(resource: R, namespace: string, name: string, patch: unknown, subresource?: string): Promise<ObjectTypes[R]> {
    return this.request("PATCH", this.path(resource, namespace, name, subresource), { body: patch, contentType: "application/merge-patch+json" });
  }

  /** Deletes; false when the object was already gone. */
  async delete(resource: ResourceName, namespace: string, name: string, propagationPolicy?: "Background" | "Foreground" | "Orphan"): Promise<boolean> {
    try {
      await this.request("DELETE", this.path(resource, namespace, name), {
        body: { apiVersion: "v1", kind: "DeleteOptions", ...(propagationPolicy ? { propagationPolicy } : {}) },
        query: { propagationPolicy },
      });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Opens a watch and yields its events until the server ends the stream or
   * `signal` aborts. An ERROR event is thrown as a KubeApiError (410 for a
   * resourceVersion too old). No inactivity timeout here: the caller's
   * watchdog decides how long silence may last.
   */
  async *watch<T>(
    resource: ResourceName,
    namespace: string,
    query: { resourceVersion: string; labelSelector?: string; timeoutSeconds: number },
    signal: AbortSignal,
    onOpen?: () => void,
  ): AsyncGenerator<WatchEvent<T>> {
    const response = await this.send("GET", this.path(resource, namespace), {
      signal: this.options.signal ? AbortSignal.any([signal, this.options.signal]) : signal,
      query: {
        watch: "true",
        allowWatchBookmarks: "true",
        resourceVersion: query.resourceVersion,
        labelSelector: query.labelSelector,
        timeoutSeconds: String(query.timeoutSeconds),
      },
    });
    onOpen?.();
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of response.body) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (!line) continue;
        const event = parseWatchLine<T>(line);
        if (event.type === "ERROR") {
          const status = event.object as V1Status;
          throw new KubeApiError(status.code ?? 500, status.reason ?? "WatchError", `watch ${resource}: ${status.message ?? "error event"}`);
        }
        yield event;
      }
    }
  }

  private async request<T>(method: Method, path: string, options: RequestOptions = {}): Promise<T> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = this.options.signal ? AbortSignal.any([timeout, this.options.signal]) : timeout;
    const response = await this.send(method, path, { ...options, signal });
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      if (this.options.signal?.aborted) throw this.options.signal.reason;
      throw new KubeApiError(0, "NoResponse", `${method} ${path}: the answer was cut off: ${err instanceof Error ? err.message : String(err)}`, err);
    }
    return (text ? JSON.parse(text) : {}) as T;
  }

  private async send(method: Method, path: string, options: RequestOptions) {
    if (method !== "GET") this.options.writeGuard?.(`${method} ${path}`);
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new KubeApiError(0, "NoCluster", "the kubeconfig has no current cluster");
    const url = new URL(cluster.server.replace(/\/+$/, "") + path);
    for (const [key, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(key, value);
    const context = new RequestContext(url.toString(), method);
    await this.kubeConfig.applySecurityAuthentication(context);
    // KubeConfig builds a fresh undici Agent per call; keep the first so connections are reused.
    this.shared.dispatcher ??= context.getDispatcher();
    const dispatcher = this.shared.dispatcher;
    const headers: Record<string, string> = { ...context.getHeaders(), accept: "application/json" };
    if (this.options.userAgent) headers["user-agent"] = this.options.userAgent;
    if (options.body !== undefined) headers["content-type"] = options.contentType ?? "application/json";
    let response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: options.signal,
        ...(dispatcher ? { dispatcher } : {}),
      });
    } catch (err) {
      if (options.signal?.aborted && options.signal.reason instanceof Error && options.signal.reason.name !== "TimeoutError") throw options.signal.reason;
      throw new KubeApiError(0, "NoResponse", `${method} ${url.pathname}: ${err instanceof Error ? err.message : String(err)}`, err);
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    let status: V1Status = {};
    try {
      status = JSON.parse(text) as V1Status;
    } catch {
      // Not a Status object (a proxy's error page): keep the text as the message.
    }
    throw new KubeApiError(
      response.status,
      status.reason ?? response.statusText,
      `${method} ${url.pathname}: ${response.status} ${status.message ?? text.slice(0, 200)}`,
    );
  }
}

function parseWatchLine<T>(line: string): WatchEvent<T> {
  try {
    return JSON.parse(line) as WatchEvent<T>;
  } catch (err) {
    throw new KubeApiError(500, "BadWatchEvent", `watch: unparsable event ${JSON.stringify(line.slice(0, 100))}`, err);
  }
}

/** `name` of the controller owner reference of `object` with the given kind, if any. */
export function controllerOf(object: KubeObject, kind: string): { name: string; uid: string } | undefined {
  const ref = object.metadata?.ownerReferences?.find((r) => r.controller && r.kind === kind);
  return ref ? { name: ref.name, uid: ref.uid } : undefined;
}
