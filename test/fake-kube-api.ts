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
 *   controller (store.ts), which only creates the Pod (no `job-tracking`
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
 *   the lists of `STRATEGIC_LISTS` (patches.ts) merge by key like the real thing
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
 * - KubeConfig: `kubeConfig()` (server.ts); an `http://` server needs
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
 *
 * The parts, in test/fake-kube-api/: types.ts (the public types),
 * server.ts (HTTP, routing, discovery), verbs.ts (create, update, patch,
 * list; validation and defaults), store.ts (the store, events, watches,
 * garbage collection, the Job controller), selectors.ts, patches.ts,
 * resources.ts, objects.ts and errors.ts.
 */
export type { FakeKubeApi, FakeKubeApiOptions, FakeResource, KubeObject, RecordedRequest, WatchEventRecord } from "./fake-kube-api/types.ts";
export { KubeApiError } from "./fake-kube-api/errors.ts";
export { plainHttpKubeConfig, startFakeKubeApi } from "./fake-kube-api/server.ts";
