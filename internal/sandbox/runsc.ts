/**
 * The `runsc` backend: one gVisor sandbox per document on this machine.
 *
 * Per document: a fresh job folder and an OCI bundle (config.json from
 * `buildOciConfig`, oci.ts), then `runsc --network=none --platform=ptrace
 * --root <private state> run --bundle <bundle> <unique id>`. The wall-clock
 * limit covers the whole sandbox; on expiry it is killed (`runsc kill ID
 * KILL`, then `runsc delete --force ID`) and the answer is `timeout`. The
 * result is taken once the program has written result.json, and the
 * container is deleted and the job folder removed after every run: after
 * the answer, in the background ({@link RunscBackend.settled}). The job
 * folder is a size-limited tmpfs on the host (`jobfs.ts`); what the sandbox
 * wrote into it is read as hostile (`jobdir.ts`). Backends sharing the work
 * folder register, clean up after dead ones and share the checkpoint store
 * under the folder's lock (`owners.ts`).
 *
 * With `prestart`, a bounded pool of sandboxes is started ahead of demand
 * (LibreOffice already running in them) and a document is handed to an idle
 * one; with `restore`, sandboxes are restored from a checkpoint image of one
 * in which LibreOffice has started instead of started. Compute time and the
 * time limit count from the hand-in.
 *
 * This file is the backend: what it is given, and how a document goes
 * through a sandbox (made for it, or taken waiting) to its answer. The rest
 * is cut along its seams, one job a file (issue 46), while `RunscBackend`,
 * its options and {@link defaultWorkDir} stay importable from here, where
 * index.ts, the tests, the benchmarks and test/sandbox-assets.ts take them:
 * - `runsc-launch.ts`: one sandbox's bundle, launch and supervision, kill
 *   and deletion, and the runsc commands;
 * - `runsc-pool.ts`: the prestarted (warm) pool and the waiting sandboxes;
 * - `runsc-restore.ts`: the checkpoint image and restoring from it, and its
 *   fallbacks;
 * - `runsc-leftovers.ts`: what backends of dead processes left behind.
 *
 * Needs root (runsc creates namespaces and cgroups) and the Debian packages
 * runsc, libreoffice-writer-nogui, libreoffice-impress-nogui, poppler-utils
 * and fonts (fonts-dejavu-core at least).
 */
import { randomBytes } from "node:crypto";
import { chown, cp, mkdir, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { Metrics } from "../platform/metrics/index.ts";
import { prepareAssets, type PreparedAssets } from "./assets.ts";
import { RestoreMetrics } from "./checkpoint.ts";
import type { JobResult, ProbeSpec, SandboxBackend, SandboxInput, SandboxResult } from "./interface.ts";
import { checkInput, readOutput, readResult, resultError, writeJob, DEFAULT_MAX_OUTPUT_BYTES } from "./jobdir.ts";
import { jobBytes, resizeJobDir } from "./jobfs.ts";
import { DEFAULT_LIMITS, NOBODY, SANDBOX_PATHS, type SandboxLimits } from "./oci.ts";
import { removeLeftovers } from "./runsc-leftovers.ts";
import { EXIT_GRACE_MS, Runsc, exitsWithin, lastLine, removeSandboxFolder, type Launched, type RunOutcome } from "./runsc-launch.ts";
import { PrestartPool, type Prestarted } from "./runsc-pool.ts";
import { RestorePolicy, handInBySignal } from "./runsc-restore.ts";

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
   * sandbox starts, instead of inside the sandbox onto its tmpfs. Not used
   * by pre-started sandboxes.
   */
  precopyProfile?: boolean;
  /**
   * Keep sandboxes started ahead of demand, LibreOffice already running in
   * them; each still converts one document. Call {@link RunscBackend.close}
   * to stop the idle ones.
   */
  prestart?: boolean;
  /**
   * Idle pre-started sandboxes kept (started or starting); set it to the
   * service's concurrency. Default 2.
   */
  prestartPool?: number;
  /**
   * Restore sandboxes from a checkpoint of one in which LibreOffice has
   * started, instead of starting them (the pool's, with `prestart`; else
   * each document's when it comes). The image is made by {@link RunscBackend.prepare}.
   */
  restore?: boolean;
  /** Registry of the restore counters (default: a private one). */
  metrics?: Metrics;
  /** Largest total size of the pages read back. */
  maxOutputBytes?: number;
  logger?: Logger;
}

