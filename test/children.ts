/**
 * Watches the real child processes of this process (and their children)
 * while a test runs, and keeps the environment each program was started
 * with, as `/proc/<pid>/environ` shows it: what a parser taken over by a
 * crafted document could read of itself. For the tests of "no secret where
 * a parser runs" (docs/sandbox-parsers.md).
 *
 * The watching runs in a worker thread that lists /proc every millisecond
 * with synchronous reads, so that it keeps looking while the test's own
 * event loop serves the requests, and short-lived tools (pdfinfo lives a
 * few milliseconds) are still seen. A child is taken only once it runs one
 * of the programs named: between fork and exec it is still a copy of Node,
 * whose /proc environ is this process's own.
 */
import { Worker } from "node:worker_threads";

export interface SeenChild {
  pid: number;
  /** The program it runs (`/proc/<pid>/exe`). */
  exe: string;
  /** Its environment, `NAME=value` entries. */
  environ: string[];
  /** Its network namespace (`/proc/<pid>/ns/net`, "net:[inode]"): this process's own unless it was jailed. */
  netns: string;
}

export interface ChildWatch {
  /** Stops watching; the children seen running one of the programs, in the order they were seen. */
  stop(): Promise<SeenChild[]>;
}

const WATCHER = `
const { parentPort, workerData } = require("node:worker_threads");
const fs = require("node:fs");
const { root, programs, stop } = workerData;
const family = new Set([String(root)]);
const strangers = new Set();
const seen = new Map();
const read = (path) => { try { return fs.readFileSync(path, "utf8"); } catch { return undefined; } };
for (;;) {
  const last = Atomics.load(stop, 0) === 1;
  let pids = [];
  try { pids = fs.readdirSync("/proc").filter((n) => /^[0-9]+$/.test(n)); } catch {}
  for (const pid of pids) {
    if (strangers.has(pid) || seen.has(pid)) continue;
    if (!family.has(pid)) {
      const stat = read("/proc/" + pid + "/stat");
      if (stat === undefined) continue;
      const ppid = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
      if (!family.has(ppid)) { strangers.add(pid); continue; }
      family.add(pid);
    }
    let exe;
    try { exe = fs.readlinkSync("/proc/" + pid + "/exe"); } catch { continue; }
    const name = exe.slice(exe.lastIndexOf("/") + 1);
    if (!programs.includes(name)) continue; // not yet exec'd, or another program: looked at again next round
    const environ = read("/proc/" + pid + "/environ");
    // Empty: it ended between the two reads (a zombie shows no environment); every child is given at least PATH.
    if (!environ) continue;
    let netns;
    try { netns = fs.readlinkSync("/proc/" + pid + "/ns/net"); } catch { continue; }
    seen.set(pid, { pid: Number(pid), exe, environ: environ.split("\\0").filter(Boolean), netns });
  }
  if (last) break;
  Atomics.wait(stop, 0, 0, 1);
}
parentPort.postMessage([...seen.values()]);
`;

/**
 * Starts watching this process's descendants for the `programs` (file
 * names of their executables: `pdftoppm`, `tesseract`, `soffice.bin`).
 */
export async function watchChildren(programs: readonly string[]): Promise<ChildWatch> {
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(WATCHER, { eval: true, workerData: { root: process.pid, programs: [...programs], stop } });
  const result = new Promise<SeenChild[]>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the /proc watcher exited with ${code} before answering`)));
  });
  await new Promise((resolve) => worker.once("online", resolve));
  return {
    async stop() {
      Atomics.store(stop, 0, 1);
      Atomics.notify(stop, 0);
      try {
        return await result;
      } finally {
        await worker.terminate();
      }
    },
  };
}
