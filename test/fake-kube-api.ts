/**
 * TEST DOUBLE — never used in production.
 *
 * A fake Kubernetes API server on 127.0.0.1 (random port, plain HTTP, no
 * authentication). It stands in for a real kube-apiserver, which cannot run on
 * these machines (no Docker, no kind, no etcd), so that the operator and the
 * conversion backend can be tested through the real @kubernetes/client-node
 * 2.0.1. It implements only this part of the API, in memory:
 *
 * - namespaced `pods` (+ `/status`), `events` (core v1); `jobs` (+ `/status`,
 *   batch/v1); `networkpolicies` (networking.k8s.io/v1); `leases`
 *   (coordination.k8s.io/v1); `conversionsandboxes` and
 *   `conversionsandboxpools` (+ `/status`, folio.dev/v1alpha1, kinds
 *   ConversionSandbox and ConversionSandboxPool); LIST and WATCH also across
 *   namespaces (`/api/v1/pods`, `/apis/batch/v1/jobs`, ...);
 * - verbs create (with `generateName`), get, list (label and field selectors,
 *   `limit`/`continue`), update, patch (JSON patch, merge patch, a subset of
 *   strategic merge patch), delete (finalizers, preconditions, propagation
 *   policies and garbage collection through `ownerReferences`),
 *   deletecollection, and watch (replay from a resourceVersion, 410 Expired,
 *   bookmarks, `timeoutSeconds`);
 * - discovery (`/api`, `/api/v1`, `/apis`, `/apis/{group}[/{version}]`) so
 *   KubernetesObjectApi works, and `/version`.
 *
 * Where it knowingly differs from a real API server (kept in one place so the
 * operator's authors know what the tests do not prove):
 * - No admission, RBAC, managedFields, server-side apply (415), dryRun,
 *   OpenAPI schema validation or pruning of unknown fields. The only
 *   validation: names are RFC 1123 subdomains, pods have containers, Job
 *   templates have containers and restartPolicy Never/OnFailure, a create
 *   must not carry a resourceVersion (500, as etcd3's store answers), and no
 *   finalizer may be added to an object being deleted (422).
 * - Defaulting is limited to: pod status `{phase: "Pending"}` on create; Job
 *   `parallelism`, `completions`, `backoffLimit`, `completionMode`, `suspend`,
 *   `selector` and the controller labels on the template; `status` of
 *   kinds with a status subresource reset on create.
 * - Pods are deleted at once (as an unscheduled pod is): no graceful period,
 *   there is no kubelet. Controllers are absent except the optional Job
 *   controller below, which only creates the Pod (no `job-tracking`
 *   finalizer, no status beyond `active`/`startTime`): tests act as kubelet.
 * - Garbage collection is synchronous. `Background` deletes dependents right
 *   after the owner; `Foreground` deletes them before it (the owner does not
 *   wait for dependents held by their own finalizers); `Orphan` (or
 *   `orphanDependents=true`) removes the owner's reference from them. When no
 *   policy is given the fake cascades (Background) for every kind, although a
 *   real server ORPHANS the Pods of a batch/v1 Job deleted without a policy:
 *   the operator must send `propagationPolicy: "Background"` when deleting
 *   Jobs, and its tests can check that in `requests`.
 * - `application/strategic-merge-patch+json` is a JSON merge patch, except that
 *   the lists below (`STRATEGIC_LISTS`) merge by key like the real thing
 *   (`metadata.finalizers` as a set, `ownerReferences` by uid, containers and
 *   volumes by name, `status.conditions` by type); nested keyed lists (e.g.
 *   `env` in a container) are replaced, and `$patch`/`$setElementOrder`/
 *   `$deleteFromPrimitiveList` directives are rejected with 400. As on a real
 *   server, custom resources refuse strategic merge patch (415).
 * - LIST ignores `resourceVersion`/`resourceVersionMatch` (always the latest
 *   state) and a `continue` token does not pin a snapshot.
 * - A watch without `timeoutSeconds` stays open until the client or a test
 *   ends it (a real server closes after a random 30–60 min).
 *
 * What client-node 2.0.1 does against it (and against a real server), proven
 * in fake-kube-api.test.ts:
 * - KubeConfig: `kubeConfig()` below; an `http://` server needs
 *   `skipTLSVerify: true`, else every call throws "HTTP protocol is not
 *   allowed when skipTLSVerify is not set or false".
 * - PATCH: the typed APIs (CoreV1Api.patchNamespacedPod, CustomObjectsApi
 *   .patchNamespacedCustomObject, ...) send `application/json-patch+json` by
 *   default, so the body must be an array of RFC 6902 operations. Choose
 *   another type per call with the options argument:
 *   `api.patchNamespacedPod({ name, namespace, body }, setHeaderOptions("Content-Type", PatchStrategy.MergePatch))`.
 *   KubernetesObjectApi.patch takes the type as its 6th argument and
 *   defaults to strategic merge patch, which custom resources refuse (415).
 * - Failed calls throw `ApiException` with `code` (HTTP status) and `body`,
 *   the raw response TEXT: `JSON.parse(err.body).reason` is "NotFound",
 *   "AlreadyExists", "Conflict", "Invalid", ...
 * - Watch (`new Watch(kc).watch(path, query, callback, done)`): `done` is
 *   called once. A too-old resourceVersion (or compaction) arrives as
 *   `callback("ERROR", status)` with `status.code === 410`, then `done(null)`:
 *   not as an error, so the operator must look at ERROR events and re-list.
 *   An ERROR event with another code is followed by `done(null)` too. A
 *   refused watch (non-200) calls `done(err)` with `err.statusCode`; a dropped
 *   connection calls `done(TypeError("terminated"))`; `timeoutSeconds` ends
 *   with `done(null)`. The Watch aborts by itself, `done(DOMException
 *   TimeoutError)`, after 30 s without any data: ask for bookmarks
 *   (`allowWatchBookmarks: true`) on quiet resources.
 */
