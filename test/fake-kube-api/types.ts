/**
 * TEST DOUBLE — never used in production.
 *
 * The public face of the fake Kubernetes API server (test/fake-kube-api.ts,
 * which says what it implements and where it differs from a real one): the
 * objects it stores, its options, and what a test may do with it.
 */
import type { KubeConfig } from "@kubernetes/client-node";

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
