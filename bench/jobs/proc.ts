/** /proc sampling for the jobs benchmark: a process tree's members, their VmRSS and CPU seconds, and the machine's. */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import { basename } from "node:path";
import { mib, now } from "./common.ts";

export const SAMPLE_MS = 250;

export interface ProcSample {
  pid: number;
  ppid: number;
  name: string;
  rssKiB: number;
  /** A copy of its parent caught between fork and exec (same command line): its pages are its parent's, counted twice in a sum of VmRSS. */
  forkCopy: boolean;
}

/** Every descendant of `root` (and root) with its parent, from /proc's parent links. */
function treePids(root: number): { pid: number; ppid: number }[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(entry));
    children.set(ppid, list);
  }
  const out: { pid: number; ppid: number }[] = [];
  const todo = [{ pid: root, ppid: 0 }];
  while (todo.length) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(children.get(p.pid) ?? []).map((pid) => ({ pid, ppid: p.pid })));
  }
  return out;
}

/** A process's VmRSS, command line and a short name (its program's file name), or undefined when it is gone. */
function procSample(pid: number, ppid: number): (ProcSample & { cmdline: string }) | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rss = /^VmRSS:\s+(\d+) kB/m.exec(status);
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    const argv0 = cmdline.split("\0")[0] ?? "";
    const name = argv0 ? basename(argv0) : (/^Name:\s+(.*)$/m.exec(status)?.[1] ?? "?");
    return { pid, ppid, name, rssKiB: rss ? Number(rss[1]) : 0, forkCopy: false, cmdline };
  } catch {
    return undefined;
  }
}

/** The tree's processes, a child with its parent's very command line marked as a fork copy (Node's spawn forks, then the child execs). */
export function treeSample(root: number): ProcSample[] {
  const all = treePids(root)
    .map(({ pid, ppid }) => procSample(pid, ppid))
    .filter((p): p is ProcSample & { cmdline: string } => p !== undefined);
  const cmdlines = new Map(all.map((p) => [p.pid, p.cmdline]));
  return all.map(({ cmdline, ...p }) => ({ ...p, forkCopy: p.pid !== root && cmdline !== "" && cmdlines.get(p.ppid) === cmdline }));
}

const CLK_TCK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** A process's own CPU seconds and those of its children it has waited for (utime+stime, cutime+cstime). */
export function processCpu(pid: number | "self"): { own: number; children: number } {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const x = f.slice(f.lastIndexOf(")") + 2).split(" ").map(Number);
  return { own: (x[11]! + x[12]!) / CLK_TCK, children: (x[13]! + x[14]!) / CLK_TCK };
}

/** The machine's CPU seconds, busy and in all, since boot (/proc/stat). */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  const v = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = v[3]! + v[4]!;
  return { busy: (total - idle) / CLK_TCK, total: total / CLK_TCK };
}

/** CPU seconds of a process tree so far: each member's own and its reaped children's (a child that exits moves into its parent's count). */
export function treeCpu(root: number): number {
  let total = 0;
  for (const { pid } of treePids(root)) {
    try {
      const c = processCpu(pid);
      total += c.own + c.children;
    } catch {
      // exited meanwhile: its time is in its parent's children count at the next reading
    }
  }
  return total;
}

export const load1 = () => Number(os.loadavg()[0]!.toFixed(2));

/** The share of the machine's CPU that was busy between two readings. */
export const busyShare = (a: { busy: number; total: number }, b: { busy: number; total: number }) => (b.busy - a.busy) / (b.total - a.total);

/** Sums VmRSS over a process tree every SAMPLE_MS; keeps the series and the largest sample with its processes. */
export class TreeMemory {
  readonly samples: { at: number; totalKiB: number; withoutForkCopiesKiB: number; rootKiB: number; processes: number }[] = [];
  /** The largest sum of VmRSS. */
  peak: { at: number; totalKiB: number; processes: ProcSample[] } | undefined;
  /** The largest sum of VmRSS without fork copies (see {@link ProcSample.forkCopy}). */
  peakWithoutForkCopies: { at: number; totalKiB: number; processes: ProcSample[] } | undefined;
  /** The processes of the latest sample. */
  latest: ProcSample[] = [];
  /** When a program was first seen since {@link resetPeak} (pdftoppm: a range's rendering began; tesseract: its reading). */
  firstSeen = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly root: number) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Forgets the peak so far: the next samples decide it. */
  resetPeak(): void {
    this.peak = undefined;
    this.peakWithoutForkCopies = undefined;
    this.firstSeen = new Map();
  }

  between(from: number, to: number): number[] {
    return this.samples.filter((s) => s.at >= from && s.at <= to).map((s) => s.totalKiB);
  }

  private sample(): void {
    const at = now();
    const processes = treeSample(this.root);
    const totalKiB = processes.reduce((a, p) => a + p.rssKiB, 0);
    const withoutForkCopiesKiB = processes.reduce((a, p) => a + (p.forkCopy ? 0 : p.rssKiB), 0);
    const rootKiB = processes.find((p) => p.pid === this.root)?.rssKiB ?? 0;
    this.samples.push({ at, totalKiB, withoutForkCopiesKiB, rootKiB, processes: processes.length });
    if (!this.peakWithoutForkCopies || withoutForkCopiesKiB > this.peakWithoutForkCopies.totalKiB) this.peakWithoutForkCopies = { at, totalKiB: withoutForkCopiesKiB, processes };
    this.latest = processes;
    for (const p of processes) if (!this.firstSeen.has(p.name)) this.firstSeen.set(p.name, at);
    if (!this.peak || totalKiB > this.peak.totalKiB) this.peak = { at, totalKiB, processes };
  }
}

/** The processes of a sample by program: count and MiB, largest first. */
export function byProgram(processes: readonly ProcSample[], root: number): { program: string; count: number; rssMiB: number }[] {
  const groups = new Map<string, { count: number; kib: number }>();
  for (const p of processes) {
    const program = p.pid === root ? "folio dev (node)" : p.forkCopy ? "fork of its parent before exec" : p.name;
    const g = groups.get(program) ?? { count: 0, kib: 0 };
    g.count++;
    g.kib += p.rssKiB;
    groups.set(program, g);
  }
  return [...groups].map(([program, g]) => ({ program, count: g.count, rssMiB: Math.round(mib(g.kib)) })).sort((a, b) => b.rssMiB - a.rssMiB);
}