import { randomInt, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

export type FakeResource = "pods" | "jobs" | "networkpolicies" | "leases" | "events" | "conversionsandboxes" | "conversionsandboxpools";
export type KubeObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string; resourceVersion?: string; [k: string]: unknown };
  [k: string]: unknown;
};
export interface WatchEventRecord { type: "ADDED" | "MODIFIED" | "DELETED"; resource: FakeResource; object: KubeObject }
export interface FakeKubeApiOptions {
  /** When a Job is created, create its Pod like the Job controller does: name `<job>-<5 random [a-z0-9]>`, labels from the pod template plus `job-name`, `batch.kubernetes.io/job-name`, `controller-uid`, `batch.kubernetes.io/controller-uid`, an ownerReference (controller: true) to the Job, spec from the template, status {phase: "Pending"}; and set the Job's status.active=1, status.startTime. Default false. */
  jobController?: boolean;
  /** Interval of BOOKMARK events on watches that allow them. Default 1000 ms. */
  bookmarkIntervalMs?: number;
  /** Watch history kept for resourceVersion replays. Default 1000 events. */
  historySize?: number;
}
/** One request as received; `body` is the parsed JSON body when there was one. */
export interface RecordedRequest { method: string; path: string; query: Record<string, string>; contentType?: string; body?: unknown }
export interface FakeKubeApi {
  readonly url: string;
  /** A client-node KubeConfig for this server (cluster `fake`, user without credentials, context `fake` current, namespace `default`). */
  kubeConfig(): KubeConfig;
  /** Store access for tests acting as kubelet/controllers. Returned objects are deep copies. */
  get(resource: FakeResource, namespace: string, name: string): KubeObject | undefined;
  list(resource: FakeResource, namespace?: string): KubeObject[];
  /** Create or replace bypassing API rules (no conflict checks), bumps resourceVersion, emits ADDED/MODIFIED. uid, creationTimestamp and generation are kept from the stored object when absent; namespace defaults to `default`. Storing an object that has a deletionTimestamp and no finalizers deletes it (DELETED). */
  put(resource: FakeResource, object: KubeObject): KubeObject;
  /** Merges `status` into the object's status (deep merge of plain objects, arrays replaced, `null` removes a key), emits MODIFIED. Throws when missing. */
  setStatus(resource: FakeResource, namespace: string, name: string, status: Record<string, unknown>): KubeObject;
  /** Removes an object as a DELETE with Background propagation would (finalizers honoured). Throws when missing. */
  remove(resource: FakeResource, namespace: string, name: string): void;
  /** Subscribes to every change (after it is applied); returns an unsubscribe function. */
  onChange(listener: (event: WatchEventRecord) => void): () => void;
  /** Simulates etcd compaction: every resourceVersion up to now becomes too old (watches from it get 410), and every open watch is sent the 410 ERROR event and ended. Like the apiserver's compactor it writes a revision, so a LIST made afterwards returns a resourceVersion a watch can start from. */
  compact(): void;
  /** Ends every open watch abruptly (socket destroyed, as a dropped connection) — `mode: "drop"`; or with an ERROR event carrying a 500 Status — `mode: "error"`. */
  breakWatches(mode: "drop" | "error"): void;
  /** Stops sending anything on the watches open now (they stay open but silent, no bookmarks; events are held back) until resumed, when held events are flushed: to test a watchdog. Watches opened later are not silenced. */
  silenceWatches(silent: boolean): void;
  /** Number of watch requests currently open (by resource, or all). */
  openWatches(resource?: FakeResource): number;
  /** Every request received: method, path (no query), query as an object, and the content-type. */
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

type Obj = Record<string, unknown>;
type EventType = WatchEventRecord["type"];

interface ResourceDef {
  name: FakeResource;
  group: string;
  version: string;
  kind: string;
  singular: string;
  statusSubresource: boolean;
  /** Field selector labels besides metadata.name/namespace (as the real server's field label conversion funcs). */
  fieldLabels: string[];
  /** Real DELETE answers the deleted object for pods (ReturnDeletedObject), a Status for the others. */
  returnsDeletedObject: boolean;
  shortNames?: string[];
}

const DEFS: Record<FakeResource, ResourceDef> = {
  pods: {
    name: "pods", group: "", version: "v1", kind: "Pod", singular: "pod", statusSubresource: true, returnsDeletedObject: true, shortNames: ["po"],
    fieldLabels: ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
  },
  events: {
    name: "events", group: "", version: "v1", kind: "Event", singular: "event", statusSubresource: false, returnsDeletedObject: false, shortNames: ["ev"],
    fieldLabels: ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent", "type"],
  },
  jobs: { name: "jobs", group: "batch", version: "v1", kind: "Job", singular: "job", statusSubresource: true, returnsDeletedObject: false, fieldLabels: ["status.successful"] },
  networkpolicies: { name: "networkpolicies", group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", singular: "networkpolicy", statusSubresource: false, returnsDeletedObject: false, fieldLabels: [], shortNames: ["netpol"] },
  leases: { name: "leases", group: "coordination.k8s.io", version: "v1", kind: "Lease", singular: "lease", statusSubresource: false, returnsDeletedObject: false, fieldLabels: [] },
  conversionsandboxes: { name: "conversionsandboxes", group: "folio.dev", version: "v1alpha1", kind: "ConversionSandbox", singular: "conversionsandbox", statusSubresource: true, returnsDeletedObject: false, fieldLabels: [], shortNames: ["csb"] },
  conversionsandboxpools: { name: "conversionsandboxpools", group: "folio.dev", version: "v1alpha1", kind: "ConversionSandboxPool", singular: "conversionsandboxpool", statusSubresource: true, returnsDeletedObject: false, fieldLabels: [], shortNames: ["csbp"] },
};
const ALL_DEFS = Object.values(DEFS);
const CUSTOM_GROUPS = new Set(["folio.dev"]);
const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
/** k8s.io/apiserver names.SimpleNameGenerator: no vowels (no accidental words), no look-alike 0/1/3. */
const NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const apiVersionOf = (d: ResourceDef) => (d.group ? `${d.group}/${d.version}` : d.version);
/** "pods", "jobs.batch": how the real server names a resource in messages. */
const qualified = (d: ResourceDef) => (d.group ? `${d.name}.${d.group}` : d.name);
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => structuredClone(v);
const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
const finalizersOf = (o: KubeObject): string[] => (Array.isArray(o.metadata.finalizers) ? o.metadata.finalizers.filter((f): f is string => typeof f === "string") : []);
const ownerRefsOf = (o: KubeObject): Obj[] => (Array.isArray(o.metadata.ownerReferences) ? o.metadata.ownerReferences.filter(isObj) : []);

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

/** A Kubernetes `Status` failure; `handle` answers it with its code. */
export class KubeApiError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string, readonly details?: Obj) {
    super(message);
  }
  status(): Obj {
    // An empty reason is StatusReasonUnknown, which the real server omits (omitempty).
    return {
      kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: this.message,
      ...(this.reason ? { reason: this.reason } : {}), ...(this.details ? { details: this.details } : {}), code: this.code,
    };
  }
}
const badRequest = (message: string) => new KubeApiError(400, "BadRequest", message);
const notFound = (d: ResourceDef, name: string) => new KubeApiError(404, "NotFound", `${qualified(d)} "${name}" not found`, { name, group: d.group, kind: d.name });
const pathNotFound = () => new KubeApiError(404, "NotFound", "the server could not find the requested resource", {});
const conflict = (d: ResourceDef, name: string, why = "the object has been modified; please apply your changes to the latest version and try again") =>
  new KubeApiError(409, "Conflict", `Operation cannot be fulfilled on ${qualified(d)} "${name}": ${why}`, { name, group: d.group, kind: d.name });
