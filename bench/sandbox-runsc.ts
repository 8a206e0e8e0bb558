/**
 * One-page DOCX → 200-DPI PNG: through the runsc backend (profile copied
 * inside the sandbox, and pre-copied into the job folder by the host)
 * against LibreOffice + pdftoppm run directly on the host with a fresh copy
 * of the same prepared profile. Runs are interleaved so a noisy machine
 * hurts every variant alike; the median of each is reported with the ratio
 * (target ≤ 1.5×).
 *
 * Standalone: `node_modules/.bin/tsx bench/sandbox-runsc.ts [runs]` (root,
 * runsc installed). Also a {@link Benchmark} for bench/run.ts.
 */
import { spawn } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Benchmark, BenchmarkReport } from "./run.ts";
import { PROJECT_ROOT } from "../internal/sandbox/assets.ts";
import { fileUrl, prepareProfile, SOFFICE_BIN } from "../internal/sandbox/profile.ts";
import { RunscBackend } from "../internal/sandbox/runsc.ts";
import { median } from "./support.ts";


function exec(command: string, args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: "ignore" });
    child.once("error", reject);
    child.once("close", resolve);
  });
}

async function direct(work: string, profile: string, docx: string): Promise<number> {
  const started = performance.now();
  const dir = await mkdtemp(join(work, "direct-"));
  await cp(profile, join(dir, "profile"), { recursive: true });
  await exec(SOFFICE_BIN, [`-env:UserInstallation=${fileUrl(join(dir, "profile"))}`, "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck", "--convert-to", "pdf", "--outdir", dir, docx]);
  const code = await exec("pdftoppm", ["-r", "200", "-png", join(dir, "one-page.pdf"), join(dir, "page")]);
  if (code !== 0) throw new Error("direct conversion failed");
  const ms = performance.now() - started;
  await rm(dir, { recursive: true, force: true });
  return ms;
}

export async function runSandboxBenchmark(runs = 5): Promise<BenchmarkReport> {
  const work = await mkdtemp(join(tmpdir(), "folio-bench-sandbox-"));
  try {
    const docxPath = join(PROJECT_ROOT, "test", "fixtures", "convert", "one-page.docx");
    const document = await readFile(docxPath);
    const inside = new RunscBackend({ workDir: join(work, "inside") });
    const precopy = new RunscBackend({ workDir: join(work, "precopy"), precopyProfile: true });
    await Promise.all([inside.prepare(), precopy.prepare(), prepareProfile(join(work, "profile"))]);
    const input = { document, format: "DOCX" as const, maxPages: 10, timeoutMs: 120_000 };
    // One warm-up of each so first-use costs (page cache, font cache) are not measured.
    await inside.convert(input);
    await precopy.convert(input);
    await direct(work, join(work, "profile"), docxPath);

    const t = { runsc: [] as number[], runscCompute: [] as number[], precopy: [] as number[], direct: [] as number[] };
    let ok = true;
    for (let i = 0; i < runs; i++) {
      let started = performance.now();
      const a = await inside.convert(input);
      t.runsc.push(performance.now() - started);
      t.runscCompute.push(a.computeMillis);
      started = performance.now();
      const b = await precopy.convert(input);
      t.precopy.push(performance.now() - started);
      t.direct.push(await direct(work, join(work, "profile"), docxPath));
      ok &&= a.pageCount === 1 && b.pageCount === 1;
    }
    const m = { runsc: median(t.runsc), runscCompute: median(t.runscCompute), precopy: median(t.precopy), direct: median(t.direct) };
    const ratio = m.runsc / m.direct;
    const text = [
      `one-page DOCX → 200-DPI PNG, median of ${runs} interleaved runs`,
      `  runsc backend (profile copied inside)   ${m.runsc.toFixed(0)} ms (computeMillis ${m.runscCompute.toFixed(0)} ms)`,
      `  runsc backend (profile pre-copied)      ${m.precopy.toFixed(0)} ms`,
      `  direct soffice.bin + pdftoppm           ${m.direct.toFixed(0)} ms`,
      `  ratio runsc / direct                    ${ratio.toFixed(2)}× (target ≤ 1.5×: ${ratio <= 1.5 ? "met" : "missed"})`,
    ].join("\n");
    return { text, json: { runs, samples: t, medians: m, ratio }, ok };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const benchmark: Benchmark = {
  name: "sandbox-runsc",
  description: "one-page DOCX to PNG through runsc vs direct LibreOffice + pdftoppm",
  run: () => runSandboxBenchmark(),
};
export default benchmark;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const report = await runSandboxBenchmark(Number(process.argv[2] ?? 5));
  console.log(report.text);
  console.log(JSON.stringify(report.json));
}
