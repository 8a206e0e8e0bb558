/**
 * TEST DOUBLE — never used in production.
 *
 * Helpers of the fake Kubernetes API server (test/fake-kube-api.ts) on the
 * objects it stores: copies, keys, finalizers, owner references, equality.
 */
import type { KubeObject, WatchEventRecord } from "./types.ts";

export type Obj = Record<string, unknown>;
export type EventType = WatchEventRecord["type"];

export const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
export const clone = <T>(v: T): T => structuredClone(v);
export const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
export const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
export const finalizersOf = (o: KubeObject): string[] => (Array.isArray(o.metadata.finalizers) ? o.metadata.finalizers.filter((f): f is string => typeof f === "string") : []);
export const ownerRefsOf = (o: KubeObject): Obj[] => (Array.isArray(o.metadata.ownerReferences) ? o.metadata.ownerReferences.filter(isObj) : []);

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObj(a) && isObj(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
  }
  return false;
}

