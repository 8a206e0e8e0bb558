/**
 * Tool supervision for the sandbox program (`converter.ts`): LibreOffice,
 * pdfinfo and pdftoppm each run in a process group of their own with a
 * fixed environment ({@link toolEnv}: nothing inherited from the program),
 * watched from their start, and the whole group is killed when the job's
 * deadline passes or its signal aborts (the job then ends as `timeout`).
 *
 * Bundled into the sandbox program with `converter.ts`, under its rule on
 * imports.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { JobError } from "./job-error.ts";

/** Bytes of a tool's stderr kept for an error message. */
export const MESSAGE_BYTES = 2000;

/**
 * glibc malloc settings for the tools: allocations under 256 MiB come from
 * the heap (not a mapping of their own), and the heap is not trimmed until
 * 256 MiB of it are free. At start LibreOffice (headless, svp) allocates,
 * clears and frees large pixel buffers over and over; with glibc's defaults
 * every round goes through mmap/munmap or a heap trim, so the pages are
 * faulted in afresh each time: about 293,000 page faults per start, against
 * 47,000 with these settings (LibreOffice 7.4, any document; 0.81 → 0.49 s
 * on the host). Under gVisor's ptrace platform a page fault is a round trip
 * through the sandbox kernel, so there it was the largest single cost of a
 * conversion (docs/benchmarks.md). Either setting alone does not help. The
 * processes live for one document, so keeping their peak heap (about 50 MB
 * more) costs nothing.
 */
export const MALLOC_ENV = Object.freeze({ MALLOC_MMAP_THRESHOLD_: String(256 * 1024 * 1024), MALLOC_TRIM_THRESHOLD_: String(256 * 1024 * 1024) });

/** The whole environment of a tool: nothing is inherited from the program. */
export function toolEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: "/usr/bin:/bin", LANG: "C.UTF-8", SAL_USE_VCLPLUGIN: "svp", ...MALLOC_ENV, ...extra };
}

/** How a tool ended: its exit code, and what it said. */
export interface ToolRun {
  code: number | null;
  /** stdout and stderr together, the first {@link MESSAGE_BYTES} or so. */
  output: string;
}

/**
 * Runs one tool in its own process group and kills the group when the
 * deadline passes or `signal` aborts (then throws `timeout`).
 */
export function runTool(command: string, args: string[], deadline: number, signal: AbortSignal | undefined, env: Record<string, string> = {}): Promise<ToolRun> {
  return spawnTool(command, args, deadline, signal, env);
}

/**
 * {@link runTool}, and when `onStdout` is given the tool's stdout is that
 * callback's to read (only stderr goes into `output`).
 */
export function spawnTool(
  command: string,
  args: string[],
  deadline: number,
  signal: AbortSignal | undefined,
  env: Record<string, string>,
  onStdout?: (child: ChildProcess) => void,
): Promise<ToolRun> {
  if (deadline - Date.now() <= 0 || signal?.aborted) return Promise.reject(new JobError("timeout", "the conversion ran out of time"));
  return superviseTool(startTool(command, args, env, false), deadline, signal, onStdout);
}

/** A tool's process, started in a process group of its own; watched from its start. */
export interface StartedTool {
  command: string;
  child: ChildProcess;
  /** Its end (or why it could not start), whenever that comes. */
  closed: Promise<{ code: number | null } | Error>;
  /** stderr (and stdout, unless it has a reader of its own), the first {@link MESSAGE_BYTES} or so. */
  output(): string;
  keep(chunk: Buffer): void;
  /** SIGKILL to its whole process group (idempotent). */
  kill(): void;
  /** {@link kill}, resolving once it has ended. */
  stop(): Promise<void>;
  /** Whether it has ended (or could not start). */
  ended(): boolean;
}

/** Starts a tool; with `stdin` its stdin is a pipe from here, with `stdout` a file descriptor its stdout is that file. */
export function startTool(command: string, args: string[], env: Record<string, string>, stdin: boolean, stdout?: number): StartedTool {
  const child = spawn(command, args, { stdio: [stdin ? "pipe" : "ignore", stdout ?? "pipe", "pipe"], detached: true, env: toolEnv(env) });
  // Written to after it may have ended: its end says what happened, not EPIPE.
  child.stdin?.on("error", () => undefined);
  let output = "";
  const keep = (chunk: Buffer) => {
    if (output.length < MESSAGE_BYTES) output += chunk.toString("utf8");
  };
  child.stderr!.on("data", keep);
  let ended = false;
  const closed = new Promise<{ code: number | null } | Error>((resolve) => {
    child.once("error", (err) => resolve(err));
    child.once("close", (code) => resolve({ code }));
  });
  void closed.then(() => (ended = true));
  const kill = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  };
  const stop = async () => {
    kill();
    await closed;
  };
  return { command, child, closed, output: () => output, keep, kill, stop, ended: () => ended };
}

/** Waits for a started tool's end; kills it when the deadline passes or `signal` aborts (then throws `timeout`). */
export async function superviseTool(tool: StartedTool, deadline: number, signal: AbortSignal | undefined, onStdout?: (child: ChildProcess) => void): Promise<ToolRun> {
  let timedOut = false;
  const kill = () => {
    timedOut = true;
    tool.kill();
  };
  const timer = setTimeout(kill, Math.max(0, deadline - Date.now()));
  signal?.addEventListener("abort", kill, { once: true });
  if (signal?.aborted) kill();
  if (onStdout) onStdout(tool.child);
  else tool.child.stdout?.on("data", tool.keep);
  try {
    const end = await tool.closed;
    if (timedOut) throw new JobError("timeout", "the conversion ran out of time");
    if (end instanceof Error) throw new JobError("conversion_failed", `could not start ${tool.command}: ${end.message}`);
    return { code: end.code, output: tool.output() };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", kill);
  }
}
