/**
 * The ConversionSandbox CustomResourceDefinition, generated from the TypeBox
 * schemas in `schema.ts` (STYLE.md 6 and 12). `scripts/gen-crd.ts` writes it
 * to `deploy/crds/conversionsandboxes.folio.dev.yaml`; a test fails when the
 * committed file differs from what this module renders.
 *
 * Not exported from `index.ts`: the operator process never needs it, and it
 * pulls in the `yaml` package.
 */
import { stringify } from "yaml";
import { ConversionSandboxPoolSpecSchema, ConversionSandboxPoolStatusSchema, ConversionSandboxSpecSchema, ConversionSandboxStatusSchema } from "./schema.ts";
import { GROUP, KIND, PLURAL, POOL_KIND, POOL_PLURAL, VERSION } from "./types.ts";

export const CRD_NAME = `${PLURAL}.${GROUP}`;
export const CRD_PATH = `deploy/crds/${CRD_NAME}.yaml`;
export const POOL_CRD_NAME = `${POOL_PLURAL}.${GROUP}`;
export const POOL_CRD_PATH = `deploy/crds/${POOL_CRD_NAME}.yaml`;

/** JSON Schema keywords that apiextensions.k8s.io/v1 accepts and the operator's schemas use. */
const KEPT = new Set([
  "type",
  "description",
  "properties",
  "required",
  "items",
  "enum",
  "format",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "default",
]);

type JsonSchema = Record<string, unknown>;

function typeOfValues(values: unknown[]): string {
  const types = new Set(values.map((v) => (Number.isInteger(v) ? "integer" : typeof v)));
  if (types.size !== 1) throw new Error(`CRD schema: enum mixes types (${[...types].join(", ")})`);
  return [...types][0]!;
}

/**
 * A TypeBox schema as a Kubernetes structural schema: every node typed, no
 * `const`/`anyOf` of literals (they become `enum`), no `additionalProperties`
 * beside `properties` (the API server prunes unknown fields instead), and no
 * TypeBox-only keys (`~kind`, `~optional`, `$id`, ...). Anything else
 * unknown stops the generator rather than being dropped silently.
 */
export function toStructuralSchema(schema: JsonSchema, path = "$"): JsonSchema {
  const out: JsonSchema = {};
  let source = schema;
  if (Array.isArray(schema.anyOf)) {
    const members = schema.anyOf as JsonSchema[];
    if (!members.every((m) => "const" in m)) throw new Error(`CRD schema: ${path}: anyOf is only supported for unions of literals`);
    source = { ...schema, enum: members.map((m) => m.const) };
    delete source.anyOf;
  }
  if ("const" in source) {
    source = { ...source, enum: [source.const] };
    delete source.const;
  }
  for (const [key, value] of Object.entries(source)) {
    if (key.startsWith("~") || key === "$id" || key === "$schema") continue;
    if (key === "additionalProperties") {
      if (value === false || source.properties) continue;
      throw new Error(`CRD schema: ${path}: additionalProperties maps are written as Type.Record`);
    }
    if (key === "patternProperties") {
      // Type.Record(Type.String(), X): a map with any keys, which Kubernetes writes as additionalProperties.
      const patterns = Object.entries(value as Record<string, JsonSchema>);
      if (patterns.length !== 1 || patterns[0]![0] !== "^.*$" || source.properties) throw new Error(`CRD schema: ${path}: only Type.Record(Type.String(), ...) maps are supported`);
      out.additionalProperties = toStructuralSchema(patterns[0]![1], `${path}.*`);
      continue;
    }
    if (!KEPT.has(key)) throw new Error(`CRD schema: ${path}: unsupported keyword ${key}`);
    if (key === "properties") {
      const props: JsonSchema = {};
      for (const [name, sub] of Object.entries(value as Record<string, JsonSchema>)) props[name] = toStructuralSchema(sub, `${path}.${name}`);
      out.properties = props;
    } else if (key === "items") {
      out.items = toStructuralSchema(value as JsonSchema, `${path}[]`);
    } else if (key === "required") {
      if ((value as unknown[]).length) out.required = [...(value as string[])];
    } else {
      out[key] = value;
    }
  }
  if (out.type === undefined) {
    if (Array.isArray(out.enum)) out.type = typeOfValues(out.enum);
    else throw new Error(`CRD schema: ${path}: every node needs a type`);
  }
  // Key order: type first, description second, the rest as written; keeps the YAML readable.
  const { type, description, ...rest } = out;
  return { type, ...(description === undefined ? {} : { description }), ...rest };
}

