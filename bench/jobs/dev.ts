/** `folio dev` as a child process for a benchmark: its environment, accounts made with the real CLI, start and stop. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { join, resolve } from "node:path";
import { fetch } from "undici";
import { agent, type Api } from "./api.ts";
import { FOLIO, ROOT, sleep } from "./common.ts";

/** The bench's environment without Folio's, Postgres', Redis' or tracing's variables (as test/folio-processes.ts). */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(DATABASE_URL|REDIS_URL|FOLIO_|OTEL_)/.test(k)) env[k] = v;
  return env;
}

export interface Dev {
  url: string;
  metricsUrl: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** `folio admin account create` on the data folder (before folio dev holds its PGlite): limits no polling reaches, plenty of credit. */
export function createAccount(env: NodeJS.ProcessEnv, email: string): Api["key"] {
  const made = spawnSync(
    process.execPath,
    [...FOLIO, "admin", "account", "create", "--email", email, "--name", email, "--credits-cents", "1000000", "--requests-per-minute", "100000", "--requests-per-day", "10000000"],
    { cwd: ROOT, env, encoding: "utf8", timeout: 120_000 },
  );
  if (made.status !== 0) throw new Error(`folio admin account create: ${made.stderr}`);
  return (JSON.parse(made.stdout) as { api_key: { key: string } }).api_key.key;
}

export async function startDev(env: NodeJS.ProcessEnv, port: number, metricsPort: number): Promise<Dev> {
  // BENCH_JOB_CPU_PROF=<folder>: folio dev writes a V8 CPU profile there as it exits (where its own CPU time goes).
  const profile = process.env.BENCH_JOB_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${resolve(process.env.BENCH_JOB_CPU_PROF)}`] : [];
  // BENCH_JOB_NODE_FLAGS="--trace-gc …": more flags for folio dev's node; its whole output then goes to test-artifacts/bench-jobs-dev.log.
  const flags = (process.env.BENCH_JOB_NODE_FLAGS ?? "").split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...profile, ...flags, ...FOLIO, "dev"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  const log = flags.length ? createWriteStream(join(ROOT, "test-artifacts", "bench-jobs-dev.log")) : undefined;
  let out = "";
  const keep = (d: Buffer) => {
    log?.write(d);
    out = (out + d.toString()).slice(-100_000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const dev: Dev = {
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`folio dev exited (${child.exitCode}):\n${out}`);
    if (Date.now() > deadline) {
      await dev.stop();
      throw new Error(`folio dev did not answer /healthz within 180 s:\n${out}`);
    }
    if (await fetch(`${dev.url}/healthz`, { dispatcher: agent }).then((r) => r.ok, () => false)) return dev;
    await sleep(250);
  }
}
