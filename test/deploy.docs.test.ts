/**
 * docs/operations.md against the chart: every value listed, and the walk from
 * `helm install` to a first OCR request.
 */
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { read } from "./deploy/checks.ts";

describe("docs/operations.md", () => {
  const doc = (): string => read("docs/operations.md");
  const COMPONENTS = ["edge", "extraction", "conversion", "operator", "worker"];
  /** Values documented as a whole rather than key by key. */
  const WHOLE = new Set(["resources", "podSecurityContext", "containerSecurityContext", "labels", "annotations", "env", "nodeSelector", "affinity", "scheduling", "overhead", "podAnnotations", "commonLabels", "seccompProfile"]);

  const leafPaths = (value: unknown, prefix = ""): string[] => {
    if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length && !WHOLE.has(prefix.split(".").pop()!)) {
      return Object.entries(value).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k));
    }
    return [prefix];
  };

  it("lists every value of the chart", () => {
    const values = parseYaml(read("deploy/helm/folio/values.yaml")) as Record<string, unknown>;
    const missing = leafPaths(values).filter((path) => {
      const [head, ...rest] = path.split(".");
      const generic = COMPONENTS.includes(head!) ? `\`<component>.${rest.join(".")}\`` : undefined;
      return !doc().includes(`\`${path}\``) && !(generic && doc().includes(generic));
    });
    expect(missing).toEqual([]);
  });

  it("walks from helm install to a first OCR request and the dashboard", () => {
    for (const step of ["helm install", "folio admin account create", "/v1/ocr", "Grafana", "make k8s-validate"]) expect(doc()).toContain(step);
  });
});
