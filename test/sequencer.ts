/**
 * The order test files start in: longest first, across every tier at once, so
 * that the run's few long files (images, fault suite, sandboxes) start while
 * short ones fill the other workers, not at the end with one worker busy.
 * A file's length is its duration in vitest's cache of the last run on this
 * checkout; a file the cache does not know gets its tier's typical length
 * (measured: docs/testing.md), larger files first within a tier.
 */
import { statSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import type { Tier } from "./tiers.ts";

/** Seconds a file of each tier takes, about (the medians of a one-worker run, docs/testing.md). */
const TYPICAL_SECONDS: Record<Tier, number> = { faults: 60, e2e: 40, sandbox: 15, integration: 6, unit: 0.5 };

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const expected = (spec: TestSpecification): number => {
      const key = `${spec.project.name}:${relative(root, spec.moduleId)}`;
      const cached = this.ctx.cache.getFileTestResults(key)?.duration;
      if (cached !== undefined) return cached / 1000;
      const tier = spec.project.name as Tier;
      // Bytes of source stand for length within a tier: a millionth of a second each.
      return (TYPICAL_SECONDS[tier] ?? 1) + statSync(spec.moduleId).size / 1e6;
    };
    const withLength = files.map((spec) => ({ spec, length: expected(spec) }));
    return withLength.sort((a, b) => a.spec.project.config.sequence.groupOrder - b.spec.project.config.sequence.groupOrder || b.length - a.length).map((f) => f.spec);
  }
}
