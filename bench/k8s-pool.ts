/**
 * k8s-pool: hand-in latency of the `kubernetes` backend's warm pool (issue
 * 15). The real operator reconciles a ConversionSandboxPool on the fake API
 * server (test/fake-kube-api.ts: a test double, no real cluster runs on
 * these machines); the fake's Job controller makes the pods and the test
 * kubelet (test/fake-kubelet.ts) runs the real bundled sandbox program in
 * each, with real LibreOffice started warm (unsandboxed: no gVisor). The
 * KubernetesBackend reports demand and hands documents to warm pods through
 * the real broker on loopback gRPC.
 *
 * Measured per document: from the request reaching the backend
 * (`convert()` called) to the document inside the warm sandbox (the pod's
 * "sandbox received its document" line, stamped by the pod process with the
 * same host clock) = the claim latency; and, on the conversion side alone,
 * from the request to the document queued on the warm pod's open call (the
 * broker hand-in: everything up to the socket). Phases:
 *
 *   spaced-2       10 hand-ins 0.5 s apart: the path's own latency, little else running
 *   sustained-10   BENCH_POOL_LOW_SECONDS (default 3) s at 10 hand-ins/s
 *   sustained-45   BENCH_POOL_HIGH_SECONDS (default 1) s at 45 hand-ins/s
 *   burst          BENCH_POOL_BURST (default 20) hand-ins at once
 *
 * Before each phase the pool is sized for it (minReady = documents + 2) and
 * waited for, untimed: pod start (Job created → LibreOffice ready and the
 * pod waiting at the broker) is reported on its own. A document that found
 * no warm pod takes the cold path and is counted, not timed. The documents
 * are converted for real afterwards (each pod converts its one document and
 * exits), so the machine's two CPUs are busy converting while later
 * documents of a phase are handed in: the latencies include that load.
 *
 * Processes: the benchmark process is the conversion replica (backend and
 * broker); the fake API server, the operator and the test kubelet run in a
 * child process (bench/k8s-pool-cluster.ts). On a cluster each pod has a
 * CPU of its own (Guaranteed QoS): its start and its conversion take no CPU
 * from the conversion service nor from the next pod reading its document.
 * Here 2 CPUs host all of it, so the test kubelet gives a pod only the CPU
 * nobody else wants (a CPU cgroup of the lowest weight, `demote`) while it
 * starts and while it converts, and makes it an ordinary process again
 * (`promote`) from "warm sandbox ready" until it has logged its document's
 * receipt (the end of its claim). Every document is still converted at
 * once, and its pages checked.
 *
 * What this tried before, on the same machine: niceness (10 while waiting,
 * 19 converting, or 19 / SCHED_IDLE throughout). Autogroup scheduling makes
 * every session a group competing at full weight whatever its niceness,
 * and each sandbox's LibreOffice has a session of its own: 45 converting
 * LibreOffices held 45 full shares and a pod waking for its document
 * waited behind them (claim p50 70-260 ms, p99 390-710 ms at 45/s). With
 * only converting pods demoted, replacements started once the first pods
 * had finished (10/s for 3 s) at full weight, and claims rose to 240 ms.
 * Each phase reports the CPU time the replica and the cluster process used
 * while it was handed in.
 *
 * Why 45/s only for a second: every warm pod is single use and starts a
 * Node process and LibreOffice (about a CPU-second, and 205 MB proportional
 * set size: 30 MB Node, 175 MB LibreOffice), so this machine can neither
 * keep 45 pod starts a second going nor hold the 90+ waiting pods a longer
 * window would need; the pool is filled beforehand and the phase lasts as
 * long as its pods do. Each phase reports how late the requests left
 * against their schedule.
 *
 * Standalone: `npx tsx bench/k8s-pool.ts`. Also a {@link Benchmark} for bench/run.ts.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Benchmark, BenchmarkReport } from "./run.ts";
import { backendOnBroker, startBrokerServer } from "../test/broker-server.ts";
import { plainHttpKubeConfig } from "../test/fake-kube-api.ts";
import { KubeClient } from "../internal/operator/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { PROJECT_ROOT } from "../internal/sandbox/assets.ts";
import { SandboxBroker } from "../internal/sandbox/kubernetes/broker.ts";
import type { SandboxResult } from "../internal/sandbox/interface.ts";
import { positiveInt } from "./support.ts";

const NAMESPACE = "default";
const POOL = "folio-sandbox";
const TARGET = { p50: 50, p99: 200, rate: 45 };

interface PhaseResult {
  phase: string;
  requested: number;
  rate_target_per_s: number | null;
  rate_achieved_per_s: number;
  /** How late the last request left against its schedule (t0 + i / rate), and the latest of them: 0 for a burst. */
  schedule_late_last_ms: number;
  schedule_late_max_ms: number;
  /** CPU time the replica (this process) and the cluster process used from the first request to the last one's hand-in. */
  cpu_replica_ms: number;
  cpu_cluster_ms: number;
  /**
   * The machine, from the first request to the last claim: file pages read back after reclaim (a sandbox
   * waiting long enough can have its code paged out, and pays for it on waking), major faults, and the
   * time some task waited for I/O (/proc/pressure/io, ms).
   */
  refaulted_file_pages: number;
  major_faults: number;
  io_stall_ms: number;
  warm: number;
  cold_fallbacks: number;
  failed: number;
  claim_p50_ms: number;
  claim_p99_ms: number;
  claim_max_ms: number;
  /** Every claim, in the order the requests left (a queue building up shows as a rising series). */
  claims_ms: number[];
  /** Request received → document queued on the warm pod's open call (the conversion side alone). */
  broker_handin_p50_ms: number;
  broker_handin_p99_ms: number;
}

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const round = (x: number) => Math.round(x * 10) / 10;

