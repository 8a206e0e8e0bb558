/**
 * sandbox-runsc: office documents → 200-DPI PNG pages through the runsc
 * backend against LibreOffice + pdftoppm run directly on the host, in one run:
 *
 * 1. Latency, per fixture (one-page.docx, two-pages.docx, slides.pptx),
 *    BENCH_CONVERT_RUNS interleaved rounds (default 5) of
 *      cold     - RunscBackend: sandbox created for the document;
 *      prestart - RunscBackend with `prestart`: the document handed to an
 *                 idle pre-started sandbox (the pool is waited for, untimed,
 *                 before each run: the latency of a service that is not
 *                 saturated);
 *      restore  - RunscBackend with `prestart` and `restore`: the same with
 *                 a pool of sandboxes restored from a checkpoint image, twice
 *                 the concurrency as in the conversion service;
 *      direct   - `soffice.bin --convert-to pdf` + `pdftoppm -r 200 -png` on
 *                 the host with a fresh copy of a profile prepared with
 *                 LibreOffice's own behaviour (the security settings, but
 *                 the graphics render tests at every start, as on any
 *                 headless host: profile.ts) and LibreOffice's default
 *                 environment (the issue's baseline);
 *      direct-tuned - the same with the sandboxes' profile (no render
 *                 tests) and the malloc settings the sandbox program gives
 *                 its tools (MALLOC_ENV): the host pipeline with every
 *                 tuning Folio knows, to show what the sandbox itself costs.
 *    Wall time per document as the caller sees it (pages read back; the
 *    sandbox is removed after the answer). Reported: medians, runsc / direct per format (target
 *    ≤ 1.5×), and the medians of the in-sandbox steps (`timings` of
 *    result.json) with the time outside them (sandbox creation, Node's start,
 *    exit, deletion).
 * 2. Throughput: BENCH_CONVERT_DOCS DOCX (default 12, one- and two-page
 *    alternating) through a ConversionService with concurrency 2 (cold and
 *    prestart backends), and the direct conversion 2 at a time, in
 *    BENCH_CONVERT_ROUNDS interleaved rounds (default 3): documents per
 *    minute, median of the rounds, against Gotenberg's ~25 DOCX/min on 2
 *    CPUs. A prestart or restore round starts with a warm pool (its sandboxes
 *    ready), the state a service is in when a burst arrives.
 * 3. CPU per one-page DOCX, BENCH_CONVERT_CPU_RUNS interleaved runs (default
 *    6): the sandbox's own cgroup (`cpuacct.usage`) before the hand-in
 *    (start or restore, and waiting) and after it, and the CPU of all the
 *    benchmark's reaped child processes (runsc commands, the sandbox and
 *    its gofer, or LibreOffice and pdftoppm for direct) from the pool being
 *    ready to its being ready again: a document's whole cost, its
 *    replacement's start included, once the pool is in a steady state. Also
 *    the CPU an idle waiting sandbox uses per second.
 *
 * The machine's load average before the start and the CPU use of the whole
 * machine during each throughput phase are reported with the figures.
 *
 * Standalone: `node_modules/.bin/tsx bench/sandbox-runsc.ts [runs]` (root,
 * runsc installed). Also a `Benchmark` for bench/run.ts.
 */
