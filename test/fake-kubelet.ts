/**
 * TEST DOUBLE — never used in production.
 *
 * A test kubelet for the fake Kubernetes API server (`fake-kube-api.ts`),
 * together with the status half of the Job controller that the fake leaves
 * out. It stands in for a node running gVisor pods: when the fake's Job
 * controller creates a sandbox pod, this kubelet
 *
 * 1. marks it Running (container state `running`, `startedAt`), as the
 *    kubelet does once the container started;
 * 2. runs the bundled sandbox program (`cmd/sandbox`, built with
 *    `buildSandboxProgram`) as a local process with the pod's environment
 *    plus FOLIO_PROFILE_DIR, FOLIO_TERMINATION_LOG and a private TMPDIR.
 *    UNSANDBOXED: no gVisor, no network policy, no resource limits — what it
 *    exercises is the broker exchange and the status flow, not isolation;
 * 3. when the process exits, writes the container's `terminated` state
 *    (exitCode, reason Completed/Error, startedAt/finishedAt at second
 *    resolution like the real kubelet, message = the termination log) and
 *    the pod phase Succeeded/Failed; then, as the Job controller would, the
 *    Job's `Complete` or `Failed` condition, counts and completion time.
 *
 * A pod deleted while its process runs has the process killed, as a real
 * kubelet would. A pod whose Job has `activeDeadlineSeconds` is killed that
 * long after it started, and its Job fails with reason DeadlineExceeded, as
 * the Job controller does. Per pod, `behaviour` can instead simulate an OOM kill (the
 * container ends with reason OOMKilled, exit 137, without running anything)
 * or a pod that never starts (it stays Pending, container waiting in
 * ContainerCreating). {@link FakeKubelet.freeze} wedges a running pod: it
 * answers nothing and never exits until it is deleted or its deadline passes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import type { FakeKubeApi, KubeObject } from "./fake-kube-api.ts";

export type PodBehaviour = "run" | "oom" | "never-start";
/** How {@link FakeKubelet.demote} and `promote` moved a pod: by cgroup, by niceness, or not at all (it runs nothing). */
export type CpuShare = "cgroup" | "nice" | "none";

export interface FakeKubeletOptions {
  api: FakeKubeApi;
  /** The bundled sandbox program (one .mjs). */
  program: string;
  /** A Node 24 binary to run it with. */
  nodeBinary: string;
  /** A prepared LibreOffice profile (FOLIO_PROFILE_DIR). */
  profileDir: string;
  /** Where each pod gets its private TMPDIR and termination log. */
  workDir: string;
  /** What happens to a new pod; default: run it. */
  behaviour?: (pod: KubeObject) => PodBehaviour;
  /**
   * Start every pod demoted ({@link FakeKubelet.demote}): the benchmark's
   * stand-in for pods starting on nodes of their own.
   */
  startDemoted?: boolean;
  /** Every whole line the program writes on stderr (its JSON log lines), as it comes. */
  onLine?: (run: PodRun, line: string) => void;
}

export interface PodRun {
  pod: string;
  behaviour: PodBehaviour;
  exitCode?: number | null;
  signal?: NodeJS.Signals | null;
  /** The program's stderr (its JSON log lines), the last 8 KB. */
  stderr: string;
  /** The environment the pod asked for (as the API server stored it). */
  env: Record<string, string>;
  /** Set when the Job's activeDeadlineSeconds killed it. */
  deadlineExceeded?: boolean;
  /** Epoch ms when the process was started and when it ended. */
  startedAtMs?: number;
  endedAtMs?: number;
}