/** Counters of the machine so far: file pages refaulted, major faults (/proc/vmstat), µs some task stalled on I/O (/proc/pressure/io). */
function machineStalls(): { refaults: number; majorFaults: number; ioStallUs: number } {
  const vmstat = readFileSync("/proc/vmstat", "utf8");
  const counter = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(vmstat)?.[1] ?? 0);
  let ioStallUs = 0;
  try {
    ioStallUs = Number(/^some .*total=(\d+)$/m.exec(readFileSync("/proc/pressure/io", "utf8"))?.[1] ?? 0);
  } catch {
    // no pressure stall information on this kernel
  }
  return { refaults: counter("workingset_refault_file"), majorFaults: counter("pgmajfault"), ioStallUs };
}

/** User + system CPU time of a process so far, in ms (Linux: /proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMillisOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`k8s-pool: timed out waiting for ${what}`);
    await sleep(50);
  }
}

export async function runK8sPool(): Promise<BenchmarkReport> {
  const low = { rate: 10, seconds: positiveInt("BENCH_POOL_LOW_SECONDS", 3) };
  const high = { rate: TARGET.rate, seconds: positiveInt("BENCH_POOL_HIGH_SECONDS", 1) };
  const burst = positiveInt("BENCH_POOL_BURST", 20);
  const log = createLogger("silent");
  const document = readFileSync(join(PROJECT_ROOT, "test", "fixtures", "convert", "hello.txt"));
  const loadBefore = os.loadavg()[0]!;

  // The fake API server, the operator and the test kubelet run in a child process (k8s-pool-cluster.ts).
  const cluster = spawn(process.execPath, ["--import", "tsx", join(PROJECT_ROOT, "bench", "k8s-pool-cluster.ts")], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  /** Job name → when the API server stored it. */
  const jobCreated = new Map<string, number>();
  const podStartMs: number[] = [];
  /** Job name → epoch ms its pod had the document. */
  const receivedAt = new Map<string, number>();
  const jobOfPod = (pod: string) => pod.replace(/-[a-z0-9]{5}$/, "");
  /** How the cluster process gave converting pods the leftover CPU (sent at close). */
  let demoted = { cgroup: 0, nice: 0, none: 0 };
  const url = await new Promise<string>((resolve, reject) => {
    cluster.once("exit", (code) => reject(new Error(`k8s-pool: the cluster process exited (${code}) before it was ready`)));
    cluster.on("message", (m: { type: string; url?: string; name?: string; pod?: string; line?: string; at?: number } & Partial<typeof demoted>) => {
      if (m.type === "ready") resolve(m.url!);
      else if (m.type === "demoted") demoted = { cgroup: m.cgroup ?? 0, nice: m.nice ?? 0, none: m.none ?? 0 };
      else if (m.type === "job") jobCreated.set(m.name!, m.at!);
      else if (m.type === "line" && m.line!.includes('"warm sandbox ready"')) {
        const created = jobCreated.get(jobOfPod(m.pod!));
        if (created) podStartMs.push(m.at! - created);
      } else if (m.type === "line") {
        const at = (JSON.parse(m.line!) as { receivedAt?: number }).receivedAt;
        if (typeof at === "number") receivedAt.set(jobOfPod(m.pod!), at);
      }
    });
  });
  const kubeConfig = plainHttpKubeConfig(url, NAMESPACE, "bench");
  const kube = new KubeClient(kubeConfig);
  const broker = new SandboxBroker({ log });
  const brokerServer = await startBrokerServer(broker);
  const backend = backendOnBroker(broker, brokerServer, {
    kubeConfig,
    namespace: NAMESPACE,
    log,
    startupGraceMs: 30_000,
    pool: { name: POOL, replica: "conversion-0", reportIntervalMs: 500 },
  });
  // Which request each warm hand-in belongs to: offer() runs synchronously inside convert().
  let requestStart = 0;
  const requestOfJob = new Map<string, number>();
  const queuedMs = new Map<string, number>();
  const offer = broker.offer.bind(broker);
  broker.offer = (job, exclude) => {
    const warm = offer(job, exclude);
    if (warm) {
      requestOfJob.set(warm.seat.job, requestStart);
      queuedMs.set(warm.seat.job, performance.now());
    }
    return warm;
  };
  let requestStartPerf = 0;

  const phases: PhaseResult[] = [];
  let ok = true;
  try {
    await kube.create("conversionsandboxpools", NAMESPACE, {
      apiVersion: "folio.dev/v1alpha1",
      kind: "ConversionSandboxPool",
      metadata: { name: POOL, namespace: NAMESPACE },
      spec: { minReady: 0, max: 80, leadSeconds: 1, idleSeconds: 900, timeoutSeconds: 120 },
    });

    const runPhase = async (phase: string, count: number, rate: number | null): Promise<void> => {
      // Fill the pool for the phase, untimed. max caps it there: no replacement pods start
      // during the phase (on a cluster they would start on other nodes' CPUs, not these two).
      await kube.mergePatch("conversionsandboxpools", NAMESPACE, POOL, { spec: { minReady: count + 2, max: count + 2 } });
      await until(() => broker.warmStats().idle >= count + 2, 600_000, `${count + 2} warm pods for ${phase}`);
      const fallbacksBefore = (await backend.poolMetrics.fallbacks.get()).values.reduce((n, v) => n + v.value, 0);
      const starts: number[] = [];
      const handins: number[] = [];
      const pending: Promise<SandboxResult | Error>[] = [];
      const jobsBefore = new Set(requestOfJob.keys());
      const cpuBefore = { replica: process.cpuUsage(), cluster: cpuMillisOf(cluster.pid!) };
      const memoryBefore = machineStalls();
      const t0 = Date.now();
      const late: number[] = [];
      for (let i = 0; i < count; i++) {
        if (rate) await sleep(t0 + (i * 1000) / rate - Date.now());
        requestStart = Date.now();
        late.push(rate ? Math.max(0, requestStart - (t0 + (i * 1000) / rate)) : 0);
        requestStartPerf = performance.now();
        starts.push(requestStart);
        const before = new Set(queuedMs.keys());
        pending.push(backend.convert({ document, format: "TXT", maxPages: 5, timeoutMs: 120_000 }).catch((err: unknown) => err as Error));
        // offer() ran synchronously inside convert(): the document is queued on the pod's call now.
        for (const [job, at] of queuedMs) if (!before.has(job)) handins.push(at - requestStartPerf);
      }
      const span = (starts.at(-1)! - starts[0]!) / 1000;
      const replicaCpu = process.cpuUsage(cpuBefore.replica);
      const clusterCpuMs = cpuMillisOf(cluster.pid!) - cpuBefore.cluster;
      const results = await Promise.all(pending);
      const failed = results.filter((r) => r instanceof Error).length;
      const mine = [...requestOfJob.entries()].filter(([job]) => !jobsBefore.has(job));
      await until(() => mine.every(([job]) => receivedAt.has(job)), 30_000, "every warm pod's receipt line");
      const claims = mine.map(([job, start]) => receivedAt.get(job)! - start);
      const memoryAfter = machineStalls();
      const fallbacks = (await backend.poolMetrics.fallbacks.get()).values.reduce((n, v) => n + v.value, 0) - fallbacksBefore;
      if (failed > 0) ok = false;
      phases.push({
        phase,
        requested: count,
        rate_target_per_s: rate,
        rate_achieved_per_s: span > 0 ? round((count - 1) / span) : count,
        schedule_late_last_ms: round(late.at(-1)!),
        schedule_late_max_ms: round(Math.max(...late)),
        cpu_replica_ms: round((replicaCpu.user + replicaCpu.system) / 1000),
        cpu_cluster_ms: clusterCpuMs,
        refaulted_file_pages: memoryAfter.refaults - memoryBefore.refaults,
        major_faults: memoryAfter.majorFaults - memoryBefore.majorFaults,
        io_stall_ms: Math.round((memoryAfter.ioStallUs - memoryBefore.ioStallUs) / 1000),
        warm: claims.length,
        cold_fallbacks: fallbacks,
        failed,
        claim_p50_ms: round(percentile(claims, 50)),
        claim_p99_ms: round(percentile(claims, 99)),
        claim_max_ms: round(Math.max(...claims)),
        claims_ms: claims,
        broker_handin_p50_ms: Math.round(percentile(handins, 50) * 1000) / 1000,
        broker_handin_p99_ms: Math.round(percentile(handins, 99) * 1000) / 1000,
      });
      // Every result is in; let the used pods exit and their Jobs go before the next phase.
      await sleep(2000);
    };

    // The path alone: hand-ins 0.5 s apart, the machine not busy converting the previous ones yet.
    await runPhase("spaced-2", 10, 2);
    await runPhase("sustained-10", low.rate * low.seconds, low.rate);
    await runPhase("sustained-45", high.rate * high.seconds, high.rate);
    await runPhase("burst", burst, null);
  } finally {
    await backend.close();
    await brokerServer.close();
    const exited = new Promise((resolve) => cluster.once("exit", resolve));
    if (cluster.connected) cluster.send({ type: "close" });
    else cluster.kill();
    await exited;
  }

  const at45 = phases.find((p) => p.phase === "sustained-45")!;
  const json = {
    claim_p50_ms: at45.claim_p50_ms,
    claim_p99_ms: at45.claim_p99_ms,
    target: { claim_p50_ms: TARGET.p50, claim_p99_ms: TARGET.p99, at_rate_per_s: TARGET.rate },
    // Met only at the rate asked (within 2%): latencies at a lower rate than 45/s do not count.
    met: at45.claim_p50_ms <= TARGET.p50 && at45.claim_p99_ms <= TARGET.p99 && at45.rate_achieved_per_s >= 0.98 * TARGET.rate,
    rates_achieved_per_s: Object.fromEntries(phases.map((p) => [p.phase, p.rate_achieved_per_s])),
    phases,
    /** How converting pods were given only the leftover CPU: moved into a low-weight cgroup, or niceness 19 where that was not allowed. */
    demoted_pods: demoted,
    pod_start_ms: { count: podStartMs.length, p50: round(percentile(podStartMs, 50)), p99: round(percentile(podStartMs, 99)) },
    machine: { cpus: os.cpus().length, load_average_before: round(loadBefore), load_average_after: round(os.loadavg()[0]!) },
    notes: "fake API server + test kubelet running the real operator and sandbox program (unsandboxed, real LibreOffice); claim = request received -> document inside the warm pod process",
  };
  const text = [
    `phase          requested  rate/s (target)  late max  warm  cold  failed  claim p50  p99     max       broker hand-in p50 / p99`,
    ...phases.map(
      (p) =>
        `${p.phase.padEnd(14)} ${String(p.requested).padStart(9)}  ${String(p.rate_achieved_per_s).padStart(6)} (${String(p.rate_target_per_s ?? "burst").padStart(5)})  ${String(p.schedule_late_max_ms).padStart(5)} ms  ${String(p.warm).padStart(4)}  ${String(p.cold_fallbacks).padStart(4)}  ${String(p.failed).padStart(6)}  ${String(p.claim_p50_ms).padStart(7)} ms ${String(p.claim_p99_ms).padStart(6)} ms ${String(p.claim_max_ms).padStart(6)} ms   ${p.broker_handin_p50_ms} / ${p.broker_handin_p99_ms} ms`,
    ),
    `CPU while handed in (replica / cluster process): ${phases.map((p) => `${p.phase} ${p.cpu_replica_ms} / ${p.cpu_cluster_ms} ms`).join(", ")}`,
    `machine while claimed (file pages refaulted, major faults, I/O stall): ${phases.map((p) => `${p.phase} ${p.refaulted_file_pages}, ${p.major_faults}, ${p.io_stall_ms} ms`).join("; ")}`,
    `converting pods given the leftover CPU: ${demoted.cgroup} by a low-weight cgroup, ${demoted.nice} by niceness 19`,
    `pod start (Job created -> warm at the broker, excluded above): p50 ${json.pod_start_ms.p50} ms, p99 ${json.pod_start_ms.p99} ms over ${json.pod_start_ms.count} pods`,
    `target at ${TARGET.rate}/s: p50 <= ${TARGET.p50} ms, p99 <= ${TARGET.p99} ms at >= ${0.98 * TARGET.rate}/s achieved: ${json.met ? "met" : "missed"}`,
    `machine: ${json.machine.cpus} CPUs, load average ${json.machine.load_average_before} before, ${json.machine.load_average_after} after`,
  ].join("\n");
  return { text, json, ok };
}

const benchmark: Benchmark = { name: "k8s-pool", description: "kubernetes warm pool: hand-in latency at 10/s, 45/s and a burst (fake API server, real operator and sandbox program)", run: runK8sPool };
export default benchmark;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const report = await runK8sPool();
  console.log(report.text);
  process.exitCode = report.ok ? 0 : 1;
}
