/**
 * TEST DOUBLE — never used in production.
 *
 * The object store and watch machinery of the fake Kubernetes API server
 * (test/fake-kube-api.ts): objects under resourceVersions, the events of each
 * change and the watch history they replay from, deletion with finalizers and
 * the garbage collector, the optional Job controller, and the watches that
 * stream the events. The public store access of FakeKubeApi (get, put,
 * setStatus, compact, ...) is here; the verbs are in verbs.ts, HTTP in
 * server.ts.
 */
import { randomInt, randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { KubeApiError, badRequest, conflict, notFound } from "./errors.ts";
import { clone, finalizersOf, isObj, keyOf, now, ownerRefsOf, type EventType, type Obj } from "./objects.ts";
import { mergePatch } from "./patches.ts";
import { ALL_DEFS, DEFS, NAME_ALPHABET, apiVersionOf, type ResourceDef } from "./resources.ts";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, type FieldRequirement, type LabelRequirement } from "./selectors.ts";
import type { FakeKubeApiOptions, FakeResource, KubeObject, WatchEventRecord } from "./types.ts";

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

export const WATCH_TRUE = new Set(["1", "t", "T", "true", "TRUE", "True"]);

/** The object store, its events and watches, the garbage collector and the Job controller: what the API server keeps, without HTTP. */
export class FakeKubeStore {
  protected rv = 0;
  /** Smallest resourceVersion a watch may still start from (everything after it is in `history`). */
  private floor = 0;
  private readonly history: HistoryEntry[] = [];
  protected readonly stores: Record<FakeResource, Map<string, KubeObject>> = {
    pods: new Map(), jobs: new Map(), networkpolicies: new Map(), leases: new Map(), events: new Map(), conversionsandboxes: new Map(), conversionsandboxpools: new Map(),
  };
  protected readonly watches = new Set<WatchStream>();
  private readonly listeners = new Set<(event: WatchEventRecord) => void>();

  constructor(private readonly options: Required<FakeKubeApiOptions>) {}

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

  // ---- storage and events ----

  protected require(def: ResourceDef, namespace: string, name: string): KubeObject {
    const o = this.stores[def.name].get(`${namespace}/${name}`);
    if (!o) throw notFound(def, name);
    return o;
  }

  protected select(def: ResourceDef, namespace: string | undefined, labels: LabelRequirement[], fields: FieldRequirement[]): KubeObject[] {
    return [...this.stores[def.name].values()]
      .filter((o) => (namespace === undefined || o.metadata.namespace === namespace) && matchesLabels(o, labels) && matchesFields(o, fields))
      .sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
  }

  /** Stores `next` (replacing `prev`, if any) under a new resourceVersion and emits ADDED or MODIFIED. */
  protected commit(resource: FakeResource, next: KubeObject, prev: KubeObject | undefined): KubeObject {
    next.metadata.resourceVersion = String(++this.rv);
    this.stores[resource].set(keyOf(next), next);
    this.emit(prev ? "MODIFIED" : "ADDED", resource, next, prev);
    return clone(next);
  }

  /** Removes a stored object; the DELETED event carries its last stored state with a new resourceVersion. Then collects its dependents. */
  protected erase(resource: FakeResource, stored: KubeObject): KubeObject {
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

  protected deleteObject(def: ResourceDef, namespace: string, name: string, policy: string, preconditions?: unknown): { object: KubeObject; gone: boolean } {
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

  protected freshName(resource: FakeResource, namespace: string, prefix: string): string {
    for (;;) {
      let suffix = "";
      for (let i = 0; i < 5; i++) suffix += NAME_ALPHABET[randomInt(NAME_ALPHABET.length)];
      const name = `${prefix.slice(0, 58)}${suffix}`;
      if (!this.stores[resource].has(`${namespace}/${name}`)) return name;
    }
  }

  // ---- watch ----

  private expiredEvent(from: number): Obj {
    const status = new KubeApiError(410, "Expired", `too old resource version: ${from} (${this.floor})`).status();
    return { type: "ERROR", object: status };
  }

  protected startWatch(def: ResourceDef, namespace: string | undefined, query: Record<string, string>, res: ServerResponse): void {
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

  protected endWatch(w: WatchStream, last?: Obj): void {
    this.stopWatch(w);
    if (w.res.writableEnded) return;
    w.res.end(last ? JSON.stringify(last) + "\n" : undefined);
  }
}