import { spawn } from "node:child_process";
import { cp, mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import type { BenchmarkReport } from "./run.ts";
import { ConversionService } from "../internal/conversion/service.ts";
import { CONVERSION_MIME_TYPES, type ConversionFormat } from "../internal/formats/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { PROJECT_ROOT } from "../internal/sandbox/assets.ts";
import { fileUrl, prepareProfile, SOFFICE_BIN } from "../internal/sandbox/profile.ts";
import { RunscBackend } from "../internal/sandbox/runsc.ts";
import { MALLOC_ENV } from "../internal/sandbox/tools.ts";
import { benchmarkEntry, median, positiveInt, TimingsSink, waitForPool } from "./support.ts";

const FIXTURES = join(PROJECT_ROOT, "test", "fixtures", "convert");
/** The target: runsc at most 1.5 × the direct conversion. */
const TARGET_RATIO = 1.5;
/** Gotenberg's published figure on 2 CPUs, the throughput to beat. */
const GOTENBERG_DOCX_PER_MINUTE = 25;
const CONCURRENCY = 2;
/** Idle sandboxes each pooled backend keeps, as the conversion service sets them. */
const POOL: Readonly<Record<"prestart" | "restore", number>> = { prestart: CONCURRENCY, restore: 2 * CONCURRENCY };
/** Seconds an idle waiting sandbox's CPU is watched for. */
const IDLE_SECONDS = 5;
const TIMEOUT_MS = 120_000;

const LATENCY_FILES: readonly { name: string; format: ConversionFormat; pages: number }[] = [
  { name: "one-page.docx", format: "DOCX", pages: 1 },
  { name: "two-pages.docx", format: "DOCX", pages: 2 },
  { name: "slides.pptx", format: "PPTX", pages: 2 },
];
const THROUGHPUT_FILES = ["one-page.docx", "two-pages.docx"] as const;

type Variant = "cold" | "prestart" | "restore" | "direct" | "direct-tuned";
const VARIANTS: readonly Variant[] = ["cold", "prestart", "restore", "direct", "direct-tuned"];
type Direct = "direct" | "direct-tuned";
type Sandboxed = Exclude<Variant, Direct>;
type Pooled = "prestart" | "restore";
const isDirect = (v: Variant): v is Direct => v === "direct" || v === "direct-tuned";
const isPooled = (v: Variant): v is Pooled => v === "prestart" || v === "restore";
const byVariant = <T>(make: () => T): Record<Variant, T> => Object.fromEntries(VARIANTS.map((v) => [v, make()])) as Record<Variant, T>;
const CGROUP_CPU = "/sys/fs/cgroup/cpuacct";

function exec(command: string, args: string[], env?: Record<string, string>): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: "ignore", ...(env ? { env: { ...process.env, ...env } } : {}) });
    child.once("error", reject);
    child.once("close", resolve);
  });
}

/**
 * The baseline: LibreOffice and poppler on the host, a fresh profile copy
 * each time (`tuned`: with the sandbox program's malloc settings). Returns
 * the page count and the time of each step.
 */
async function direct(work: string, profiles: DirectProfiles, file: string, tuned: boolean): Promise<{ pages: number; timings: Record<string, number> }> {
  const dir = await mkdtemp(join(work, "direct-"));
  const env = tuned ? { ...MALLOC_ENV } : undefined;
  const profile = tuned ? profiles.tuned : profiles.untuned;
  try {
    let t = performance.now();
    await cp(profile, join(dir, "profile"), { recursive: true });
    const timings: Record<string, number> = { profile: performance.now() - t };
    t = performance.now();
    await exec(SOFFICE_BIN, [`-env:UserInstallation=${fileUrl(join(dir, "profile"))}`, "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck", "--convert-to", "pdf", "--outdir", dir, join(FIXTURES, file)], env);
    timings.soffice = performance.now() - t;
    t = performance.now();
    const pdf = join(dir, file.replace(/\.\w+$/, ".pdf"));
    const code = await exec("pdftoppm", ["-r", "200", "-png", pdf, join(dir, "page")], env);
    timings.pdftoppm = performance.now() - t;
    if (code !== 0) throw new Error(`direct conversion of ${file} failed`);
    return { pages: (await readdir(dir)).filter((n) => n.startsWith("page") && n.endsWith(".png")).length, timings };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The profiles of the host pipeline: LibreOffice's own behaviour, and the sandboxes' (profile.ts, skipRenderTests). */
interface DirectProfiles {
  untuned: string;
  tuned: string;
}

/** The machine's CPU time so far, in clock ticks (/proc/stat's first line): all of it, and the idle part (idle + iowait). */
async function machineTicks(): Promise<{ idle: number; total: number }> {
  const text = await readFile("/proc/stat", "utf8").catch(() => "");
  const fields = (text.split("\n")[0] ?? "").trim().split(/\s+/).slice(1).map(Number);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { idle, total: fields.reduce((a, b) => a + b, 0) };
}

/** CPU use of the whole machine between two readings of /proc/stat (0..1), or NaN where there is none. */
async function cpuBusy<T>(work: () => Promise<T>): Promise<{ value: T; busy: number }> {
  const before = await machineTicks();
  const value = await work();
  const after = await machineTicks();
  const total = after.total - before.total;
  return { value, busy: total > 0 ? 1 - (after.idle - before.idle) / total : Number.NaN };
}

/**
 * CPU seconds the whole machine has been busy so far (/proc/stat: all but
 * idle and iowait). A document's CPU is the difference across its
 * conversion and its replacement's start: it counts every process once
 * (the sandbox, runsc, the file server, this process), where a cgroup
 * misses what runs outside it and the reaped children count a sandbox
 * twice (its cgroup, and as a descendant of the runsc command that reaped
 * it).
 */
async function machineCpuSeconds(): Promise<number> {
  const { idle, total } = await machineTicks();
  return (total - idle) / CLOCK_TICKS;
}

/** CPU seconds of this process's reaped children and their reaped descendants (/proc/self/stat cutime + cstime). */
async function childrenCpuSeconds(): Promise<number> {
  const text = await readFile("/proc/self/stat", "utf8");
  // Fields after the command's closing parenthesis; cutime and cstime are the 16th and 17th of the line.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS;
}
/** USER_HZ: the unit of /proc's CPU times on Linux. */
const CLOCK_TICKS = 100;

/** CPU seconds a runsc sandbox's cgroup has used so far; undefined once it is gone. */
async function sandboxCpuSeconds(id: string): Promise<number | undefined> {
  const text = await readFile(join(CGROUP_CPU, id, "cpuacct.usage"), "utf8").catch(() => undefined);
  return text === undefined ? undefined : Number(text) / 1e9;
}

/**
 * Follows the cgroups of the sandboxes of `backend` (its job folders are
 * named after them) until `stop`: the last CPU reading of each.
 */
function followSandboxCpu(backend: RunscBackend): { stop: () => Promise<Map<string, number>> } {
  const last = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const id of await readdir(join(backend.workDir, "jobs")).catch(() => [])) {
        const seconds = await sandboxCpuSeconds(id);
        if (seconds !== undefined) last.set(id, seconds);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return last;
    },
  };
}

