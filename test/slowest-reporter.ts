/**
 * A vitest reporter that times each test file from the moment a worker takes
 * it (its import included) to its end, writes every file's seconds to
 * test-artifacts/file-times.tsv (slowest first, with its tier) and prints the
 * ten slowest when the run ends (scripts/run-tests.sh; docs/testing.md).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

const SHOWN = 10;

export default class SlowestFiles implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly seconds: { file: string; tier: string; seconds: number }[] = [];

  onTestModuleQueued(module: TestModule): void {
    this.started.set(module.moduleId, performance.now());
  }

  onTestModuleEnd(module: TestModule): void {
    const start = this.started.get(module.moduleId);
    if (start === undefined) return;
    this.seconds.push({ file: relative(process.cwd(), module.moduleId), tier: module.project.name, seconds: (performance.now() - start) / 1000 });
  }

  onTestRunEnd(): void {
    if (this.seconds.length === 0) return;
    const slowest = [...this.seconds].sort((a, b) => b.seconds - a.seconds);
    mkdirSync("test-artifacts", { recursive: true });
    writeFileSync("test-artifacts/file-times.tsv", slowest.map((s) => `${s.seconds.toFixed(1)}\t${s.tier}\t${s.file}`).join("\n") + "\n");
    const width = Math.max(...slowest.slice(0, SHOWN).map((s) => s.file.length));
    const lines = slowest.slice(0, SHOWN).map((s) => `  ${s.seconds.toFixed(1).padStart(6)} s  ${s.file.padEnd(width)}  ${s.tier}`);
    process.stdout.write(`\nThe ${Math.min(SHOWN, slowest.length)} slowest test files (from a worker taking the file to its end; all in test-artifacts/file-times.tsv):\n${lines.join("\n")}\n`);
  }
}
