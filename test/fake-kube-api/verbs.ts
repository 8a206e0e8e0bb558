/**
 * TEST DOUBLE — never used in production.
 *
 * The verbs of the fake Kubernetes API server (test/fake-kube-api.ts) on its
 * store: create (with `generateName`), update, patch and list, with what is
 * particular to each resource: the validation of names, pods and Job
 * templates, the Job defaults, the status subresource.
 */
import { randomUUID } from "node:crypto";
import { KubeApiError, badRequest, conflict, invalid } from "./errors.ts";
import { clone, deepEqual, finalizersOf, isObj, keyOf, now, type Obj } from "./objects.ts";
import { jsonPatch, mergePatch, strategicMerge } from "./patches.ts";
import { CUSTOM_GROUPS, DNS_SUBDOMAIN, apiVersionOf, qualified, type ResourceDef } from "./resources.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { FakeKubeStore } from "./store.ts";
import type { KubeObject } from "./types.ts";

/** The verbs of the API on the store: create, update, patch and list, with the checks, validation and defaults of the real server. */
export class FakeKubeVerbs extends FakeKubeStore {
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

  protected create(def: ResourceDef, namespace: string, body: unknown): KubeObject {
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
  protected update(def: ResourceDef, namespace: string, name: string, body: unknown, statusOnly: boolean): KubeObject {
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

  protected patch(def: ResourceDef, namespace: string, name: string, body: unknown, contentType: string, statusOnly: boolean): KubeObject {
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

  protected listBody(def: ResourceDef, namespace: string | undefined, query: Record<string, string>): Obj {
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
}
