/**
 * Folio's own processes as children (`folio edge`, `folio extraction`,
 * `folio worker`, each node with tsx's loader, one process so its pid is the
 * whole service): for tests that SIGKILL them and start them again, as a
 * node failure or an OOM kill would. Not a test double: the real commands.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const FOLIO = ["--import", "tsx", join(ROOT, "cmd", "folio", "main.ts")];

export interface FolioProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Everything it wrote, for a failing test's message. */
  output(): string;
  /** SIGKILL: no shutdown hook runs, nothing is flushed. Resolves once it has exited. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after 10 s. */
  stop(): Promise<void>;
}

/** The test process's environment without Folio's, Postgres', Redis' or tracing's variables: each child gets only what it is given. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(DATABASE_URL|REDIS_URL|FOLIO_|OTEL_)/.test(k)) env[k] = v;
  return env;
}

/** Starts `folio <command>` and waits until `ready` answers (a health or metrics URL) or it exits. */
export async function startFolio(command: "edge" | "extraction" | "worker" | "conversion", env: Record<string, string>, readyUrl: string): Promise<FolioProcess> {
  const child = spawn(process.execPath, [...FOLIO, command], { cwd: ROOT, env: { ...cleanEnv(), LOG_LEVEL: "warn", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const proc: FolioProcess = {
    name: command,
    child,
    output: () => out,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`folio ${command} exited (${child.exitCode}):\n${out}`);
    if (Date.now() > deadline) {
      await proc.kill();
      throw new Error(`folio ${command} did not answer ${readyUrl} within 90 s:\n${out}`);
    }
    if (await fetch(readyUrl).then((r) => r.ok, () => false)) return proc;
    await new Promise((r) => setTimeout(r, 200));
  }
}