const invalid = (d: ResourceDef, name: string, causes: { field: string; message: string }[]) =>
  new KubeApiError(422, "Invalid", `${d.kind}${d.group ? "." + d.group : ""} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(", ")}`, {
    name, group: d.group, kind: d.kind, causes: causes.map((c) => ({ reason: "FieldValueInvalid", message: c.message, field: c.field })),
  });
/** What the real server answers when a JSON patch cannot be applied (handlers/patch.go: NewGenericServerResponse 422). */
const patchFailed = (cause: string) =>
  new KubeApiError(422, "Invalid", "the server rejected our request due to an error in our request", { causes: [{ reason: "UnexpectedServerResponse", message: cause }] });

// ---- selectors -------------------------------------------------------------

interface LabelRequirement { key: string; op: "=" | "!=" | "exists" | "!exists" | "in" | "notin"; values: string[] }
interface FieldRequirement { field: string; op: "=" | "!="; value: string }

/** Splits on commas outside parentheses (`a in (x,y),b`). */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "(") depth++;
    else if (s[i] === ")") depth--;
    else if (s[i] === "," && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== "");
}

function parseLabelSelector(selector: string): LabelRequirement[] {
  return splitTopLevel(selector).map((part) => {
    let m = /^([\w./-]+)\s+(in|notin)\s+\(([^()]*)\)$/.exec(part);
    if (m) return { key: m[1]!, op: m[2] as "in" | "notin", values: m[3]!.split(",").map((v) => v.trim()) };
    m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(part);
    if (m) return { key: m[1]!, op: m[2] === "!=" ? "!=" : "=", values: [m[3]!] };
    m = /^(!?)([\w./-]+)$/.exec(part);
    if (m) return { key: m[2]!, op: m[1] ? "!exists" : "exists", values: [] };
    throw badRequest(`unable to parse requirement: ${JSON.stringify(part)}`);
  });
}

function parseFieldSelector(d: ResourceDef, selector: string): FieldRequirement[] {
  return splitTopLevel(selector).map((part) => {
    const m = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${part}'`);
    const field = m[1]!;
    if (field !== "metadata.name" && field !== "metadata.namespace" && !d.fieldLabels.includes(field)) {
      throw badRequest(`field label not supported: ${field}`);
    }
    return { field, op: m[2] === "!=" ? "!=" : "=", value: m[3]! };
  });
}

function matchesLabels(o: KubeObject, reqs: LabelRequirement[]): boolean {
  const labels = isObj(o.metadata.labels) ? o.metadata.labels : {};
  return reqs.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    const value = has ? String(labels[r.key]) : undefined;
    switch (r.op) {
      case "=": return value === r.values[0];
      case "!=": return value !== r.values[0];
      case "exists": return has;
      case "!exists": return !has;
      case "in": return value !== undefined && r.values.includes(value);
      case "notin": return value === undefined || !r.values.includes(value);
    }
  });
}

function matchesFields(o: KubeObject, reqs: FieldRequirement[]): boolean {
  return reqs.every((r) => {
    let cur: unknown = o;
    for (const k of r.field.split(".")) cur = isObj(cur) ? cur[k] : undefined;
    const value = cur === undefined || cur === null ? "" : String(cur);
    return r.op === "=" ? value === r.value : value !== r.value;
  });
}

// ---- patches ---------------------------------------------------------------

/** RFC 7386 JSON merge patch: objects merge, anything else replaces, null removes. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch);
  const out: Obj = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Lists that strategic merge patch merges instead of replacing: path → merge key ("" = a set of scalars). */
const STRATEGIC_LISTS: Record<string, string> = {
  "metadata.finalizers": "",
  "metadata.ownerReferences": "uid",
  "spec.containers": "name",
  "spec.initContainers": "name",
  "spec.volumes": "name",
  "spec.template.spec.containers": "name",
  "spec.template.spec.initContainers": "name",
  "spec.template.spec.volumes": "name",
  "status.conditions": "type",
};

function strategicMerge(target: unknown, patch: unknown, path: string): unknown {
  if (!isObj(patch)) return clone(patch);
  const out: Obj = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith("$")) throw badRequest(`fake-kube-api: strategic merge patch directive ${k} is not implemented; use a JSON patch or a merge patch`);
    const at = path ? `${path}.${k}` : k;
    const mergeKey = STRATEGIC_LISTS[at];
    const current = out[k];
    if (v === null) delete out[k];
    else if (mergeKey !== undefined && Array.isArray(v) && Array.isArray(current)) out[k] = mergeList(current, v, mergeKey, at);
    else out[k] = strategicMerge(current, v, at);
  }
  return out;
}

function mergeList(current: unknown[], patch: unknown[], mergeKey: string, path: string): unknown[] {
  const out = [...current];
  for (const item of patch) {
    const i = mergeKey === ""
      ? out.findIndex((c) => deepEqual(c, item))
      : out.findIndex((c) => isObj(c) && isObj(item) && c[mergeKey] === item[mergeKey]);
    if (i < 0) out.push(clone(item));
    else if (mergeKey !== "") out[i] = strategicMerge(out[i], item, `${path}[]`);
  }
  return out;
}

function parsePointer(pointer: unknown): string[] {
  if (typeof pointer !== "string" || (pointer !== "" && !pointer.startsWith("/"))) throw patchFailed(`invalid JSON pointer: ${JSON.stringify(pointer)}`);
  return pointer === "" ? [] : pointer.slice(1).split("/").map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
}

function arrayIndex(token: string, limit: number, pointer: string[]): number {
  if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= limit) throw patchFailed(`index out of bounds at /${pointer.join("/")}`);
  return Number(token);
}

function valueAt(root: unknown, path: string[]): unknown {
  let cur = root;
  for (const token of path) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(token, cur.length, path)];
    else if (isObj(cur) && Object.hasOwn(cur, token)) cur = cur[token];
    else throw patchFailed(`doc is missing path: "/${path.join("/")}"`);
  }
  return cur;
}

