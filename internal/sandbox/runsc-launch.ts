/**
 * Launch and supervision of one runsc sandbox, for the backend (runsc.ts),
 * its pool (runsc-pool.ts), its checkpoint policy (runsc-restore.ts) and its
 * leftovers cleanup (runsc-leftovers.ts): a sandbox's folders and OCI
 * bundle ({@link buildOciConfig}; its job folder a size-limited tmpfs,
 * `jobfs.ts`), `runsc run` or `runsc restore` started in the foreground,
 * supervised under its time limit and the caller's abort until it exits or
 * its program has written result.json, killed (`runsc kill ID KILL`, then
 * `runsc delete --force ID`) and deleted; and the one-shot runsc commands
 * besides. Which sandbox serves a document is decided by its callers.
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { randomUUID } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { PreparedAssets } from "./assets.ts";
import type { SandboxInput } from "./interface.ts";
import { mountJobDir, unmountJobDir } from "./jobfs.ts";
import { buildOciConfig, type SandboxLimits } from "./oci.ts";

/** How long to keep trying to kill a sandbox that is still being created. */
const KILL_RETRY_MS = 10_000;
/** Output of runsc and the program kept for logs and error messages. */
const LOG_BYTES = 4000;
/** How long `runsc run` gets to exit by itself after its sandbox was killed or told to stop. */
export const EXIT_GRACE_MS = 3000;
/** How often the host looks for a running sandbox's result.json when its folder cannot be watched. */
const RESULT_POLL_MS = 5;
/** How often {@link fileAppears} looks for its file besides inotify's word. */
const FILE_POLL_MS = 100;

/** How a supervised sandbox ended. */
export interface RunOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  computeMillis: number;
  timedOut: boolean;
  aborted: boolean;
}

/** A `runsc run` process and what it said. */
export interface Launched {
  id: string;
  child: ChildProcessByStdio<Writable | null, Readable, Readable>;
  output(): string;
  exited(): boolean;
  /** Settles when `runsc run` exits; rejects when it could not be started. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A new sandbox's container id and folders: `base` holds the job folder and the bundle. */
export interface SandboxFolders {
  id: string;
  base: string;
  jobDir: string;
  bundleDir: string;
}

export interface RunscSettings {
  /** The runsc binary. */
  binary: string;
  /** runsc's private state folder (`--root`). */
  stateDir: string;
  /** The global flags that shape a sandbox: its platform and tuning (part of the checkpoint image's key). */
  tuningFlags: readonly string[];
  /** Sandbox folders are made under `<workDir>/jobs`. */
  workDir: string;
  /** In every container id (`folio-<tag>-<uuid>`), so that the leftovers of a dead backend can be told apart (owners.ts). */
  tag: string;
  limits: SandboxLimits;
  logger?: Logger;
}

/** The runsc commands of one backend: its sandboxes made, launched, supervised, killed and deleted. */
export class Runsc {
  constructor(private readonly settings: RunscSettings) {}

  /** The runsc binary (part of the checkpoint image's key). */
  get binary(): string {
    return this.settings.binary;
  }

  /** The global flags that shape a sandbox (part of the checkpoint image's key). */
  tuningFlags(): string[] {
    return [...this.settings.tuningFlags];
  }

  /**
   * A new sandbox's folders and OCI bundle; `fill` writes the job folder's
   * first files. The job folder is a tmpfs of `jobFolderBytes` (jobfs.ts).
   */
  async makeBundle(assets: PreparedAssets, input: Pick<SandboxInput, "traceparent">, jobFolderBytes: number, fill: (jobDir: string) => Promise<void>): Promise<SandboxFolders> {
    const id = `folio-${this.settings.tag}-${randomUUID()}`;
    const base = join(this.settings.workDir, "jobs", id);
    const jobDir = join(base, "job");
    const bundleDir = join(base, "bundle");
    try {
      await mkdir(bundleDir, { recursive: true, mode: 0o700 });
      await mkdir(jobDir, { recursive: true, mode: 0o755 });
      await mountJobDir(jobDir, jobFolderBytes);
      await fill(jobDir);
      const config = this.ociConfig(assets, jobDir, input.traceparent ? { TRACEPARENT: input.traceparent } : {});
      await writeFile(join(bundleDir, "config.json"), JSON.stringify(config, null, 2), { mode: 0o600 });
    } catch (err) {
      await removeSandboxFolder(base);
      throw err;
    }
    return { id, base, jobDir, bundleDir };
  }