/** Default number of idle pre-started sandboxes (the service's default concurrency). */
const DEFAULT_PRESTART_POOL = 2;

/** The work folder of a backend given none: one per user under the system's temporary folder. */
export function defaultWorkDir(): string {
  return join(tmpdir(), `folio-runsc-${process.getuid?.() ?? 0}`);
}

/** How a sandbox came to be: made for its document, pre-started, or restored from the image. */
type SandboxStart = "cold" | "prestarted" | "restored";

/** A document's run in a sandbox: its result, and the sandbox's removal, left to the caller. */
interface Run {
  result: JobResult;
  computeMillis: number;
  jobDir: string;
  cleanup: () => Promise<void>;
}

export class RunscBackend implements SandboxBackend {
  readonly workDir: string;
  /** runsc's private state folder (`--root`): `runsc --root <this> list` shows live sandboxes. */
  readonly stateDir: string;
  private readonly limits: SandboxLimits;
  private readonly maxOutputBytes: number;
  private assets: Promise<PreparedAssets> | undefined;
  /** Finished sandboxes being removed after their answer ({@link settled}). */
  private readonly removals = new Set<Promise<void>>();
  /** Counters of restores and their fallbacks. */
  readonly restoreMetrics: RestoreMetrics;
  /** In this backend's container ids, so that what it leaves when its process dies can be told apart (runsc-leftovers.ts). */
  private readonly tag = randomBytes(4).toString("hex");
  private readonly runsc: Runsc;
  /** Idle pre-started (or restored) sandboxes; empty without `prestart`. */
  private readonly pool: PrestartPool;
  /** With `restore`: the checkpoint image and the restores from it. */
  private readonly restore: RestorePolicy | undefined;

  constructor(private readonly options: RunscBackendOptions = {}) {
    this.workDir = options.workDir ?? defaultWorkDir();
    this.stateDir = join(this.workDir, "state");
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    this.restoreMetrics = new RestoreMetrics(options.metrics);
    const logger = options.logger;
    this.runsc = new Runsc({
      binary: options.runsc ?? "runsc",
      stateDir: this.stateDir,
      tuningFlags: [`--platform=${options.platform ?? "ptrace"}`, ...(options.runscFlags ?? [])],
      workDir: this.workDir,
      tag: this.tag,
      limits: this.limits,
      logger,
    });
    const size = options.prestart ? Math.max(1, options.prestartPool ?? DEFAULT_PRESTART_POOL) : 0;
    this.pool = new PrestartPool({ runsc: this.runsc, size, make: () => this.waitingSandbox(), logger });
    this.restore = options.restore
      ? new RestorePolicy({
          runsc: this.runsc,
          workDir: this.workDir,
          tag: this.tag,
          metrics: this.restoreMetrics,
          prepare: () => this.prepare(),
          dropWhenItEnds: (sandbox) => this.pool.dropWhenItEnds(sandbox),
          logger,
        })
      : undefined;
  }

  /**
   * Prepares the shared parts once (root folder, program, profile, and with
   * `restore` the checkpoint image); later calls reuse them. With
   * `prestart`, the pool starts filling once they are ready.
   */
  prepare(): Promise<PreparedAssets> {
    this.assets ??= (async () => {
      await mkdir(this.workDir, { recursive: true, mode: 0o700 });
      await mkdir(this.stateDir, { recursive: true, mode: 0o700 });
      await mkdir(join(this.workDir, "jobs"), { recursive: true, mode: 0o711 });
      await removeLeftovers({ runsc: this.runsc, workDir: this.workDir, stateDir: this.stateDir, tag: this.tag, logger: this.options.logger });
      const assets = await prepareAssets(join(this.workDir, "assets"), { nodeBinary: this.options.nodeBinary, program: this.options.program });
      if (this.restore) await this.restore.prepareImage(assets);
      setImmediate(() => this.pool.fill());
      return assets;
    })().catch((err: unknown) => {
      this.assets = undefined;
      // What failed names host paths: it goes to the cause (logged), not to the caller's message.
      throw new FolioError("internal_error", "the runsc sandbox could not be prepared", { cause: err, retryable: true });
    });
    return this.assets;
  }