/** Runs `jobs` with at most `concurrency` at a time; seconds from the first start to the last end. */
async function inParallel(jobs: (() => Promise<void>)[], concurrency: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
  return (performance.now() - started) / 1000;
}

export async function runSandboxBenchmark(runs = positiveInt("BENCH_CONVERT_RUNS", 5)): Promise<BenchmarkReport> {
  const docs = positiveInt("BENCH_CONVERT_DOCS", 12);
  const rounds = positiveInt("BENCH_CONVERT_ROUNDS", 3);
  const loadAtStart = os.loadavg()[0] ?? 0;
  const work = await mkdtemp(join(tmpdir(), "folio-bench-sandbox-"));
  const cpuRuns = positiveInt("BENCH_CONVERT_CPU_RUNS", 6);
  const sinks = { cold: new TimingsSink(), prestart: new TimingsSink(), restore: new TimingsSink() };
  const backends: Record<Sandboxed, RunscBackend> = {
    cold: new RunscBackend({ workDir: join(work, "cold"), logger: createLogger("debug", sinks.cold) }),
    prestart: new RunscBackend({ workDir: join(work, "prestart"), prestart: true, prestartPool: POOL.prestart, logger: createLogger("debug", sinks.prestart) }),
    restore: new RunscBackend({ workDir: join(work, "restore"), prestart: true, restore: true, prestartPool: POOL.restore, logger: createLogger("debug", sinks.restore) }),
  };
  let ok = true;
  try {
    const profile: DirectProfiles = { untuned: join(work, "profile-untuned"), tuned: join(work, "profile") };
    // One after another: each prepare starts LibreOffice at least once (the restore backend for its image).
    for (const backend of Object.values(backends)) await backend.prepare();
    await prepareProfile(profile.untuned, { skipRenderTests: false });
    await prepareProfile(profile.tuned);
    const documents = new Map<string, Buffer>();
    for (const f of [...LATENCY_FILES.map((f) => f.name), ...THROUGHPUT_FILES]) documents.set(f, await readFile(join(FIXTURES, f)));

    // 1. Latency.
    type Sample = { ms: number; timings?: Record<string, number> };
    const samples: Record<string, Record<Variant, Sample[]>> = {};
    const once = async (variant: Variant, file: (typeof LATENCY_FILES)[number]): Promise<Sample> => {
      if (isDirect(variant)) {
        const started = performance.now();
        const { pages, timings } = await direct(work, profile, file.name, variant === "direct-tuned");
        const ms = performance.now() - started;
        ok &&= pages === file.pages;
        return { ms, timings };
      }
      if (isPooled(variant)) await waitForPool(backends[variant], POOL[variant], 60_000);
      const sink = sinks[variant];
      sink.last = undefined;
      const started = performance.now();
      const result = await backends[variant].convert({ document: documents.get(file.name)!, format: file.format, maxPages: 10, timeoutMs: TIMEOUT_MS });
      const ms = performance.now() - started;
      // Set by the logger during convert() (TypeScript cannot see that).
      const timings = sink.last as Record<string, number> | undefined;
      ok &&= result.pageCount === file.pages && (!isPooled(variant) || timings?.warmOffice === 1);
      return { ms, ...(timings ? { timings } : {}) };
    };
    // One untimed warm-up of each (page cache, font cache, the pool).
    for (const file of LATENCY_FILES) for (const v of VARIANTS) await once(v, file);
    for (let i = 0; i < runs; i++) {
      for (const file of LATENCY_FILES) {
        // Rotate the order so no variant always runs right after another.
        for (let k = 0; k < VARIANTS.length; k++) {
          const v = VARIANTS[(i + k) % VARIANTS.length]!;
          ((samples[file.name] ??= byVariant<Sample[]>(() => []))[v]).push(await once(v, file));
        }
      }
    }
    const latency = LATENCY_FILES.map((file) => {
      const s = samples[file.name]!;
      const m = Object.fromEntries(VARIANTS.map((v) => [v, median(s[v].map((x) => x.ms))])) as Record<Variant, number>;
      const steps = (v: Variant) => {
        const withTimings = s[v].filter((x) => x.timings);
        const keys = isDirect(v) ? ["profile", "soffice", "pdftoppm"] : ["profile", "soffice", "pageCount", "pdftoppm", "total"];
        const out: Record<string, number> = Object.fromEntries(keys.map((k) => [k, median(withTimings.map((x) => x.timings?.[k] ?? 0))]));
        if (!isDirect(v)) out.outside = median(withTimings.map((x) => x.ms - (x.timings?.total ?? 0)));
        return out;
      };
      return {
        file: file.name,
        format: file.format,
        medians: m,
        ratio: { cold: m.cold / m.direct, prestart: m.prestart / m.direct, restore: m.restore / m.direct },
        ratioTuned: { cold: m.cold / m["direct-tuned"], prestart: m.prestart / m["direct-tuned"], restore: m.restore / m["direct-tuned"] },
        steps: Object.fromEntries(VARIANTS.map((v) => [v, steps(v)])) as Record<Variant, Record<string, number>>,
      };
    });

    // 2. Throughput.
    const perMinute = byVariant<number[]>(() => []);
    const busy = byVariant<number[]>(() => []);
    const silent = createLogger("silent");
    const services = Object.fromEntries(
      (["cold", "prestart", "restore"] as const).map((v) => [
        v,
        new ConversionService({
          backend: backends[v],
          backendName: "runsc",
          limits: { timeoutMs: TIMEOUT_MS, maxDocumentBytes: 50 * 1024 * 1024, maxPages: 10, maxOutputBytes: 256 * 1024 * 1024, concurrency: CONCURRENCY, queueLimit: docs },
          log: silent,
        }),
      ]),
    ) as Record<Sandboxed, ConversionService>;
    const batch = (v: Variant) =>
      Array.from({ length: docs }, (_, i) => async () => {
        const name = THROUGHPUT_FILES[i % THROUGHPUT_FILES.length]!;
        const expected = name === "one-page.docx" ? 1 : 2;
        if (isDirect(v)) {
          ok &&= (await direct(work, profile, name, v === "direct-tuned")).pages === expected;
          return;
        }
        const result = await services[v].convert({ document: documents.get(name)!, mimeType: CONVERSION_MIME_TYPES.DOCX[0]! });
        ok &&= result.pageCount === expected;
      });
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < VARIANTS.length; k++) {
        const v = VARIANTS[(r + k) % VARIANTS.length]!;
        if (isPooled(v)) await waitForPool(backends[v], POOL[v], 60_000);
        // Every job calls the service at once; its slots (or the direct pool) allow two at a time.
        const { value: seconds, busy: b } = await cpuBusy(() => (isDirect(v) ? inParallel(batch(v), CONCURRENCY) : inParallel(batch(v), docs)));
        perMinute[v].push((docs / seconds) * 60);
        busy[v].push(b);
      }
    }
    const throughput = Object.fromEntries(VARIANTS.map((v) => [v, { docsPerMinute: median(perMinute[v]), rounds: perMinute[v], cpuBusy: median(busy[v]) }])) as Record<
      Variant,
      { docsPerMinute: number; rounds: number[]; cpuBusy: number }
    >;

    // 3. CPU per document.
    type CpuSample = { beforeHandIn?: number; afterHandIn?: number; sandbox?: number; children: number; machine: number };
    const cpu = byVariant<CpuSample[]>(() => []);
    const oneDoc = documents.get("one-page.docx")!;
    const cpuOnce = async (v: Variant): Promise<CpuSample> => {
      if (isDirect(v)) {
        const before = await childrenCpuSeconds();
        const machine = await machineCpuSeconds();
        await direct(work, profile, "one-page.docx", v === "direct-tuned");
        return { children: (await childrenCpuSeconds()) - before, machine: (await machineCpuSeconds()) - machine };
      }
      const backend = backends[v];
      if (isPooled(v)) await waitForPool(backend, POOL[v], 60_000);
      await backend.settled();
      const children = await childrenCpuSeconds();
      const machine = await machineCpuSeconds();
      // The pool hands out its oldest idle sandbox.
      const handedTo = backend.idleSandboxes()[0]?.id;
      const beforeHandIn = handedTo ? await sandboxCpuSeconds(handedTo) : undefined;
      const following = followSandboxCpu(backend);
      const result = await backend.convert({ document: oneDoc, format: "DOCX", maxPages: 10, timeoutMs: TIMEOUT_MS });
      ok &&= result.pageCount === 1;
      if (isPooled(v)) await waitForPool(backend, POOL[v], 60_000);
      await backend.settled();
      const machineAfter = await machineCpuSeconds();
      const seen = await following.stop();
      const sandbox = handedTo ? seen.get(handedTo) : [...seen.values()][0];
      return {
        children: (await childrenCpuSeconds()) - children,
        machine: machineAfter - machine,
        ...(sandbox !== undefined ? { sandbox } : {}),
        ...(beforeHandIn !== undefined && sandbox !== undefined ? { beforeHandIn, afterHandIn: sandbox - beforeHandIn } : {}),
      };
    };
    for (let r = 0; r < cpuRuns; r++) {
      for (let k = 0; k < VARIANTS.length; k++) {
        const v = VARIANTS[(r + k) % VARIANTS.length]!;
        cpu[v].push(await cpuOnce(v));
      }
    }
    const cpuMedians = Object.fromEntries(
      VARIANTS.map((v) => {
        const of = (key: keyof CpuSample) => median(cpu[v].flatMap((x) => (x[key] === undefined ? [] : [x[key]])));
        return [v, { sandbox: of("sandbox"), beforeHandIn: of("beforeHandIn"), afterHandIn: of("afterHandIn"), children: of("children"), machine: of("machine") }];
      }),
    ) as Record<Variant, Record<keyof CpuSample, number>>;
    // CPU of an idle waiting sandbox: its cgroup over IDLE_SECONDS.
    const idleCpu = Object.fromEntries(
      await Promise.all(
        (["prestart", "restore"] as const).map(async (v) => {
          await waitForPool(backends[v], POOL[v], 60_000);
          const id = backends[v].idleSandboxes()[0]!.id;
          const before = (await sandboxCpuSeconds(id)) ?? Number.NaN;
          await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
          return [v, ((await sandboxCpuSeconds(id)) ?? Number.NaN) - before] as const;
        }),
      ),
    ) as Record<Pooled, number>;
    ok &&= (await backends.restore.restoreMetrics.fallbacks.get()).values.every((x) => x.value === 0);

    const machine = { cpus: os.cpus().length, loadAverage1m: { start: loadAtStart, end: os.loadavg()[0] ?? 0 } };
    const f0 = (n: number) => n.toFixed(0).padStart(6);
    const lines = [
      `latency: median of ${runs} interleaved runs per file (ms, the caller's wall time)`,
      `  file              cold  prestart  restore  direct  direct-tuned   cold/direct  prestart/direct  restore/direct  (÷ direct-tuned)`,
      ...latency.map(
        (l) =>
          `  ${l.file.padEnd(15)} ${f0(l.medians.cold)} ${f0(l.medians.prestart)}  ${f0(l.medians.restore)}  ${f0(l.medians.direct)}  ${f0(l.medians["direct-tuned"])}      ` +
          `${l.ratio.cold.toFixed(2).padStart(8)}×  ${l.ratio.prestart.toFixed(2).padStart(10)}×  ${l.ratio.restore.toFixed(2).padStart(10)}×  ` +
          `(${l.ratioTuned.cold.toFixed(2)}×, ${l.ratioTuned.prestart.toFixed(2)}×, ${l.ratioTuned.restore.toFixed(2)}×) ` +
          `target ≤ ${TARGET_RATIO}×: ${l.ratio.prestart <= TARGET_RATIO ? "met" : "missed"} (prestart), ${l.ratio.cold <= TARGET_RATIO ? "met" : "missed"} (cold)`,
      ),
      `  steps, medians (ms): runsc profile / soffice / page count / pdftoppm / total in the sandbox / outside the steps; direct profile / soffice / pdftoppm`,
      ...latency.flatMap((l) =>
        VARIANTS.map((v) => `  ${l.file.padEnd(15)} ${v.padEnd(12)} ${Object.values(l.steps[v]).map((n) => n.toFixed(0)).join(" / ")}`),
      ),
      `throughput: ${docs} DOCX, ${CONCURRENCY} at a time, median of ${rounds} interleaved rounds (machine CPU busy during the phase)`,
      ...VARIANTS.map(
        (v) =>
          `  ${v.padEnd(12)} ${throughput[v].docsPerMinute.toFixed(1).padStart(5)} docs/min (${(throughput[v].cpuBusy * 100).toFixed(0)}% busy; rounds ${throughput[v].rounds.map((x) => x.toFixed(1)).join(", ")})` +
          (isDirect(v) ? "" : ` vs Gotenberg ~${GOTENBERG_DOCX_PER_MINUTE}: ${throughput[v].docsPerMinute > GOTENBERG_DOCX_PER_MINUTE ? "beaten" : "not beaten"}`),
      ),
      `CPU per one-page DOCX, median of ${cpuRuns} interleaved runs (CPU-s): the whole machine (a pooled document: its conversion and its replacement's start); the sandbox cgroup before the hand-in + after it = total; all reaped child processes (a sandbox counted again there)`,
      ...VARIANTS.map((v) => {
        const c = cpuMedians[v];
        const cgroup = isDirect(v) ? "" : isPooled(v) ? `; cgroup ${c.beforeHandIn.toFixed(2)} + ${c.afterHandIn.toFixed(2)} = ${c.sandbox.toFixed(2)}` : `; cgroup ${c.sandbox.toFixed(2)}`;
        return `  ${v.padEnd(12)} machine ${c.machine.toFixed(2)}${cgroup}; children ${c.children.toFixed(2)}`;
      }),
      `  idle waiting sandbox: prestart ${(idleCpu.prestart * 1000 / IDLE_SECONDS).toFixed(1)} ms CPU/s, restore ${(idleCpu.restore * 1000 / IDLE_SECONDS).toFixed(1)} ms CPU/s`,
      `machine: ${machine.cpus} CPUs, load average (1 min) ${machine.loadAverage1m.start.toFixed(2)} before the start, ${machine.loadAverage1m.end.toFixed(2)} at the end (includes this benchmark)`,
    ];
    return { text: lines.join("\n"), json: { runs, docs, rounds, machine, latency, samples, throughput, cpu, cpuMedians, idleCpu }, ok };
  } finally {
    await Promise.all(Object.values(backends).map((b) => b.close()));
    await rm(work, { recursive: true, force: true });
  }
}

export default await benchmarkEntry(
  import.meta.url,
  {
    name: "sandbox-runsc",
    description: "DOCX/PPTX to PNG through runsc (cold, pre-started, restored from a checkpoint) vs direct LibreOffice + pdftoppm: latency, docs/min, CPU per document",
    run: () => runSandboxBenchmark(),
  },
  () => runSandboxBenchmark(process.argv[2] ? Number(process.argv[2]) : undefined),
);
