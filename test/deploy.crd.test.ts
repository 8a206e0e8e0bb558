/**
 * The ConversionSandbox CRD (deploy/crds), its copies in the chart and the
 * kustomize base, and its schema against ConversionSandboxes as the
 * conversion service creates them.
 */
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import type { K8sObject } from "../deploy/kustomize/generate.ts";
import { KIND } from "../internal/operator/types.ts";
import { read, sampleSandbox, schemaProblems, strictProblems } from "./deploy/checks.ts";

describe("the ConversionSandbox CRD", () => {
  const crdFile = "conversionsandboxes.folio.dev.yaml";
  const source = read(`deploy/crds/${crdFile}`);
  const crd = parseYaml(source) as K8sObject & {
    spec: { versions: { name: string; served: boolean; storage: boolean; schema: { openAPIV3Schema: Record<string, unknown> } }[]; group: string; names: { plural: string; kind: string } };
  };

  it("is byte for byte the generated CRD in the chart's crds/ and in the kustomize base", () => {
    const fix = "run `npx tsx deploy/kustomize/generate.ts`";
    expect(read(`deploy/helm/folio/crds/${crdFile}`), fix).toBe(source);
    expect(read(`deploy/kustomize/base/crds/${crdFile}`), fix).toBe(source);
  });

  it("is a valid CustomResourceDefinition for folio.dev/v1alpha1 conversionsandboxes", () => {
    expect([...schemaProblems(crd), ...strictProblems(crd)]).toEqual([]);
    expect(crd.spec.group).toBe("folio.dev");
    expect(crd.spec.names).toMatchObject({ plural: "conversionsandboxes", kind: KIND });
    expect(crd.spec.versions.filter((v) => v.served && v.storage).map((v) => v.name)).toEqual(["v1alpha1"]);
  });

  it("has a structural schema: every node says its type", () => {
    const untyped: string[] = [];
    const walk = (node: Record<string, unknown>, path: string) => {
      if (!node.type && !node["x-kubernetes-int-or-string"] && !node["x-kubernetes-preserve-unknown-fields"]) untyped.push(path);
      for (const [k, v] of Object.entries((node.properties as Record<string, Record<string, unknown>>) ?? {})) walk(v, `${path}.${k}`);
      if (node.items) walk(node.items as Record<string, unknown>, `${path}[]`);
    };
    walk(crd.spec.versions[0]!.schema.openAPIV3Schema, "");
    expect(untyped).toEqual([]);
  });

  const ajv = new Ajv({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  const validate = ajv.compile(crd.spec.versions[0]!.schema.openAPIV3Schema);
  const sample = sampleSandbox("folio", "10.1.2.3:50053");

  it("accepts a ConversionSandbox as the conversion service creates it, and one with the operator's status", () => {
    expect(validate(sample), JSON.stringify(validate.errors)).toBe(true);
    const done = { ...sample, status: { phase: "Succeeded", jobName: sample.metadata.name, startedAt: "2026-11-22T03:00:00Z", finishedAt: "2026-11-22T03:00:05Z", computeMillis: 4800, pageCount: 2, observedGeneration: 1 } };
    expect(validate(done), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each([
    ["an unknown format", { format: "PDF" }],
    ["no pages", { maxPages: 0 }],
    ["a broker address without a port", { broker: { address: "folio-conversion", token: "tok_0123456789abcdefghijklmnopqrstuv" } }],
    ["a short token", { broker: { address: "10.1.2.3:50053", token: "short" } }],
    ["no broker", { broker: undefined }],
  ])("refuses a ConversionSandbox with %s", (_what, change) => {
    const bad = JSON.parse(JSON.stringify({ ...sample, spec: { ...sample.spec, ...change } })) as unknown;
    expect(validate(bad)).toBe(false);
  });
});