  async convert(input: SandboxInput, signal?: AbortSignal): Promise<SandboxResult> {
    checkInput(input);
    signal?.throwIfAborted();
    // An empty pool (or none) still restores rather than starts, when it can.
    const sandbox = this.pool.take() ?? (await this.restored({ wake: false }));
    // The replacement starts once this sandbox has exited, not now: a
    // conversion never shares the CPUs with the warm-up of its own
    // replacement (docs/benchmarks/conversion-history.md, "Conversion (issue 4)").
    const run = await (sandbox ? this.handIn(sandbox, input, signal) : this.runJob(input, input.timeoutMs, signal, {})).catch((err: unknown) => {
      this.pool.fill();
      throw err;
    });
    try {
      if (!run.result.ok) throw resultError(run.result);
      return { ...(await readOutput(run.jobDir, run.result, input, this.maxOutputBytes)), computeMillis: run.computeMillis };
    } finally {
      // The answer does not wait for the sandbox to end and be removed (see finish()).
      this.inBackground(run.cleanup().finally(() => this.pool.fill()));
    }
  }

  /**
   * Resolves once every sandbox that has given its result is removed (its
   * container deleted, its folder gone): they are removed after the answer.
   */
  async settled(): Promise<void> {
    while (this.removals.size > 0) await Promise.all(this.removals);
  }

  private inBackground(removal: Promise<void>): void {
    const tracked = removal
      .catch((err: unknown) => this.options.logger?.warn({ err }, "a finished sandbox could not be removed"))
      .finally(() => this.removals.delete(tracked));
    this.removals.add(tracked);
  }

