/**
 * The `runsc` backend: one gVisor sandbox per document on this machine.
 *
 * Per document: a fresh job folder and an OCI bundle (config.json from
 * {@link buildOciConfig}), then `runsc --network=none --platform=ptrace
 * --root <private state> run --bundle <bundle> <unique id>`. The wall-clock
 * limit covers the whole sandbox; on expiry it is killed (`runsc kill ID
 * KILL`, then `runsc delete --force ID`) and the answer is `timeout`. The
 * container is deleted and the job folder removed after every run.
 *
 * Needs root (runsc creates namespaces and cgroups) and the Debian packages
 * runsc, libreoffice-writer-nogui, libreoffice-impress-nogui, poppler-utils
 * and fonts (fonts-dejavu-core at least).
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chown, cp, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { prepareAssets, type PreparedAssets } from "./assets.ts";
import type { JobResult, ProbeSpec, SandboxBackend, SandboxInput, SandboxResult } from "./interface.ts";
import { checkInput, checkedPageCount, readPages, readResult, resultError, writeJob, DEFAULT_MAX_OUTPUT_BYTES } from "./jobdir.ts";
import { DEFAULT_LIMITS, NOBODY, SANDBOX_PATHS, buildOciConfig, type SandboxLimits } from "./oci.ts";

export interface RunscBackendOptions {
  /**
   * Host folder for the prepared root folder, program and profile, runsc's
   * state and the job folders. Default `<tmpdir>/folio-runsc-<uid>`.
   */
  workDir?: string;
  /** The runsc binary. Default `runsc` on PATH. */
  runsc?: string;
  /** gVisor platform; `kvm` hangs on these machines, so `ptrace` is the default. */
  platform?: "ptrace" | "systrap" | "kvm";
  /** More global runsc flags (tuning, e.g. `--lisafs`), placed before the subcommand. */
  runscFlags?: string[];
  limits?: Partial<SandboxLimits>;
  /** Node 24 binary run inside the sandbox (default: the project's `node` package). */
  nodeBinary?: string;
  /** A prebuilt sandbox program bundle (default: bundled from cmd/sandbox at start). */
  program?: string;
  /**
   * Copy the LibreOffice profile into the job folder on the host before the
   * sandbox starts, instead of inside the sandbox onto its tmpfs.
   */
  precopyProfile?: boolean;
  /** Largest total size of the pages read back. */
  maxOutputBytes?: number;
  logger?: Logger;
}

/** How long to keep trying to kill a sandbox that is still being created. */
const KILL_RETRY_MS = 10_000;
/** Output of runsc and the program kept for logs and error messages. */
const LOG_BYTES = 4000;

interface RunOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  computeMillis: number;
  timedOut: boolean;
  aborted: boolean;
}

export class RunscBackend implements SandboxBackend {
  readonly workDir: string;
  /** runsc's private state folder (`--root`): `runsc --root <this> list` shows live sandboxes. */
  readonly stateDir: string;
  private readonly runsc: string;
  private readonly platform: string;
  private readonly limits: SandboxLimits;
  private readonly maxOutputBytes: number;
  private assets: Promise<PreparedAssets> | undefined;

  constructor(private readonly options: RunscBackendOptions = {}) {
    this.workDir = options.workDir ?? join(tmpdir(), `folio-runsc-${process.getuid?.() ?? 0}`);
    this.stateDir = join(this.workDir, "state");
    this.runsc = options.runsc ?? "runsc";
    this.platform = options.platform ?? "ptrace";
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  }

  /** Prepares the shared parts once (root folder, program, profile); later calls reuse them. */
  prepare(): Promise<PreparedAssets> {
    this.assets ??= (async () => {
      await mkdir(this.workDir, { recursive: true, mode: 0o700 });
      await mkdir(this.stateDir, { recursive: true, mode: 0o700 });
      await mkdir(join(this.workDir, "jobs"), { recursive: true, mode: 0o711 });
      return prepareAssets(join(this.workDir, "assets"), { nodeBinary: this.options.nodeBinary, program: this.options.program });
    })().catch((err: unknown) => {
      this.assets = undefined;
      throw new FolioError("internal_error", `the runsc sandbox could not be prepared: ${(err as Error).message}`, { cause: err, retryable: true });
    });
    return this.assets;
  }

  async convert(input: SandboxInput, signal?: AbortSignal): Promise<SandboxResult> {
    checkInput(input);
    const { result, computeMillis, jobDir, cleanup } = await this.runJob(input, input.timeoutMs, signal, {});
    try {
      if (!result.ok) throw resultError(result);
      const pageCount = checkedPageCount(result, input.maxPages);
      const pages = await readPages(jobDir, pageCount, this.maxOutputBytes);
      return { pages, pageCount, computeMillis };
    } finally {
      await cleanup();
    }
  }

  /**
   * Runs the sandbox program's probe mode (tests only): what the sandbox can
   * see, write and reach. Not part of {@link SandboxBackend}.
   */
  async probe(spec: ProbeSpec, timeoutMs = 60_000): Promise<JobResult> {
    const input: SandboxInput = { document: Buffer.from("probe\n"), format: "TXT", maxPages: 1, timeoutMs };
    const { result, cleanup } = await this.runJob(input, timeoutMs, undefined, { probe: spec });
    await cleanup();
    return result;
  }