/** The CustomResourceDefinition object. */
export function conversionSandboxCrd(): JsonSchema {
  return customResourceDefinition({
    name: CRD_NAME,
    plural: PLURAL,
    kind: KIND,
    shortName: "csb",
    printerColumns: [
      { name: "Phase", type: "string", jsonPath: ".status.phase" },
      { name: "Pages", type: "integer", jsonPath: ".status.pageCount" },
      { name: "Reason", type: "string", jsonPath: ".status.reason", priority: 1 },
      { name: "Job", type: "string", jsonPath: ".status.jobName", priority: 1 },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
    ],
    description: "One office document converted to PNG pages in an isolated sandbox: the operator runs it as a gVisor batch/v1 Job.",
    spec: ConversionSandboxSpecSchema as unknown as JsonSchema,
    // The Job is built from the spec once; a later edit would never reach it.
    specValidation: { rule: "self == oldSelf", message: "spec is immutable" },
    status: ConversionSandboxStatusSchema as unknown as JsonSchema,
  });
}

/** The ConversionSandboxPool CustomResourceDefinition. */
export function conversionSandboxPoolCrd(): JsonSchema {
  return customResourceDefinition({
    name: POOL_CRD_NAME,
    plural: POOL_PLURAL,
    kind: POOL_KIND,
    shortName: "csbp",
    printerColumns: [
      { name: "Min", type: "integer", jsonPath: ".spec.minReady" },
      { name: "Max", type: "integer", jsonPath: ".spec.max" },
      { name: "Wanted", type: "integer", jsonPath: ".status.wanted" },
      { name: "Idle", type: "integer", jsonPath: ".status.idle" },
      { name: "Active", type: "integer", jsonPath: ".status.active" },
      { name: "Message", type: "string", jsonPath: ".status.message", priority: 1 },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
    ],
    description: "Warm gVisor sandbox pods kept ahead of demand; each takes exactly one document from a conversion replica's broker and exits.",
    spec: ConversionSandboxPoolSpecSchema as unknown as JsonSchema,
    specValidation: { rule: "!has(self.minReady) || self.minReady <= self.max", message: "minReady must not exceed max" },
    status: ConversionSandboxPoolStatusSchema as unknown as JsonSchema,
  });
}

/** What sets one of the operator's CRDs apart; everything else (group, version, labels, status subresource) they share. */
interface CrdParts {
  name: string;
  plural: string;
  kind: string;
  shortName: string;
  printerColumns: { name: string; type: string; jsonPath: string; priority?: number }[];
  description: string;
  spec: JsonSchema;
  /** A CEL rule on the whole spec. */
  specValidation: { rule: string; message: string };
  status: JsonSchema;
}

function customResourceDefinition(crd: CrdParts): JsonSchema {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: crd.name,
      labels: { "app.kubernetes.io/name": "folio", "app.kubernetes.io/component": "operator" },
    },
    spec: {
      group: GROUP,
      scope: "Namespaced",
      names: {
        plural: crd.plural,
        singular: crd.kind.toLowerCase(),
        kind: crd.kind,
        listKind: `${crd.kind}List`,
        shortNames: [crd.shortName],
        categories: ["folio"],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: crd.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: crd.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: {
                  ...toStructuralSchema(crd.spec, "spec"),
                  "x-kubernetes-validations": [crd.specValidation],
                },
                status: toStructuralSchema(crd.status, "status"),
              },
            },
          },
        },
      ],
    },
  };
}

const HEADER = "# Generated by scripts/gen-crd.ts from internal/operator/schema.ts: do not edit by hand.\n# Regenerate with `npx tsx scripts/gen-crd.ts`.\n";

/** The CRD as the YAML file committed under deploy/crds. */
export function renderCrdYaml(): string {
  return HEADER + stringify(conversionSandboxCrd(), { lineWidth: 0, aliasDuplicateObjects: false });
}

/** The pool's CRD as the YAML file committed under deploy/crds. */
export function renderPoolCrdYaml(): string {
  return HEADER + stringify(conversionSandboxPoolCrd(), { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Every generated CRD: path under the repository → its YAML. */
export function renderCrds(): Record<string, string> {
  return { [CRD_PATH]: renderCrdYaml(), [POOL_CRD_PATH]: renderPoolCrdYaml() };
}