  /**
   * Stops the pool: idle and starting pre-started sandboxes are killed and
   * removed. Conversions under way finish; later ones start their sandbox
   * on demand, without the checkpoint image: with `restore`, the backend
   * gives up its claim on the image, which another backend on the work
   * folder may then remove. Idempotent.
   */
  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.settled()]);
    if (this.restore && this.assets) await this.restore.release();
  }

  /** Container ids of the idle pre-started sandboxes (for tests and metrics). */
  idleSandboxes(): { id: string; ready: boolean; restored: boolean }[] {
    return this.pool.list();
  }

  /** The checkpoint image's folder once prepared; undefined without `restore` or when there is none. */
  async checkpointImage(): Promise<string | undefined> {
    await this.prepare();
    return this.restore?.currentImage();
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

  /** A sandbox for the pool: restored from the image (and woken) when it can be, else pre-started. */
  private async waitingSandbox(): Promise<Prestarted> {
    return (await this.restored({ wake: true })) ?? (await this.pool.prestarted(await this.prepare()));
  }

  /** A sandbox restored from the image (runsc-restore.ts); undefined without `restore` or when it could not be. */
  private async restored({ wake }: { wake: boolean }): Promise<Prestarted | undefined> {
    if (!this.restore) return undefined;
    return this.restore.restored({ wake });
  }

  private async runJob(input: SandboxInput, timeoutMs: number, signal: AbortSignal | undefined, extra: { probe?: ProbeSpec }): Promise<Run> {
    signal?.throwIfAborted();
    const assets = await this.prepare();
    const { id, base, jobDir, bundleDir } = await this.runsc.makeBundle(assets, input, jobBytes(input.document.length, this.maxOutputBytes), async (jobDir) => {
      let profileDir: string = SANDBOX_PATHS.profile;
      let profileInPlace = false;
      if (this.options.precopyProfile) {
        await cp(assets.profileDir, join(jobDir, "profile"), { recursive: true });
        await chownTree(join(jobDir, "profile"));
        profileDir = `${SANDBOX_PATHS.job}/profile`;
        profileInPlace = true;
      }
      await writeJob(jobDir, input, { profileDir, profileInPlace, timeoutMs, maxOutputBytes: this.maxOutputBytes, cpus: this.limits.cpus, ...extra }, { chownOutput: true });
    });
    let launched: Launched | undefined;
    return this.finish(id, base, jobDir, () => launched, async () => {
      launched = this.runsc.launch(id, ["run", "--bundle", bundleDir], false);
      const outcome = await this.runsc.supervise(launched, timeoutMs, signal, undefined, jobDir);
      return { outcome, result: await this.outcomeResult(id, input, jobDir, outcome, timeoutMs, signal, "cold") };
    });
  }

  /**
   * Runs a sandbox to its result; the container and its folder are removed
   * by the returned `cleanup`, or at once when the run fails. The result can
   * come before the sandbox has ended (its program wrote result.json and is
   * exiting: LibreOffice and the sandbox's kernel going down take another
   * 85–200 ms under ptrace); `cleanup` lets it end by itself for a moment
   * and kills it if it does not.
   */
  private async finish(id: string, base: string, jobDir: string, launched: () => Launched | undefined, run: () => Promise<{ outcome: RunOutcome; result: JobResult }>): Promise<Run> {
    const cleanup = async () => {
      const sandbox = launched();
      const ended = sandbox && (await exitsWithin(sandbox, EXIT_GRACE_MS)) ? await sandbox.closed.catch(() => undefined) : undefined;
      if (sandbox && !ended) await this.runsc.kill(sandbox);
      // `runsc run` and `runsc restore` (attached) remove their container
      // when its program ends by itself; only what was killed or failed is deleted here.
      if (!(ended?.code === 0 && ended.signal === null)) await this.runsc.delete(id);
      await removeSandboxFolder(base);
    };
    try {
      const { outcome, result } = await run();
      return { result, computeMillis: outcome.computeMillis, jobDir, cleanup };
    } catch (err) {
      await cleanup();
      throw err;
    }
  }

  /** Hands a document to a pre-started or restored sandbox and waits for it to finish. */
  private async handIn(sandbox: Prestarted, input: SandboxInput, signal: AbortSignal | undefined): Promise<Run> {
    const { launched, base, jobDir } = sandbox;
    return this.finish(launched.id, base, jobDir, () => launched, async () => {
      // Room for this document and its pages, before the document is written (the folder had room for the small files only).
      await resizeJobDir(jobDir, jobBytes(input.document.length, this.maxOutputBytes));
      await writeJob(jobDir, input, { profileDir: SANDBOX_PATHS.profile, timeoutMs: input.timeoutMs, maxOutputBytes: this.maxOutputBytes, cpus: this.limits.cpus }, { chownOutput: true });
      const start = sandbox.start === "restored" ? () => handInBySignal(this.runsc, launched, jobDir) : async () => void launched.child.stdin?.write("\n");
      const outcome = await this.runsc.supervise(launched, input.timeoutMs, signal, start, jobDir);
      return { outcome, result: await this.outcomeResult(launched.id, input, jobDir, outcome, input.timeoutMs, signal, sandbox.start) };
    });
  }

  /** Turns how a sandbox ended into its result, or the error the caller sees. */
  private async outcomeResult(
    id: string,
    input: SandboxInput,
    jobDir: string,
    outcome: RunOutcome,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    start: SandboxStart,
  ): Promise<JobResult> {
    const log = { sandbox: id, format: input.format, prestarted: start !== "cold", restored: start === "restored", computeMillis: outcome.computeMillis, exit: outcome.code, signal: outcome.signal };
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
      // runsc's and the program's words name host paths: the cause (logged) has them, the message the exit status.
      throw new FolioError("internal_error", `the sandbox ended without a result (exit ${String(outcome.code)})`, { cause: new Error(`runsc said: ${lastLine(outcome.output)}`), retryable: true });
    }
    this.options.logger?.debug({ ...log, ok: result.ok, pageCount: result.pageCount, timings: result.timings, afterRestore: result.restored }, "sandbox finished");
    return result;
  }
}

/** Makes a folder copied in on the host (the pre-copied profile) nobody's, as the sandbox program runs. */
async function chownTree(dir: string): Promise<void> {
  await chown(dir, NOBODY, NOBODY);
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    await chown(join(entry.parentPath, entry.name), NOBODY, NOBODY);
  }
}
