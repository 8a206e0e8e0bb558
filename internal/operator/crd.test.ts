// The committed CRD is the generator's output, and its schema (like the TypeBox one) accepts a real sandbox and refuses bad ones.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { Type } from "typebox";
import { Value } from "typebox/value";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CRD_PATH, conversionSandboxCrd, renderCrdYaml, toStructuralSchema } from "./crd.ts";
import { ConversionSandboxSchema } from "./schema.ts";

const root = join(import.meta.dirname, "../..");

const sample = {
  apiVersion: "folio.dev/v1alpha1",
  kind: "ConversionSandbox",
  metadata: { name: "csb-7f3a" },
  spec: {
    format: "DOCX",
    maxPages: 50,
    timeoutSeconds: 120,
    broker: { address: "folio-conversion.folio.svc:50053", token: "tok_0123456789abcdef0123" },
    traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    resources: { cpu: "500m", memory: "1Gi" },
  },
  status: { phase: "Succeeded", jobName: "csb-7f3a", startedAt: "2025-01-02T03:04:05Z", finishedAt: "2025-01-02T03:04:09Z", computeMillis: 4012, pageCount: 3 },
};

type Crd = { spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] } };

function crdValidator() {
  const crd = conversionSandboxCrd() as unknown as Crd;
  const schema = JSON.parse(JSON.stringify(crd.spec.versions[0]!.schema.openAPIV3Schema)) as Record<string, unknown>;
  // CEL rules are for the API server, not for JSON Schema validators.
  delete (schema.properties as Record<string, Record<string, unknown>>).spec!["x-kubernetes-validations"];
  const ajv = new Ajv({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv.compile(schema);
}

describe("ConversionSandbox CRD", () => {
  it("is committed exactly as scripts/gen-crd.ts renders it", async () => {
    const committed = await readFile(join(root, CRD_PATH), "utf8");
    expect(committed, "run `npx tsx scripts/gen-crd.ts`").toBe(renderCrdYaml());
  });

  it("is a namespaced v1 CRD with short name csb, a status subresource and phase/pages/age columns", () => {
    const crd = parse(renderCrdYaml());
    expect(crd.apiVersion).toBe("apiextensions.k8s.io/v1");
    expect(crd.metadata.name).toBe("conversionsandboxes.folio.dev");
    expect(crd.spec.scope).toBe("Namespaced");
    expect(crd.spec.names.shortNames).toEqual(["csb"]);
    const version = crd.spec.versions[0];
    expect(version.name).toBe("v1alpha1");
    expect(version.subresources).toEqual({ status: {} });
    const columns = version.additionalPrinterColumns.map((c: { name: string; jsonPath: string }) => `${c.name}=${c.jsonPath}`);
    expect(columns).toEqual(expect.arrayContaining(["Phase=.status.phase", "Pages=.status.pageCount", "Age=.metadata.creationTimestamp"]));
  });

  it("has a structural schema: every node typed, no TypeBox-only or union keywords", () => {
    const text = JSON.stringify(conversionSandboxCrd());
    for (const bad of ["~kind", "~optional", "anyOf", "const", "additionalProperties", "$id"]) expect(text, bad).not.toContain(`"${bad}"`);
    const untyped: string[] = [];
    const walk = (node: Record<string, unknown>, path: string) => {
      if (node.type === undefined) untyped.push(path);
      for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, Record<string, unknown>>)) walk(v, `${path}.${k}`);
    };
    walk((conversionSandboxCrd() as unknown as Crd).spec.versions[0]!.schema.openAPIV3Schema, "$");
    expect(untyped).toEqual([]);
  });

  it("accepts a sample ConversionSandbox, with the TypeBox schema and with the CRD's schema", () => {
    expect([...Value.Errors(ConversionSandboxSchema, sample)]).toEqual([]);
    const validate = crdValidator();
    expect(validate(sample), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each([
    ["an unknown format", { format: "PDF" }],
    ["zero pages", { maxPages: 0 }],
    ["a fractional timeout", { timeoutSeconds: 1.5 }],
    ["a broker address without port", { broker: { address: "folio-conversion", token: "tok_0123456789abcdef0123" } }],
    ["a bad quantity", { resources: { memory: "lots" } }],
    ["a bad traceparent", { traceparent: "nope" }],
  ])("refuses %s in both schemas", (_what, change) => {
    const bad = { ...sample, spec: { ...sample.spec, ...change } };
    expect(Value.Check(ConversionSandboxSchema, bad)).toBe(false);
    expect(crdValidator()(bad)).toBe(false);
  });

  it("refuses a status with an unknown phase", () => {
    const bad = { ...sample, status: { phase: "Exploded" } };
    expect(Value.Check(ConversionSandboxSchema, bad)).toBe(false);
    expect(crdValidator()(bad)).toBe(false);
  });

  it("turns unions of literals into typed enums, string-keyed records into additionalProperties maps, and refuses constructs a CRD cannot express", () => {
    expect(toStructuralSchema(Type.Union([Type.Literal("a"), Type.Literal("b")]) as never)).toEqual({ type: "string", enum: ["a", "b"] });
    expect(toStructuralSchema(Type.Enum([1, 2]) as never)).toEqual({ type: "integer", enum: [1, 2] });
    expect(() => toStructuralSchema(Type.Union([Type.String(), Type.Number()]) as never)).toThrow(/anyOf/);
    expect(toStructuralSchema(Type.Record(Type.String(), Type.Integer()) as never)).toEqual({ type: "object", additionalProperties: { type: "integer" } });
    expect(() => toStructuralSchema({ type: "object", patternProperties: { "^x-": { type: "string" } } })).toThrow(/Type.Record/);
  });
});