export interface FakeKubelet {
  /** Every pod this kubelet has seen, in order. */
  readonly runs: PodRun[];
  /** Processes still running. */
  running(): number;
  /**
   * Stops a running pod's program and everything it started where they are
   * (SIGSTOP), as a sandbox wedged mid-conversion: its connections stay open,
   * nothing it does goes on, and only its deletion or its Job's deadline ends
   * it (SIGKILL, as ever). Returns the stopped pids; none when it runs nothing.
   */
  freeze(pod: string, namespace?: string): number[];
  /**
   * Leaves a running pod only the CPU nobody else wants, as if it ran on a
   * node of its own (the benchmark's stand-in for other nodes' CPUs): its
   * processes move into a CPU cgroup of the lowest weight (cgroup v2
   * `cpu.weight` 1, or v1 `cpu.shares` 2), which the kubelet makes on first
   * use and removes at close; what they start later stays in it. Niceness
   * alone does not do this: with autogroup scheduling every session (and
   * LibreOffice starts one of its own) competes at full weight whatever its
   * niceness. Where no CPU cgroup can be made (no privilege), every thread
   * is set to niceness 19 instead. Says which it did; "none" when the pod
   * runs nothing.
   */
  demote(pod: string, namespace?: string): CpuShare;
  /** Undoes {@link demote}: the pod's processes go back to the kubelet's own cgroup (or niceness 0). */
  promote(pod: string, namespace?: string): CpuShare;
  /** Kills what still runs and stops reacting to pods. */
  close(): Promise<void>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
/** Kubernetes reports container times with second resolution. */
const kubeTime = (ms = Date.now()) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
/** The image the container status reports (informational only). */
const IMAGE = "folio-sandbox:test";

/** The pids of a process's descendants (Linux: /proc/<pid>/task/<tid>/children), deepest last. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const visit = (p: number) => {
    const read = <T>(f: () => T, otherwise: T): T => {
      try {
        return f();
      } catch {
        return otherwise; // the process ended meanwhile
      }
    };
    for (const task of read(() => readdirSync(`/proc/${p}/task`), [] as string[])) {
      const children = read(() => readFileSync(`/proc/${p}/task/${task}/children`, "utf8"), "");
      for (const c of children.split(" ").filter(Boolean).map(Number)) {
        out.push(c);
        visit(c);
      }
    }
  };
  visit(pid);
  return out;
}

/**
 * `signal` to the program and everything it started (LibreOffice runs in a
 * process group of its own), as a container's end kills everything in it.
 * The pids signalled.
 */
function signalTree(child: ChildProcess, signal: "SIGKILL" | "SIGSTOP"): number[] {
  const pids = child.pid ? [child.pid, ...descendants(child.pid)] : [];
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
  if (pids.length === 0) child.kill(signal);
  return pids;
}
const killTree = (child: ChildProcess) => void signalTree(child, "SIGKILL");

/** setpriority on every thread of `pids` (Linux: a thread id stands for its thread alone). */
function reniceThreads(pids: number[], niceness: number): void {
  for (const pid of pids) {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // ended meanwhile
    }
    for (const tid of tasks) {
      try {
        setPriority(Number(tid), niceness);
      } catch {
        // ended meanwhile, or (raising it) no privilege
      }
    }
  }
}

/**
 * A CPU cgroup of the lowest weight under the machine's cgroup root (v2, or
 * v1's `cpu` hierarchy), or undefined when none can be made.
 */
function makeLowCpuGroup(name: string): { path: string; version: 1 | 2 } | undefined {
  const candidates: { path: string; version: 1 | 2; file: string; value: string }[] = [
    { path: join("/sys/fs/cgroup", name), version: 2, file: "cpu.weight", value: "1" },
    { path: join("/sys/fs/cgroup/cpu", name), version: 1, file: "cpu.shares", value: "2" },
  ];
  for (const c of candidates) {
    // v2 only where the root hands the cpu controller down; v1 only where its cpu hierarchy is mounted.
    const usable = c.version === 2 ? readText("/sys/fs/cgroup/cgroup.subtree_control").split(/\s+/).includes("cpu") : existsSync("/sys/fs/cgroup/cpu/cpu.shares");
    if (!usable) continue;
    try {
      mkdirSync(c.path);
      writeFileSync(join(c.path, c.file), c.value);
      return { path: c.path, version: c.version };
    } catch {
      try {
        rmdirSync(c.path);
      } catch {
        // never made
      }
    }
  }
  return undefined;
}

