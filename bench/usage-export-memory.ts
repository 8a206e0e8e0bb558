/**
 * The usage export's memory, measured apart (bench/usage.ts runs this in a
 * child process): an edge in a process whose old generation is limited to
 * BENCH_EXPORT_HEAP_MB (default 96), one export of BENCH_EXPORT_DAYS (7)
 * read by curl; prints one JSON line with the peaks. An export that held
 * its rows would run out of heap; one that streams finishes, its heap
 * back to where it started once collected.
 *
 * Environment: DATABASE_URL (the benchmark's database), REDIS_URL,
 * BENCH_EXPORT_ACCOUNT, BENCH_EXPORT_KEY.
 */
import { spawn } from "node:child_process";
import { startEdge } from "../internal/edge/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { benchEdgeConfig, positiveInt } from "./support.ts";

async function main(): Promise<void> {
  const days = positiveInt("BENCH_EXPORT_DAYS", 7);
  const edge = await startEdge({ config: benchEdgeConfig(process.env.DATABASE_URL!, process.env.REDIS_URL!), log: createLogger("silent") });
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const base = process.memoryUsage();
  const peak = { rss: base.rss, heapUsed: base.heapUsed };
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peak.rss = Math.max(peak.rss, m.rss);
    peak.heapUsed = Math.max(peak.heapUsed, m.heapUsed);
  }, 20);
  const now = Math.floor(Date.now() / 1000);
  const started = performance.now();
  const bytes = await new Promise<number>((resolve, reject) => {
    const curl = spawn("curl", ["-sf", "-o", "/dev/null", "-w", "%{size_download}", "-H", `authorization: Bearer ${process.env.BENCH_EXPORT_KEY}`, `${edge.url}/v1/usage/export?start_date=${now - days * 86_400}&end_date=${now}`]);
    let out = "";
    curl.stdout.on("data", (d: Buffer) => (out += d.toString()));
    curl.on("exit", (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`curl exited with ${code}`))));
  });
  const ms = performance.now() - started;
  clearInterval(sampler);
  gc?.();
  const after = process.memoryUsage();
  const mib = (n: number) => Math.round(n / 2 ** 20);
  console.log(
    JSON.stringify({ days, bytes, ms, heap_limit_mib: positiveInt("BENCH_EXPORT_HEAP_MB", 96), rss_base_mib: mib(base.rss), rss_peak_mib: mib(peak.rss), heap_base_mib: mib(base.heapUsed), heap_peak_mib: mib(peak.heapUsed), heap_after_gc_mib: mib(after.heapUsed) }),
  );
  await edge.close();
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