  private async runJob(
    input: SandboxInput,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    extra: { probe?: ProbeSpec },
  ): Promise<{ result: JobResult; computeMillis: number; jobDir: string; cleanup: () => Promise<void> }> {
    signal?.throwIfAborted();
    const assets = await this.prepare();
    const id = `folio-${randomUUID()}`;
    const base = join(this.workDir, "jobs", id);
    const jobDir = join(base, "job");
    const bundleDir = join(base, "bundle");
    const cleanup = async () => {
      await this.deleteContainer(id);
      await rm(base, { recursive: true, force: true });
    };
    try {
      await mkdir(bundleDir, { recursive: true, mode: 0o700 });
      await mkdir(jobDir, { recursive: true, mode: 0o755 });
      let profileDir: string = SANDBOX_PATHS.profile;
      let profileInPlace = false;
      if (this.options.precopyProfile) {
        await cp(assets.profileDir, join(jobDir, "profile"), { recursive: true });
        await chownTree(join(jobDir, "profile"));
        profileDir = `${SANDBOX_PATHS.job}/profile`;
        profileInPlace = true;
      }
      await writeJob(
        jobDir,
        input,
        { profileDir, profileInPlace, timeoutMs, maxOutputBytes: this.maxOutputBytes, ...extra },
        { chownOutput: true },
      );
      const config = buildOciConfig({
        rootfs: assets.rootfs,
        jobDir,
        nodeBinary: assets.nodeBinary,
        program: assets.program,
        profileDir: assets.profileDir,
        limits: this.limits,
        env: input.traceparent ? { TRACEPARENT: input.traceparent } : {},
      });
      await writeFile(join(bundleDir, "config.json"), JSON.stringify(config, null, 2), { mode: 0o600 });

      const outcome = await this.runSandbox(id, bundleDir, timeoutMs, signal);
      const log = { sandbox: id, format: input.format, computeMillis: outcome.computeMillis, exit: outcome.code, signal: outcome.signal };
      if (outcome.aborted) {
        this.options.logger?.info(log, "sandbox aborted by caller");
        throw signal?.reason ?? new FolioError("timeout", "the conversion was cancelled");
      }
      if (outcome.timedOut) {
        this.options.logger?.warn(log, "sandbox killed at its time limit");
        throw new FolioError("timeout", `the conversion did not finish within ${timeoutMs} ms`);
      }
      const result = await readResult(jobDir);
      if (!result) {
        this.options.logger?.error({ ...log, output: outcome.output }, "sandbox ended without a result");
        // Killed by a signal: most likely the memory limit, i.e. this document.
        if (outcome.signal || (outcome.code ?? 0) >= 128) {
          throw new FolioError("conversion_failed", "the sandbox was killed before it finished (the document may need more memory than allowed)");
        }
        throw new FolioError("internal_error", `the sandbox ended without a result (exit ${String(outcome.code)}): ${lastLine(outcome.output)}`, { retryable: true });
      }
      this.options.logger?.debug({ ...log, ok: result.ok, pageCount: result.pageCount, timings: result.timings }, "sandbox finished");
      return { result, computeMillis: outcome.computeMillis, jobDir, cleanup };
    } catch (err) {
      await cleanup();
      throw err;
    }
  }

  private runSandbox(id: string, bundleDir: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<RunOutcome> {
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const child = spawn(this.runsc, [...this.globalFlags(), "--network=none", "run", "--bundle", bundleDir, id], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      const keep = (chunk: Buffer) => {
        output = (output + chunk.toString("utf8")).slice(-LOG_BYTES);
      };
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      let exited = false;
      let timedOut = false;
      let aborted = false;
      const stop = () => {
        void this.killContainer(id, () => exited);
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
      child.once("error", (err) => {
        exited = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        reject(new FolioError("internal_error", `could not start runsc (${this.runsc}): ${err.message}`, { cause: err }));
      });
      child.once("close", (code, sig) => {
        exited = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve({ code, signal: sig, output, computeMillis: Math.round(performance.now() - started), timedOut, aborted });
      });
    });
  }

  private globalFlags(): string[] {
    return [`--root=${this.stateDir}`, `--platform=${this.platform}`, ...(this.options.runscFlags ?? [])];
  }

  /**
   * Kills the sandbox. A sandbox still being created is not known to
   * `runsc kill` yet, so it is retried until it works or `runsc run` exits.
   */
  private async killContainer(id: string, exited: () => boolean): Promise<void> {
    const until = Date.now() + KILL_RETRY_MS;
    while (!exited() && Date.now() < until) {
      const { code } = await this.runsc_(["kill", id, "KILL"]);
      if (code === 0) break;
      await sleep(50);
    }
    await this.runsc_(["delete", "--force", id]);
  }

  /** Deletes the container's state; a container that is already gone is fine. */
  private async deleteContainer(id: string): Promise<void> {
    const { code, output } = await this.runsc_(["delete", "--force", id]);
    if (code !== 0 && !/does not exist|not found/i.test(output)) {
      this.options.logger?.warn({ sandbox: id, output }, "runsc delete failed");
    }
  }

  private runsc_(args: string[]): Promise<{ code: number | null; output: string }> {
    return new Promise((resolve) => {
      const child = spawn(this.runsc, [...this.globalFlags(), ...args], { stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (c: Buffer) => (output += c.toString("utf8")));
      child.stderr.on("data", (c: Buffer) => (output += c.toString("utf8")));
      child.once("error", (err) => resolve({ code: -1, output: err.message }));
      child.once("close", (code) => resolve({ code, output }));
    });
  }
}

async function chownTree(dir: string): Promise<void> {
  await chown(dir, NOBODY, NOBODY);
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    await chown(join(entry.parentPath, entry.name), NOBODY, NOBODY);
  }
}

function lastLine(text: string): string {
  return text.trim().split("\n").slice(-3).join(" | ").slice(0, 500);
}