function setAt(root: unknown, path: string[], value: unknown, mode: "add" | "replace"): unknown {
  if (path.length === 0) return value;
  const parent = valueAt(root, path.slice(0, -1));
  const token = path.at(-1)!;
  if (Array.isArray(parent)) {
    if (mode === "add") parent.splice(token === "-" ? parent.length : arrayIndex(token, parent.length + 1, path), 0, value);
    else parent[arrayIndex(token, parent.length, path)] = value;
  } else if (isObj(parent)) {
    if (mode === "replace" && !Object.hasOwn(parent, token)) throw patchFailed(`replace operation does not apply: doc is missing key: /${path.join("/")}`);
    parent[token] = value;
  } else {
    throw patchFailed(`doc is missing path: "/${path.join("/")}"`);
  }
  return root;
}

function removeAt(root: unknown, path: string[]): unknown {
  const parent = valueAt(root, path.slice(0, -1));
  const token = path.at(-1);
  if (token === undefined) throw patchFailed("cannot remove the whole document");
  if (Array.isArray(parent)) parent.splice(arrayIndex(token, parent.length, path), 1);
  else if (isObj(parent) && Object.hasOwn(parent, token)) delete parent[token];
  else throw patchFailed(`remove operation does not apply: doc is missing path: "/${path.join("/")}"`);
  return root;
}

/** RFC 6902 JSON patch (add, remove, replace, move, copy, test) applied to a copy of `doc`. */
function jsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw badRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch");
  let root = clone(doc);
  for (const op of ops) {
    if (!isObj(op)) throw patchFailed(`invalid operation: ${JSON.stringify(op)}`);
    const path = parsePointer(op.path);
    switch (op.op) {
      case "add": root = setAt(root, path, clone(op.value), "add"); break;
      case "replace": root = setAt(root, path, clone(op.value), "replace"); break;
      case "remove": root = removeAt(root, path); break;
      case "copy": root = setAt(root, path, clone(valueAt(root, parsePointer(op.from))), "add"); break;
      case "move": {
        const from = parsePointer(op.from);
        const value = valueAt(root, from);
        root = setAt(removeAt(root, from), path, value, "add");
        break;
      }
      case "test":
        if (!deepEqual(valueAt(root, path), op.value)) throw patchFailed(`testing value /${path.join("/")} failed: test failed`);
        break;
      default: throw patchFailed(`Unexpected kind: ${String(op.op)}`);
    }
  }
  return root;
}

// ---- the server ------------------------------------------------------------

interface HistoryEntry { rv: number; type: EventType; resource: FakeResource; object: KubeObject; prev?: KubeObject }

interface WatchStream {
  def: ResourceDef;
  namespace?: string;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  res: ServerResponse;
  /** resourceVersion of the newest event this watch has been given. */
  lastRv: number;
  silent: boolean;
  held: string[];
  timers: NodeJS.Timeout[];
}

const WATCH_TRUE = new Set(["1", "t", "T", "true", "TRUE", "True"]);

