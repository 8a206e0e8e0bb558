/**
 * TEST DOUBLE — never used in production.
 *
 * The patches the fake Kubernetes API server (test/fake-kube-api.ts) applies:
 * JSON merge patch (RFC 7386), the subset of strategic merge patch its header
 * describes, and JSON patch (RFC 6902).
 */
import { badRequest, patchFailed } from "./errors.ts";
import { clone, deepEqual, isObj, type Obj } from "./objects.ts";

/** RFC 7386 JSON merge patch: objects merge, anything else replaces, null removes. */
export function mergePatch(target: unknown, patch: unknown): unknown {
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

export function strategicMerge(target: unknown, patch: unknown, path: string): unknown {
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
export function jsonPatch(doc: unknown, ops: unknown): unknown {
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
