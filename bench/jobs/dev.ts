/** `folio dev` as a child process for a benchmark: its environment, accounts made with the real CLI, start and stop. */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { join, resolve } from "node:path";
import { cleanEnv, createAccountWithCli, stopChild, untilAnswering } from "../../test/folio-processes.ts";
import type { Api } from "./api.ts";
import { FOLIO, ROOT } from "./common.ts";

/** The bench's environment without Folio's, Postgres', Redis' or tracing's variables. */
export { cleanEnv };

export interface Dev {
  url: string;
  metricsUrl: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** `folio admin account create` on the data folder (before folio dev holds its PGlite): limits no polling reaches, plenty of credit. */
export function createAccount(env: NodeJS.ProcessEnv, email: string): Api["key"] {
  return createAccountWithCli(env, email, "--credits-cents", "1000000", "--requests-per-minute", "100000", "--requests-per-day", "10000000");
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
  const dev: Dev = {
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    child,
    output: () => out,
    // SIGKILL only after 30 s: folio dev drains its work, and writes its CPU profile (BENCH_JOB_CPU_PROF) as it exits.
    stop: () => stopChild(child, 30_000),
  };
  try {
    await untilAnswering(child, "folio dev", `${dev.url}/healthz`, dev.output, 180_000);
  } catch (e) {
    await dev.stop();
    throw e;
  }
  return dev;
}
