/**
 * Folio's own processes as children (`folio edge`, `folio extraction`,
 * `folio worker`, `folio dev`, each node with tsx's loader, one process so
 * its pid is the whole service): for tests that SIGKILL them and start them
 * again, as a node failure or an OOM kill would, and for end-to-end tests
 * of `folio dev` (with accounts made by `folio admin`, as an operator
 * would). Not a test double: the real commands.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

/** The repository's root. */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The arguments of node that run `folio …`: tsx's loader, then the entry point. */
export const FOLIO = ["--import", "tsx", join(ROOT, "cmd", "folio", "main.ts")];

/** A child process of a test, started by {@link startFolio} or {@link startProcess}. */
export interface FolioProcess {
  /** What it is, as messages name it: `folio edge`, `prometheus`. */
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
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(DATABASE_URL|REDIS_URL|FOLIO_|OTEL_)/.test(k)) env[k] = v;
  return env;
}

/** Whether the child has ended, by an exit or a signal. */
const ended = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

/** SIGTERM, then SIGKILL once `graceMs` have passed; resolves once the child has exited (at once if it had). */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (ended(child)) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Waits until `url` answers 2xx; throws with the child's output once it has
 * ended or `withinMs` have passed (the caller stops it: a test's `afterAll`,
 * or its own start function).
 */
export async function untilAnswering(child: ChildProcess, what: string, url: string, output: () => string, withinMs = 90_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (ended(child)) throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    if (Date.now() > deadline) throw new Error(`${what} did not answer ${url} within ${withinMs / 1000} s:\n${output()}`);
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Starts `file args` (Folio's own command or another server a test runs:
 * Prometheus) and waits until `readyUrl` answers, or kills it and throws
 * with its output once it exits or `withinMs` have passed.
 */
export async function startProcess(name: string, file: string, args: string[], options: Pick<SpawnOptions, "cwd" | "env">, readyUrl: string, withinMs = 90_000): Promise<FolioProcess> {
  const child = spawn(file, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const proc: FolioProcess = {
    name,
    child,
    output: () => out,
    kill: async () => {
      if (!ended(child)) child.kill("SIGKILL");
      await exited;
    },
    stop: () => stopChild(child),
  };
  try {
    await untilAnswering(child, name, readyUrl, proc.output, withinMs);
  } catch (e) {
    await proc.kill();
    throw e;
  }
  return proc;
}

/** Starts `folio <command>` with `env` (over a clean environment, logging warnings) and waits until `readyUrl` (a health or metrics URL) answers or it exits. */
export function startFolio(command: "edge" | "extraction" | "worker" | "conversion" | "dev", env: Record<string, string>, readyUrl: string, withinMs = 90_000): Promise<FolioProcess> {
  return startProcess(`folio ${command}`, process.execPath, [...FOLIO, command], { cwd: ROOT, env: { ...cleanEnv(), LOG_LEVEL: "warn", ...env } }, readyUrl, withinMs);
}

/**
 * `folio admin account create --email <email> --name <email> <flags…>` on
 * `env`'s database (over a clean environment, logging warnings): for PGlite,
 * before folio dev holds the data folder, PGlite allowing one process. The
 * new account's API key; throws with what the command wrote when it fails.
 */
export function createAccountWithCli(env: NodeJS.ProcessEnv, email: string, ...flags: string[]): string {
  const made = spawnSync(process.execPath, [...FOLIO, "admin", "account", "create", "--email", email, "--name", email, ...flags], {
    cwd: ROOT,
    env: { ...cleanEnv(), LOG_LEVEL: "warn", ...env },
    encoding: "utf8",
    timeout: 120_000,
  });
  if (made.status !== 0) throw new Error(`folio admin account create: ${made.stderr}`);
  return (JSON.parse(made.stdout) as { api_key: { key: string } }).api_key.key;
}
