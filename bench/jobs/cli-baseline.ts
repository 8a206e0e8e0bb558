/** Part 1 (a)'s baseline of the jobs benchmark (bench/jobs.ts): the tesseract CLI by hand on the same pages. */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { now } from "./common.ts";
import { busyShare, load1, machineCpu, processCpu } from "./proc.ts";

/** Runs a command to its end; rejects on a non-zero exit. */
function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr = (stderr + s).slice(-2000)));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolvePromise() : reject(new Error(`${command} exited ${code}: ${stderr}`))));
  });
}

/** tesseract on one image, TSV to stdout (read and dropped, as a caller reads it); the TSV's bytes. */
function tesseractTsv(image: string): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn("tesseract", [image, "stdout", "-l", "eng", "--psm", "3", "tsv"], { env: { ...process.env, OMP_THREAD_LIMIT: "1" }, stdio: ["ignore", "pipe", "pipe"] });
    let bytes = 0;
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => (bytes += b.length));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr = (stderr + s).slice(-2000)));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolvePromise(bytes) : reject(new Error(`tesseract ${image} exited ${code}: ${stderr}`))));
  });
}

async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export interface Baseline {
  pages: number;
  renderMs: number;
  renderCpuSeconds: number;
  ms: number;
  pagesPerSecond: number;
  tesseractCpuSeconds: number;
  machineBusy: number;
  /** CPU seconds the rest of the machine (other work) used while the CLI ran. */
  othersCpuSeconds: number;
  /** One-minute load average as the CLI started and ended. */
  loadAverage: [number, number];
  emptyPages: number;
}

/** The CLI by hand: every page rendered first (two pdftoppm halves at once, untimed), then tesseract two at a time (timed). */
export async function cliBaseline(pdf: string, pages: number): Promise<Baseline> {
  const dir = mkdtempSync(join(os.tmpdir(), "folio-bench-jobs-"));
  try {
    const half = Math.ceil(pages / 2);
    const cpu0 = processCpu("self");
    const r0 = now();
    await Promise.all([
      run("pdftoppm", ["-r", "200", "-gray", "-f", "1", "-l", String(half), pdf, join(dir, "a")]),
      ...(pages > half ? [run("pdftoppm", ["-r", "200", "-gray", "-f", String(half + 1), "-l", String(pages), pdf, join(dir, "b")])] : []),
    ]);
    const renderMs = now() - r0;
    const cpu1 = processCpu("self");
    const files = readdirSync(dir)
      .filter((f) => f.endsWith(".pgm"))
      .map((f) => ({ f: join(dir, f), n: Number(/-(\d+)\.pgm$/.exec(f)![1]) }))
      .sort((a, b) => a.n - b.n);
    if (files.length !== pages || files.some((x, i) => x.n !== i + 1)) throw new Error(`pdftoppm rendered ${files.length} of ${pages} pages`);
    let empty = 0;
    const l0 = load1();
    const m0 = machineCpu();
    const t0 = now();
    await pool(files, 2, async ({ f }) => {
      // A TSV of only its header line: nothing was read on the page.
      if ((await tesseractTsv(f)) < 200) empty++;
    });
    const ms = now() - t0;
    const m1 = machineCpu();
    const cpu2 = processCpu("self");
    return {
      pages,
      renderMs,
      renderCpuSeconds: cpu1.children - cpu0.children,
      ms,
      pagesPerSecond: pages / (ms / 1000),
      tesseractCpuSeconds: cpu2.children - cpu1.children,
      machineBusy: busyShare(m0, m1),
      othersCpuSeconds: m1.busy - m0.busy - (cpu2.children - cpu1.children) - (cpu2.own - cpu1.own),
      loadAverage: [l0, load1()],
      emptyPages: empty,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
