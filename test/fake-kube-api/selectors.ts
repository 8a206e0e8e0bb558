/**
 * TEST DOUBLE — never used in production.
 *
 * Label and field selectors of the fake Kubernetes API server
 * (test/fake-kube-api.ts): parsed as the real server parses them, and matched
 * against stored objects.
 */
import { badRequest } from "./errors.ts";
import { isObj } from "./objects.ts";
import type { ResourceDef } from "./resources.ts";
import type { KubeObject } from "./types.ts";

export interface LabelRequirement { key: string; op: "=" | "!=" | "exists" | "!exists" | "in" | "notin"; values: string[] }
export interface FieldRequirement { field: string; op: "=" | "!="; value: string }

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

export function parseLabelSelector(selector: string): LabelRequirement[] {
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

export function parseFieldSelector(d: ResourceDef, selector: string): FieldRequirement[] {
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

export function matchesLabels(o: KubeObject, reqs: LabelRequirement[]): boolean {
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

export function matchesFields(o: KubeObject, reqs: FieldRequirement[]): boolean {
  return reqs.every((r) => {
    let cur: unknown = o;
    for (const k of r.field.split(".")) cur = isObj(cur) ? cur[k] : undefined;
    const value = cur === undefined || cur === null ? "" : String(cur);
    return r.op === "=" ? value === r.value : value !== r.value;
  });
}