/** Removes the cgroup once its processes are gone (they were just killed: a few tries). */
async function removeCpuGroup(path: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      rmdirSync(path);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The folder of the cgroup this process is in (v2, or v1's cpu hierarchy), where promoted pods go back to. */
function ownCpuGroup(version: 1 | 2): string {
  const lines = readText("/proc/self/cgroup").split("\n");
  const line = version === 2 ? lines.find((l) => l.startsWith("0::")) : lines.find((l) => l.split(":")[1]?.split(",").includes("cpu"));
  const path = line?.split(":").slice(2).join(":") ?? "/";
  return join(version === 2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu", path);
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

export function startFakeKubelet(options: FakeKubeletOptions): FakeKubelet {
  const { api } = options;
  const runs: PodRun[] = [];
  /** The low-weight CPU cgroup of {@link FakeKubelet.demote}: null until first asked for, undefined when none could be made. */
  let lowCpu: { path: string; version: 1 | 2 } | undefined | null = null;
  /** Moves a running pod's processes into the low-weight cgroup (`low`) or back to the kubelet's own; niceness 19 / 0 without cgroups. */
  const share = (pod: string, namespace: string, low: boolean): CpuShare => {
    const pid = children.get(`${namespace}/${pod}`)?.pid;
    if (!pid) return "none";
    const pids = [pid, ...descendants(pid)];
    if (lowCpu === null) lowCpu = makeLowCpuGroup(`folio-test-kubelet-${process.pid}`);
    if (lowCpu) {
      const target = low ? lowCpu.path : ownCpuGroup(lowCpu.version);
      try {
        // One pid at a time: a write to cgroup.procs moves one whole process (every thread).
        for (const p of pids) {
          try {
            writeFileSync(join(target, "cgroup.procs"), String(p));
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err; // ended meanwhile
          }
        }
        return "cgroup";
      } catch {
        // not allowed after all: niceness below
      }
    }
    reniceThreads(pids, low ? 19 : 0);
    return "nice";
  };
  const children = new Map<string, ChildProcess>();
  let closed = false;

  const key = (pod: KubeObject) => `${pod.metadata.namespace ?? "default"}/${pod.metadata.name}`;

  /** setStatus, tolerating an object deleted in the meantime (its Job or pod was cleaned up). */
  const setStatus = (resource: "pods" | "jobs", namespace: string, name: string, status: Obj) => {
    if (!api.get(resource, namespace, name)) return;
    try {
      api.setStatus(resource, namespace, name, status);
    } catch {
      // deleted between the check and the write
    }
  };

  const containerName = (pod: KubeObject): string => {
    const containers = isObj(pod.spec) && Array.isArray(pod.spec.containers) ? pod.spec.containers : [];
    const first = containers[0];
    return isObj(first) && typeof first.name === "string" ? first.name : "sandbox";
  };

  const podEnv = (pod: KubeObject): Record<string, string> => {
    const containers = isObj(pod.spec) && Array.isArray(pod.spec.containers) ? pod.spec.containers : [];
    const first = containers[0];
    const env = isObj(first) && Array.isArray(first.env) ? first.env : [];
    const out: Record<string, string> = {};
    for (const e of env) if (isObj(e) && typeof e.name === "string" && typeof e.value === "string") out[e.name] = e.value;
    return out;
  };

  const jobOf = (pod: KubeObject): string | undefined => {
    const labels = isObj(pod.metadata.labels) ? pod.metadata.labels : {};
    const name = labels["job-name"];
    return typeof name === "string" ? name : undefined;
  };

  /** The Job controller's part: the Job's conditions once its only pod ended. */
  const finishJob = (pod: KubeObject, succeeded: boolean, reason: string, message: string) => {
    const job = jobOf(pod);
    if (!job) return;
    const now = kubeTime();
    const namespace = pod.metadata.namespace ?? "default";
    setStatus("jobs", namespace, job, {
      active: 0,
      ...(succeeded ? { succeeded: 1, completionTime: now } : { failed: 1 }),
      conditions: succeeded
        ? [
            { type: "SuccessCriteriaMet", status: "True", reason: "CompletionsReached", message: "Reached expected number of succeeded pods", lastProbeTime: now, lastTransitionTime: now },
            { type: "Complete", status: "True", reason: "CompletionsReached", message: "Reached expected number of succeeded pods", lastProbeTime: now, lastTransitionTime: now },
          ]
        : [
            { type: "FailureTarget", status: "True", reason, message, lastProbeTime: now, lastTransitionTime: now },
            { type: "Failed", status: "True", reason, message, lastProbeTime: now, lastTransitionTime: now },
          ],
    });
  };

  const terminate = (pod: KubeObject, startedAt: string, exitCode: number, reason: string, message: string | undefined, deadline = false) => {
    const namespace = pod.metadata.namespace ?? "default";
    const succeeded = exitCode === 0;
    setStatus("pods", namespace, pod.metadata.name, {
      phase: succeeded ? "Succeeded" : "Failed",
      containerStatuses: [
        {
          name: containerName(pod),
          image: IMAGE,
          imageID: IMAGE,
          ready: false,
          restartCount: 0,
          started: false,
          state: { terminated: { exitCode, reason, startedAt, finishedAt: kubeTime(), ...(message ? { message } : {}) } },
        },
      ],
    });
    if (deadline) finishJob(pod, false, "DeadlineExceeded", "Job was active longer than specified deadline");
    else finishJob(pod, succeeded, "BackoffLimitExceeded", "Job has reached the specified backoff limit");
  };

  /** The Job's activeDeadlineSeconds, when the pod's Job has one. */
  const deadlineOf = (pod: KubeObject): number | undefined => {
    const name = jobOf(pod);
    const job = name ? api.get("jobs", pod.metadata.namespace ?? "default", name) : undefined;
    const seconds = isObj(job?.spec) ? job.spec.activeDeadlineSeconds : undefined;
    return typeof seconds === "number" && seconds > 0 ? seconds : undefined;
  };

  const markRunning = (pod: KubeObject): string => {
    const startedAt = kubeTime();
    setStatus("pods", pod.metadata.namespace ?? "default", pod.metadata.name, {
      phase: "Running",
      startTime: startedAt,
      containerStatuses: [
        { name: containerName(pod), image: IMAGE, imageID: IMAGE, ready: true, started: true, restartCount: 0, state: { running: { startedAt } } },
      ],
    });
    return startedAt;
  };

  const start = (pod: KubeObject) => {
    const behaviour = options.behaviour?.(pod) ?? "run";
    const env = podEnv(pod);
    const run: PodRun = { pod: pod.metadata.name, behaviour, stderr: "", env };
    runs.push(run);

    if (behaviour === "never-start") {
      setStatus("pods", pod.metadata.namespace ?? "default", pod.metadata.name, {
        phase: "Pending",
        containerStatuses: [{ name: containerName(pod), image: IMAGE, imageID: "", ready: false, started: false, restartCount: 0, state: { waiting: { reason: "ContainerCreating" } } }],
      });
      return;
    }
    const startedAt = markRunning(pod);
    if (behaviour === "oom") {
      run.exitCode = 137;
      setImmediate(() => terminate(pod, startedAt, 137, "OOMKilled", undefined));
      return;
    }

    const dir = mkdtempSync(join(options.workDir, `${pod.metadata.name}-`));
    const terminationLog = join(dir, "termination-log");
    const child = spawn(options.nodeBinary, [options.program], {
      env: {
        ...env,
        PATH: "/usr/bin:/bin",
        // The pod's /tmp is its own memory-backed volume: here, a private folder.
        HOME: dir,
        TMPDIR: dir,
        FOLIO_PROFILE_DIR: options.profileDir,
        FOLIO_TERMINATION_LOG: terminationLog,
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.set(key(pod), child);
    if (options.startDemoted) share(pod.metadata.name, pod.metadata.namespace ?? "default", true);
    run.startedAtMs = Date.now();
    const deadlineSeconds = deadlineOf(pod);
    const deadline = deadlineSeconds
      ? setTimeout(() => {
          run.deadlineExceeded = true;
          killTree(child);
        }, deadlineSeconds * 1000)
      : undefined;
    let partial = "";
    child.stderr?.on("data", (c: Buffer) => {
      const text = c.toString("utf8");
      run.stderr = (run.stderr + text).slice(-8192);
      if (!options.onLine) return;
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) options.onLine(run, line);
    });
    child.once("close", (code, signal) => {
      clearTimeout(deadline);
      children.delete(key(pod));
      run.endedAtMs = Date.now();
      run.exitCode = code;
      run.signal = signal;
      let message: string | undefined;
      try {
        // The kubelet keeps at most 4096 bytes of a termination message.
        message = readFileSync(terminationLog, "utf8").slice(0, 4096);
      } catch {
        message = undefined;
      }
      rmSync(dir, { recursive: true, force: true });
      if (closed) return;
      const exitCode = code ?? 128 + 9;
      terminate(pod, startedAt, exitCode, exitCode === 0 ? "Completed" : "Error", message, run.deadlineExceeded);
    });
  };

  const unsubscribe = api.onChange((event) => {
    if (closed || event.resource !== "pods") return;
    if (event.type === "ADDED") {
      // The watch listener runs inside the fake's request handling: start the pod after it.
      const pod = event.object;
      setImmediate(() => {
        if (!closed) start(pod);
      });
    } else if (event.type === "DELETED") {
      const child = children.get(key(event.object));
      if (child) killTree(child);
    }
  });

  return {
    runs,
    running: () => children.size,
    freeze: (pod, namespace = "default") => {
      const child = children.get(`${namespace}/${pod}`);
      return child ? signalTree(child, "SIGSTOP") : [];
    },
    demote: (pod, namespace = "default") => share(pod, namespace, true),
    promote: (pod, namespace = "default") => share(pod, namespace, false),
    close: async () => {
      closed = true;
      unsubscribe();
      const exits = [...children.values()].map((c) => new Promise((resolve) => c.once("close", resolve)));
      for (const c of children.values()) killTree(c);
      await Promise.all(exits);
      if (lowCpu) await removeCpuGroup(lowCpu.path);
    },
  };
}