class FakeKubeApiServer implements FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  url = "";
  readonly server: Server;
  private rv = 0;
  /** Smallest resourceVersion a watch may still start from (everything after it is in `history`). */
  private floor = 0;
  private readonly history: HistoryEntry[] = [];
  private readonly stores: Record<FakeResource, Map<string, KubeObject>> = {
    pods: new Map(), jobs: new Map(), networkpolicies: new Map(), leases: new Map(), events: new Map(), conversionsandboxes: new Map(), conversionsandboxpools: new Map(),
  };
  private readonly watches = new Set<WatchStream>();
  private readonly listeners = new Set<(event: WatchEventRecord) => void>();

  constructor(private readonly options: Required<FakeKubeApiOptions>) {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  kubeConfig(): KubeConfig {
    return plainHttpKubeConfig(this.url, "default");
  }

  get(resource: FakeResource, namespace: string, name: string): KubeObject | undefined {
    const o = this.stores[resource].get(`${namespace}/${name}`);
    return o && clone(o);
  }

  list(resource: FakeResource, namespace?: string): KubeObject[] {
    return this.select(DEFS[resource], namespace, [], []).map(clone);
  }

  put(resource: FakeResource, object: KubeObject): KubeObject {
    const def = DEFS[resource];
    const next = clone(object);
    next.apiVersion ||= apiVersionOf(def);
    next.kind ||= def.kind;
    next.metadata.namespace ??= "default";
    const current = this.stores[resource].get(keyOf(next));
    next.metadata.uid ??= current?.metadata.uid ?? randomUUID();
    next.metadata.creationTimestamp ??= current?.metadata.creationTimestamp ?? now();
    next.metadata.generation ??= current?.metadata.generation ?? 1;
    if (current && next.metadata.deletionTimestamp && finalizersOf(next).length === 0) return this.erase(resource, current);
    return this.commit(resource, next, current);
  }

  setStatus(resource: FakeResource, namespace: string, name: string, status: Record<string, unknown>): KubeObject {
    const current = this.require(DEFS[resource], namespace, name);
    const next = clone(current);
    next.status = clone(mergePatch(current.status, status));
    return this.commit(resource, next, current);
  }

  remove(resource: FakeResource, namespace: string, name: string): void {
    this.deleteObject(DEFS[resource], namespace, name, "Background");
  }

  onChange(listener: (event: WatchEventRecord) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  compact(): void {
    // The apiserver's compactor writes a key to etcd, so compaction itself takes a revision.
    this.rv++;
    this.floor = this.rv;
    this.history.length = 0;
    for (const w of this.watches) this.endWatch(w, this.expiredEvent(w.lastRv));
  }

  breakWatches(mode: "drop" | "error"): void {
    for (const w of [...this.watches]) {
      this.stopWatch(w);
      if (mode === "drop") w.res.socket?.destroy();
      else {
        const status = new KubeApiError(500, "InternalError", "fake-kube-api: watch broken by breakWatches(\"error\")").status();
        this.endWatch(w, { type: "ERROR", object: status });
      }
    }
  }

  silenceWatches(silent: boolean): void {
    for (const w of this.watches) {
      w.silent = silent;
      if (!silent) for (const line of w.held.splice(0)) w.res.write(line);
    }
  }

  openWatches(resource?: FakeResource): number {
    return [...this.watches].filter((w) => resource === undefined || w.def.name === resource).length;
  }

  async close(): Promise<void> {
    for (const w of [...this.watches]) this.endWatch(w);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  // ---- storage and events ----

  private require(def: ResourceDef, namespace: string, name: string): KubeObject {
    const o = this.stores[def.name].get(`${namespace}/${name}`);
    if (!o) throw notFound(def, name);
    return o;
  }

  private select(def: ResourceDef, namespace: string | undefined, labels: LabelRequirement[], fields: FieldRequirement[]): KubeObject[] {
    return [...this.stores[def.name].values()]
      .filter((o) => (namespace === undefined || o.metadata.namespace === namespace) && matchesLabels(o, labels) && matchesFields(o, fields))
      .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
  }

  /** Stores `next` (replacing `prev`, if any) under a new resourceVersion and emits ADDED or MODIFIED. */
  private commit(resource: FakeResource, next: KubeObject, prev: KubeObject | undefined): KubeObject {
    next.metadata.resourceVersion = String(++this.rv);
    this.stores[resource].set(keyOf(next), next);
    this.emit(prev ? "MODIFIED" : "ADDED", resource, next, prev);
    return clone(next);
  }

  /** Removes a stored object; the DELETED event carries its last stored state with a new resourceVersion. Then collects its dependents. */
  private erase(resource: FakeResource, stored: KubeObject): KubeObject {
    this.stores[resource].delete(keyOf(stored));
    const last = clone(stored);
    last.metadata.resourceVersion = String(++this.rv);
    this.emit("DELETED", resource, last, stored);
    this.collectGarbage(stored);
    return clone(last);
  }

  private emit(type: EventType, resource: FakeResource, object: KubeObject, prev: KubeObject | undefined): void {
    const entry: HistoryEntry = { rv: this.rv, type, resource, object: clone(object), ...(prev ? { prev: clone(prev) } : {}) };
    this.history.push(entry);
    while (this.history.length > this.options.historySize) this.floor = Math.max(this.floor, this.history.shift()!.rv);
    for (const w of this.watches) this.deliver(w, entry);
    for (const listener of [...this.listeners]) listener({ type, resource, object: clone(object) });
    if (type === "ADDED" && resource === "jobs" && this.options.jobController) this.runJobController(object);
  }

  private dependentsOf(owner: KubeObject): [ResourceDef, KubeObject][] {
    return ALL_DEFS.flatMap((def) => [...this.stores[def.name].values()]
      .filter((o) => o.metadata.namespace === owner.metadata.namespace && ownerRefsOf(o).some((r) => r.uid === owner.metadata.uid))
      .map((o): [ResourceDef, KubeObject] => [def, o]));
  }

  private uidExists(uid: unknown): boolean {
    return ALL_DEFS.some((def) => [...this.stores[def.name].values()].some((o) => o.metadata.uid === uid));
  }

  /** Drops the owner's reference from a dependent (what the garbage collector does to orphans). */
  private dropOwnerRef(def: ResourceDef, dependent: KubeObject, ownerUid: unknown): void {
    const next = clone(dependent);
    const refs = ownerRefsOf(next).filter((r) => r.uid !== ownerUid);
    if (refs.length > 0) next.metadata.ownerReferences = refs;
    else delete next.metadata.ownerReferences;
    this.commit(def.name, next, dependent);
  }

  /** The garbage collector, after `owner` is gone: deletes dependents that have no other live owner. */
  private collectGarbage(owner: KubeObject): void {
    for (const [def, dependent] of this.dependentsOf(owner)) {
      const current = this.stores[def.name].get(keyOf(dependent));
      if (!current) continue;
      const otherOwners = ownerRefsOf(current).filter((r) => r.uid !== owner.metadata.uid && this.uidExists(r.uid));
      if (otherOwners.length > 0) this.dropOwnerRef(def, current, owner.metadata.uid);
      else this.deleteObject(def, current.metadata.namespace ?? "", current.metadata.name, "Background");
    }
  }

  private deleteObject(def: ResourceDef, namespace: string, name: string, policy: string, preconditions?: unknown): { object: KubeObject; gone: boolean } {
    const current = this.require(def, namespace, name);
    if (isObj(preconditions)) {
      for (const field of ["uid", "resourceVersion"] as const) {
        const want = preconditions[field];
        if (typeof want === "string" && want !== current.metadata[field]) {
          throw conflict(def, name, `Precondition failed: ${field === "uid" ? "UID" : "ResourceVersion"} in precondition: ${want}, ${field === "uid" ? "UID" : "ResourceVersion"} in object meta: ${String(current.metadata[field])}`);
        }
      }
    }
    if (current.metadata.deletionTimestamp) return { object: clone(current), gone: false };
    if (policy === "Orphan") for (const [d, o] of this.dependentsOf(current)) this.dropOwnerRef(d, o, current.metadata.uid);
    if (policy === "Foreground") {
      for (const [d, o] of this.dependentsOf(current)) {
        if (this.stores[d.name].has(keyOf(o))) this.deleteObject(d, namespace, o.metadata.name, "Foreground");
      }
    }
    if (finalizersOf(current).length === 0) return { object: this.erase(def.name, current), gone: true };
    // Store.Delete → markAsDeleting: the object stays until its finalizers are removed.
    const next = clone(current);
    next.metadata.deletionTimestamp = now();
    next.metadata.deletionGracePeriodSeconds = 0;
    if (typeof next.metadata.generation === "number") next.metadata.generation += 1;
    return { object: this.commit(def.name, next, current), gone: false };
  }

  private runJobController(job: KubeObject): void {
    const spec = isObj(job.spec) ? job.spec : {};
    if (spec.suspend === true) return;
    const template = isObj(spec.template) ? spec.template : {};
    const templateMeta = isObj(template.metadata) ? template.metadata : {};
    const { name, namespace = "default", uid } = job.metadata;
    const pod: KubeObject = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: this.freshName("pods", namespace, `${name}-`),
        generateName: `${name}-`,
        namespace,
        labels: {
          ...(isObj(templateMeta.labels) ? templateMeta.labels : {}),
          "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name, "controller-uid": uid, "job-name": name,
        },
        ...(isObj(templateMeta.annotations) ? { annotations: clone(templateMeta.annotations) } : {}),
        ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name, uid, controller: true, blockOwnerDeletion: true }],
        uid: randomUUID(),
        creationTimestamp: now(),
        generation: 1,
      },
      spec: clone(template.spec ?? {}),
      status: { phase: "Pending" },
    };
    this.commit("pods", pod, undefined);
    const current = this.stores.jobs.get(keyOf(job));
    if (!current) return;
    const next = clone(current);
    next.status = { ...(isObj(current.status) ? current.status : {}), active: 1, startTime: now() };
    this.commit("jobs", next, current);
  }

  private freshName(resource: FakeResource, namespace: string, prefix: string): string {
    for (;;) {
      let suffix = "";
      for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[randomInt(NAME_ALPHABET.length)];
      const name = `${prefix.slice(0, 58)}${suffix}`;
      if (!this.stores[resource].has(`${namespace}/${name}`)) return name;
    }
  }

  // ---- verbs ----

  /** Checks a request body against the URL and fills in apiVersion/kind (the decoder's defaults). */
  private checkBody(def: ResourceDef, body: unknown, namespace: string): KubeObject {
    if (!isObj(body) || !isObj(body.metadata)) throw badRequest(`the body of the request must be a ${def.kind} object with metadata`);
    if (body.apiVersion !== undefined && body.apiVersion !== apiVersionOf(def)) {
      throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${apiVersionOf(def)})`);
    }
    if (body.kind !== undefined && body.kind !== def.kind) throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${def.kind})`);
    const ns = body.metadata.namespace;
    if (ns !== undefined && ns !== "" && ns !== namespace) throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
    return { ...clone(body), apiVersion: apiVersionOf(def), kind: def.kind } as KubeObject;
  }

  private validate(def: ResourceDef, o: KubeObject): void {
    const causes: { field: string; message: string }[] = [];
    const name = o.metadata.name;
    if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
      causes.push({ field: "metadata.name", message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character` });
    }
    const spec = isObj(o.spec) ? o.spec : {};
    const podSpec = def.name === "pods" ? spec : def.name === "jobs" && isObj(spec.template) && isObj(spec.template.spec) ? spec.template.spec : undefined;
    const podPath = def.name === "pods" ? "spec" : "spec.template.spec";
    if ((def.name === "pods" || def.name === "jobs") && !(Array.isArray(podSpec?.containers) && podSpec.containers.length > 0)) {
      causes.push({ field: `${podPath}.containers`, message: "Required value" });
    }
    if (def.name === "jobs" && podSpec?.restartPolicy !== "Never" && podSpec?.restartPolicy !== "OnFailure") {
      causes.push({ field: "spec.template.spec.restartPolicy", message: 'Required value: valid values: "OnFailure", "Never"' });
    }
    if (causes.length > 0) throw invalid(def, name, causes);
  }

  private create(def: ResourceDef, namespace: string, body: unknown): KubeObject {
    const o = this.checkBody(def, body, namespace);
    const m = o.metadata;
    if (!m.name) {
      if (typeof m.generateName !== "string" || m.generateName === "") throw invalid(def, "", [{ field: "metadata.name", message: "Required value: name or generateName is required" }]);
      m.name = this.freshName(def.name, namespace, m.generateName);
    }
    // etcd3 store.Create refuses this with a plain (non-Status) error, which the apiserver answers as 500 without a reason.
    if (m.resourceVersion) throw new KubeApiError(500, "", "resourceVersion should not be set on objects to be created");
    this.validate(def, o);
    if (this.stores[def.name].has(`${namespace}/${m.name}`)) {
      throw new KubeApiError(409, "AlreadyExists", `${qualified(def)} "${m.name}" already exists`, { name: m.name, group: def.group, kind: def.name });
    }
    Object.assign(m, { namespace, uid: randomUUID(), creationTimestamp: now(), generation: 1 });
    delete m.deletionTimestamp;
    delete m.deletionGracePeriodSeconds;
    if (def.name === "pods") o.status = { phase: "Pending" };
    else if (def.name === "jobs") o.status = {};
    else if (def.statusSubresource) delete o.status;
    if (def.name === "jobs") this.defaultJob(o);
    return this.commit(def.name, o, undefined);
  }

  private defaultJob(job: KubeObject): void {
    if (!isObj(job.spec)) job.spec = {};
    const spec = job.spec as Obj;
    spec.parallelism ??= 1;
    spec.completions ??= 1;
    spec.backoffLimit ??= 6;
    spec.completionMode ??= "NonIndexed";
    spec.suspend ??= false;
    if (spec.manualSelector === true) return;
    const uid = job.metadata.uid;
    spec.selector = { matchLabels: { "batch.kubernetes.io/controller-uid": uid } };
    if (!isObj(spec.template)) spec.template = {};
    const template = spec.template as Obj;
    if (!isObj(template.metadata)) template.metadata = {};
    const meta = template.metadata as Obj;
    meta.labels = {
      ...(isObj(meta.labels) ? meta.labels : {}),
      "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": job.metadata.name, "controller-uid": uid, "job-name": job.metadata.name,
    };
  }

  /** PUT (and the second half of PATCH): the main resource ignores `status`, `/status` changes nothing else. */
  private update(def: ResourceDef, namespace: string, name: string, body: unknown, statusOnly: boolean): KubeObject {
    const current = this.require(def, namespace, name);
    const incoming = this.checkBody(def, body, namespace);
    if (incoming.metadata.name !== name) throw badRequest(`the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`);
    const wanted = incoming.metadata.resourceVersion;
    if (wanted !== undefined && wanted !== "" && wanted !== current.metadata.resourceVersion) throw conflict(def, name);

    let next: KubeObject;
    if (statusOnly) {
      next = clone(current);
      if (incoming.status === undefined) delete next.status;
      else next.status = incoming.status;
    } else {
      next = incoming;
      const system = ["namespace", "uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"];
      for (const field of system) {
        if (current.metadata[field] === undefined) delete next.metadata[field];
        else next.metadata[field] = current.metadata[field];
      }
      if (def.statusSubresource) {
        if (current.status === undefined) delete next.status;
        else next.status = clone(current.status);
      }
      const { metadata: _m1, status: _s1, ...nextBody } = next;
      const { metadata: _m2, status: _s2, ...currentBody } = current;
      if (!deepEqual(nextBody, currentBody) && typeof current.metadata.generation === "number") next.metadata.generation = current.metadata.generation + 1;
    }
    if (current.metadata.deletionTimestamp) {
      const added = finalizersOf(next).filter((f) => !finalizersOf(current).includes(f));
      if (added.length > 0) throw invalid(def, name, [{ field: "metadata.finalizers", message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}` }]);
      // Store.Update → deleteWithoutFinalizers: the update itself is not written; the DELETED event carries the stored state.
      if (finalizersOf(next).length === 0) return this.erase(def.name, current);
    }
    // etcd3 GuaranteedUpdate skips writes that change nothing: no new resourceVersion, no event.
    if (deepEqual(next, current)) return clone(current);
    return this.commit(def.name, next, current);
  }

  private patch(def: ResourceDef, namespace: string, name: string, body: unknown, contentType: string, statusOnly: boolean): KubeObject {
    const current = this.require(def, namespace, name);
    let patched: unknown;
    if (contentType === "application/json-patch+json") patched = jsonPatch(current, body);
    else if (contentType === "application/merge-patch+json") patched = mergePatch(current, body);
    else if (contentType === "application/strategic-merge-patch+json" && !CUSTOM_GROUPS.has(def.group)) patched = strategicMerge(current, body, "");
    else {
      const accepted = ["application/json-patch+json", "application/merge-patch+json", ...(CUSTOM_GROUPS.has(def.group) ? [] : ["application/strategic-merge-patch+json"])];
      throw new KubeApiError(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`);
    }
    return this.update(def, namespace, name, patched, statusOnly);
  }

  private listBody(def: ResourceDef, namespace: string | undefined, query: Record<string, string>): Obj {
    const all = this.select(def, namespace, parseLabelSelector(query.labelSelector ?? ""), parseFieldSelector(def, query.fieldSelector ?? ""));
    let items = all;
    if (query.continue) {
      let after: unknown;
      try {
        after = JSON.parse(Buffer.from(query.continue, "base64url").toString("utf8"));
      } catch {
        throw badRequest("continue key is not valid");
      }
      items = items.filter((o) => typeof after === "string" && keyOf(o) > after);
    }
    const limit = Number(query.limit ?? 0);
    const metadata: Obj = { resourceVersion: String(this.rv) };
    if (limit > 0 && items.length > limit) {
      metadata.remainingItemCount = items.length - limit;
      items = items.slice(0, limit);
      metadata.continue = Buffer.from(JSON.stringify(keyOf(items.at(-1)!))).toString("base64url");
    }
    // Built-in list items carry no apiVersion/kind on the wire; custom resources do.
    const wire = (o: KubeObject): Obj => {
      if (CUSTOM_GROUPS.has(def.group)) return o;
      const { apiVersion: _a, kind: _k, ...rest } = o;
      return rest;
    };
    return { kind: `${def.kind}List`, apiVersion: apiVersionOf(def), metadata, items: items.map(wire) };
  }

  // ---- watch ----

  private expiredEvent(from: number): Obj {
    const status = new KubeApiError(410, "Expired", `too old resource version: ${from} (${this.floor})`).status();
    return { type: "ERROR", object: status };
  }

  private startWatch(def: ResourceDef, namespace: string | undefined, query: Record<string, string>, res: ServerResponse): void {
    const labels = parseLabelSelector(query.labelSelector ?? "");
    const fields = parseFieldSelector(def, query.fieldSelector ?? "");
    const from = query.resourceVersion;
    const since = from === undefined || from === "" || from === "0" ? undefined : Number(from);
    if (since !== undefined && !(Number.isInteger(since) && since >= 0)) throw badRequest(`invalid resource version: ${from}`);
    res.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache, private" });
    res.flushHeaders();
    const w: WatchStream = { def, ...(namespace !== undefined ? { namespace } : {}), labels, fields, res, lastRv: since ?? this.rv, silent: false, held: [], timers: [] };
    if (since !== undefined && since < this.floor) {
      res.end(JSON.stringify(this.expiredEvent(since)) + "\n");
      return;
    }
    this.watches.add(w);
    res.on("close", () => this.stopWatch(w));
    if (since === undefined) {
      for (const o of this.select(def, namespace, labels, fields)) this.send(w, { type: "ADDED", object: o });
    } else {
      for (const entry of this.history) if (entry.rv > since) this.deliver(w, entry);
    }
    w.lastRv = this.rv;
    if (WATCH_TRUE.has(query.allowWatchBookmarks ?? "")) {
      const bookmark = () => {
        if (!w.silent) this.send(w, { type: "BOOKMARK", object: { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(this.rv) } } });
      };
      w.timers.push(setInterval(bookmark, this.options.bookmarkIntervalMs).unref());
    }
    const timeout = Number(query.timeoutSeconds ?? 0);
    if (timeout > 0) w.timers.push(setTimeout(() => this.endWatch(w), timeout * 1000).unref());
  }

  private matches(w: WatchStream, o: KubeObject): boolean {
    return (w.namespace === undefined || o.metadata.namespace === w.namespace) && matchesLabels(o, w.labels) && matchesFields(o, w.fields);
  }

  /** Sends a change as this watch sees it: an object entering its selector is ADDED, one leaving it is DELETED (as the watch cache does). */
  private deliver(w: WatchStream, e: HistoryEntry): void {
    if (e.resource !== w.def.name) return;
    const was = e.prev !== undefined && this.matches(w, e.prev);
    const is = this.matches(w, e.object);
    let type: EventType;
    if (e.type === "DELETED") {
      if (!is) return;
      type = "DELETED";
    } else if (is) type = was ? "MODIFIED" : "ADDED";
    else if (was) type = "DELETED";
    else return;
    w.lastRv = e.rv;
    this.send(w, { type, object: e.object });
  }

  private send(w: WatchStream, event: Obj): void {
    const line = JSON.stringify(event) + "\n";
    if (w.silent) w.held.push(line);
    else if (!w.res.writableEnded) w.res.write(line);
  }

  private stopWatch(w: WatchStream): void {
    for (const t of w.timers) clearTimeout(t);
    this.watches.delete(w);
  }

  private endWatch(w: WatchStream, last?: Obj): void {
    this.stopWatch(w);
    if (w.res.writableEnded) return;
    w.res.end(last ? JSON.stringify(last) + "\n" : undefined);
  }

  // ---- HTTP ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = req.method ?? "GET";
    const contentType = req.headers["content-type"];
    const record: RecordedRequest = { method, path: url.pathname, query: Object.fromEntries(url.searchParams), ...(contentType ? { contentType } : {}) };
    this.requests.push(record);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      if (text.trim() !== "") {
        try {
          body = record.body = JSON.parse(text) as unknown;
        } catch (err) {
          throw badRequest(`error decoding request body: ${(err as Error).message}`);
        }
      }
      this.route(method, url.pathname, record.query, body, (contentType ?? "").split(";")[0]!.trim(), res);
    } catch (err) {
      const error = err instanceof KubeApiError ? err : new KubeApiError(500, "InternalError", `fake-kube-api: ${(err as Error).stack ?? String(err)}`);
      if (res.headersSent) res.destroy();
      else sendJson(res, error.code, error.status());
    }
  }

  private route(method: string, path: string, query: Record<string, string>, body: unknown, contentType: string, res: ServerResponse): void {
    const discovery = this.discovery(path);
    if (discovery) {
      if (method !== "GET") throw new KubeApiError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);
      return sendJson(res, 200, discovery);
    }
    const m = /^\/api\/(v1)\/(?:namespaces\/([^/]+)\/)?([a-z]+)(?:\/([^/]+)(?:\/([a-z]+))?)?$/.exec(path)
      ?? /^\/apis\/([^/]+\/[^/]+)\/(?:namespaces\/([^/]+)\/)?([a-z]+)(?:\/([^/]+)(?:\/([a-z]+))?)?$/.exec(path);
    const def = m && ALL_DEFS.find((d) => apiVersionOf(d) === m[1] && d.name === m[3]);
    if (!m || !def) throw pathNotFound();
    const namespace = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
    const name = m[4] === undefined ? undefined : decodeURIComponent(m[4]);
    const subresource = m[5];
    if (subresource !== undefined && (subresource !== "status" || !def.statusSubresource)) throw pathNotFound();
    const notAllowed = () => new KubeApiError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);

    if (name === undefined) {
      if (method === "GET") {
        if (WATCH_TRUE.has(query.watch ?? "")) return this.startWatch(def, namespace, query, res);
        return sendJson(res, 200, this.listBody(def, namespace, query));
      }
      if (namespace === undefined) throw notAllowed();
      if (method === "POST") return sendJson(res, 201, this.create(def, namespace, body));
      if (method === "DELETE") {
        const policy = propagation(query, body);
        const doomed = this.select(def, namespace, parseLabelSelector(query.labelSelector ?? ""), parseFieldSelector(def, query.fieldSelector ?? ""));
        for (const o of doomed) if (this.stores[def.name].has(keyOf(o))) this.deleteObject(def, namespace, o.metadata.name, policy);
        return sendJson(res, 200, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success" });
      }
      throw notAllowed();
    }
    if (namespace === undefined) throw pathNotFound();
    const statusOnly = subresource === "status";
    switch (method) {
      case "GET": return sendJson(res, 200, clone(this.require(def, namespace, name)));
      case "PUT": return sendJson(res, 200, this.update(def, namespace, name, body, statusOnly));
      case "PATCH": return sendJson(res, 200, this.patch(def, namespace, name, body, contentType, statusOnly));
      case "DELETE": {
        if (statusOnly) throw notAllowed();
        const { object, gone } = this.deleteObject(def, namespace, name, propagation(query, body), isObj(body) ? body.preconditions : undefined);
        if (!gone || def.returnsDeletedObject) return sendJson(res, 200, object);
        return sendJson(res, 200, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details: { name, group: def.group, kind: def.name, uid: object.metadata.uid } });
      }
      default: throw notAllowed();
    }
  }

  private discovery(path: string): Obj | undefined {
    const groupVersion = (d: ResourceDef) => ({ groupVersion: apiVersionOf(d), version: d.version });
    const groups = [...new Set(ALL_DEFS.filter((d) => d.group).map((d) => d.group))]
      .map((name) => ({ name, versions: [groupVersion(ALL_DEFS.find((d) => d.group === name)!)], preferredVersion: groupVersion(ALL_DEFS.find((d) => d.group === name)!) }));
    const resources = (gv: string) => {
      const defs = ALL_DEFS.filter((d) => apiVersionOf(d) === gv);
      if (defs.length === 0) return undefined;
      return {
        kind: "APIResourceList", apiVersion: "v1", groupVersion: gv,
        resources: defs.flatMap((d) => [
          { name: d.name, singularName: d.singular, namespaced: true, kind: d.kind, verbs: VERBS, ...(d.shortNames ? { shortNames: d.shortNames } : {}) },
          ...(d.statusSubresource ? [{ name: `${d.name}/status`, singularName: "", namespaced: true, kind: d.kind, verbs: ["get", "patch", "update"] }] : []),
        ]),
      };
    };
    if (path === "/version") return { major: "1", minor: "33", gitVersion: "v1.33.0-folio-fake", gitCommit: "0000000000000000000000000000000000000000", gitTreeState: "clean", buildDate: "2025-01-01T00:00:00Z", goVersion: "go1.24.0", compiler: "gc", platform: "linux/amd64" };
    if (path === "/api") return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: new URL(this.url).host }] };
    if (path === "/api/v1") return resources("v1");
    if (path === "/apis") return { kind: "APIGroupList", apiVersion: "v1", groups };
    const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
    if (!m) return undefined;
    if (m[2] !== undefined) return resources(`${m[1]}/${m[2]}`);
    const group = groups.find((g) => g.name === m[1]);
    return group && { kind: "APIGroup", apiVersion: "v1", ...group };
  }
}

/** propagationPolicy from the query or the DeleteOptions body; `orphanDependents=true` is the old spelling of Orphan. Default: Background (see the header). */
function propagation(query: Record<string, string>, body: unknown): string {
  const fromBody = isObj(body) ? body : {};
  const policy = query.propagationPolicy ?? fromBody.propagationPolicy;
  if (policy !== undefined) {
    if (policy !== "Orphan" && policy !== "Background" && policy !== "Foreground") {
      throw badRequest(`propagationPolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan"`);
    }
    return policy;
  }
  return query.orphanDependents === "true" || fromBody.orphanDependents === true ? "Orphan" : "Background";
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

/** Starts a fake API server on 127.0.0.1 with an ephemeral port. */
export async function startFakeKubeApi(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const api = new FakeKubeApiServer({ jobController: false, bookmarkIntervalMs: 1000, historySize: 1000, ...options });
  await new Promise<void>((resolve, reject) => {
    api.server.once("error", reject);
    api.server.listen(0, "127.0.0.1", () => resolve());
  });
  api.url = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  return api;
}

/** A KubeConfig for a plain-HTTP API server at `url`, without credentials; `name` names its cluster, user and context. */
export function plainHttpKubeConfig(url: string, namespace: string, name = "fake"): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node 2.x refuses an http:// server unless skipTLSVerify is true
    // ("HTTP protocol is not allowed when skipTLSVerify is not set or false").
    clusters: [{ name, server: url, skipTLSVerify: true }],
    users: [{ name }],
    contexts: [{ name, cluster: name, user: name, namespace }],
    currentContext: name,
  });
  return kc;
}