  ociConfig(assets: PreparedAssets, jobDir: string, env: Record<string, string>): Record<string, unknown> {
    return buildOciConfig({
      rootfs: assets.rootfs,
      jobDir,
      nodeBinary: assets.nodeBinary,
      program: assets.program,
      profileDir: assets.profileDir,
      limits: this.settings.limits,
      env,
      masks: { emptyFile: assets.emptyFile, files: assets.maskedFiles },
    });
  }

  /**
   * Starts `runsc run` (or `restore`: `command` is the subcommand and its
   * flags); with `stdin`, the sandbox program's stdin is a pipe from here.
   * Both stay in the foreground: `closed` settles with the program's exit
   * once the sandbox has ended.
   */
  launch(id: string, command: string[], stdin: boolean): Launched {
    const args = [...this.globalFlags(), "--network=none", ...command, id];
    const child: Launched["child"] = stdin
      ? spawn(this.settings.binary, args, { stdio: ["pipe", "pipe", "pipe"] })
      : spawn(this.settings.binary, args, { stdio: ["ignore", "pipe", "pipe"] });
    // A sandbox that already ended makes a late hand-in fail with EPIPE; its exit says what happened.
    child.stdin?.on("error", () => undefined);
    let output = "";
    let exited = false;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-LOG_BYTES);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
      child.once("error", (err) => {
        exited = true;
        // The error names the binary's path: in the cause only.
        reject(new FolioError("internal_error", "could not start runsc", { cause: err }));
      });
      child.once("close", (code, sig) => {
        exited = true;
        resolve({ code, signal: sig });
      });
    });
    // Observed by whoever waits on it; never an unhandled rejection in the pool.
    closed.catch(() => undefined);
    return { id, child, output: () => output, exited: () => exited, closed };
  }

  /**
   * Waits for a launched sandbox to exit under the time limit and `signal`,
   * or, given its job folder, until its program has written result.json
   * (whole: it is renamed into place), whichever comes first.
   * The clock (time limit and compute time) starts now, before `start` runs.
   */
  async supervise(launched: Launched, timeoutMs: number, signal: AbortSignal | undefined, start?: () => Promise<void>, jobDir?: string): Promise<RunOutcome> {
    const started = performance.now();
    let timedOut = false;
    let aborted = false;
    const stop = () => {
      void this.kill(launched);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      await start?.().catch((err: unknown) => {
        // Killed (time limit, caller) while being handed its document: that is the outcome.
        if (!timedOut && !aborted) throw err;
      });
      const watching = new AbortController();
      const ended = await Promise.race([
        launched.closed,
        ...(jobDir && !timedOut && !aborted ? [resultWritten(join(jobDir, "output", "result.json"), watching.signal)] : []),
      ]).finally(() => watching.abort());
      const { code, signal: sig } = ended ?? { code: null, signal: null };
      return { code, signal: sig, output: launched.output(), computeMillis: Math.round(performance.now() - started), timedOut, aborted };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * Kills the sandbox. A sandbox still being created is not known to
   * `runsc kill` yet, so it is retried until it works or `runsc run` exits.
   * `runsc run` then tears the sandbox down itself; a `runsc delete` at the
   * same time only makes both wait on runsc's lock (5 s), so the deletion is
   * forced only when `runsc run` does not exit.
   */
  async kill(launched: Launched): Promise<void> {
    const until = Date.now() + KILL_RETRY_MS;
    while (!launched.exited() && Date.now() < until) {
      const { code } = await this.command(["kill", launched.id, "KILL"]);
      if (code === 0) break;
      await sleep(50);
    }
    if (await exitsWithin(launched, EXIT_GRACE_MS)) return;
    await this.command(["delete", "--force", launched.id]);
  }

  /** Deletes the container's state; a container that is already gone is fine. */
  async delete(id: string): Promise<void> {
    const { code, output } = await this.command(["delete", "--force", id]);
    if (code !== 0 && !/does not exist|not found/i.test(output)) {
      this.settings.logger?.warn({ sandbox: id, output }, "runsc delete failed");
    }
  }

  /** Runs one runsc command (`runsc <global flags> <args>`) to its end: its exit code (-1: it could not start) and all it said. */
  command(args: string[]): Promise<{ code: number | null; output: string }> {
    return new Promise((resolve) => {
      const child = spawn(this.settings.binary, [...this.globalFlags(), ...args], { stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (c: Buffer) => (output += c.toString("utf8")));
      child.stderr.on("data", (c: Buffer) => (output += c.toString("utf8")));
      child.once("error", (err) => resolve({ code: -1, output: err.message }));
      child.once("close", (code) => resolve({ code, output }));
    });
  }

  private globalFlags(): string[] {
    return [`--root=${this.settings.stateDir}`, ...this.settings.tuningFlags];
  }
}

/** Whether `runsc run` exits within `ms` (it may have already). */
export async function exitsWithin(launched: Launched, ms: number): Promise<boolean> {
  if (launched.exited()) return true;
  const timeUp = new AbortController();
  const exited = launched.closed.then(
    () => true,
    () => true,
  );
  const late = sleep(ms, false, { signal: timeUp.signal }).catch(() => false);
  const answer = await Promise.race([exited, late]);
  timeUp.abort();
  return answer;
}

/**
 * Resolves (undefined) once `file` exists; never while `stop` has not
 * aborted and it does not. Told by inotify (`fs.watch` on its folder: the
 * file is written on the host by the sandbox's file server), and looked for
 * every {@link FILE_POLL_MS} besides in case an event is missed: polling
 * every 5 ms instead cost the service a stat on its main thread 200 times a
 * second per sandbox.
 */
async function resultWritten(file: string, stop: AbortSignal): Promise<undefined> {
  if (await fileAppears(file, stop)) return undefined;
  return new Promise<undefined>(() => undefined);
}

/**
 * True once `file` exists, false when `stop` aborts first (or at once when
 * it already has). Watches the file's folder (inotify), with a slower poll
 * besides; a folder that cannot be watched is polled at {@link RESULT_POLL_MS}.
 */
export async function fileAppears(file: string, stop: AbortSignal): Promise<boolean> {
  const exists = () => stat(file).then(() => true, () => false);
  if (stop.aborted) return false;
  let poke: () => void = () => undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(file), { persistent: false }, (_event, name) => {
      if (name === basename(file)) poke();
    });
    watcher.on("error", () => undefined);
  } catch {
    watcher = undefined;
  }
  try {
    while (!stop.aborted) {
      if (await exists()) return true;
      const pause = new AbortController();
      const onStop = () => pause.abort();
      stop.addEventListener("abort", onStop, { once: true });
      poke = () => pause.abort();
      await sleep(watcher ? FILE_POLL_MS : RESULT_POLL_MS, undefined, { signal: pause.signal }).catch(() => undefined);
      stop.removeEventListener("abort", onStop);
    }
    return false;
  } finally {
    watcher?.close();
  }
}

/** Removes a sandbox's folder (job folder and bundle), its job folder's tmpfs unmounted first. */
export async function removeSandboxFolder(base: string): Promise<void> {
  await unmountJobDir(join(base, "job"));
  await rm(base, { recursive: true, force: true });
}

/** The last lines of what runsc or the program said, short enough for a log field or an error's cause. */
export function lastLine(text: string): string {
  return text.trim().split("\n").slice(-3).join(" | ").slice(0, 500);
}
