/**
 * The `runsc` backend: one gVisor sandbox per document on this machine.
 *
 * Per document: a fresh job folder and an OCI bundle (config.json from
 * {@link buildOciConfig}), then `runsc --network=none --platform=ptrace
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
 * With `prestart`, a bounded pool of sandboxes is started ahead of demand:
 * each runs the sandbox program in its pre-started mode (`prestart.json`
 * in its job folder: LibreOffice started, waiting for a line on stdin). A
 * document is written into an idle sandbox's job folder and handed in with
 * that line; from then on it is the same single-use sandbox as above (time
 * limit, kill, delete), and once it has exited the pool starts a
 * replacement. Compute time and the time limit count from the hand-in.
 *
 * With `restore`, sandboxes are not started but restored: when the backend
 * prepares, one sandbox is started in the pre-started mode and, once
 * LibreOffice listens in it and has run the warm-up conversions,
 * checkpointed (`runsc checkpoint`) into an image kept under the work
 * folder (`checkpoint.ts`: keyed on what it is made of, made again when any
 * of that changes; its state file rewritten uncompressed, `imagefile.ts`).
 * Each document's sandbox is then
 * `runsc restore` of that image with a bundle of its own (its own job
 * folder), ahead of demand with `prestart`, else when the document comes.
 * The job is handed in by a signal (`runsc kill ID SIGUSR2`) and a file
 * (`handin.json`, with a fresh seed the program reseeds from: a restored
 * sandbox's memory is the image's); a pool's sandbox gets the same signal
 * once restored, before any file, to start its page-1 pdftoppm and let
 * LibreOffice's request thread go back to accept() (converter.ts);
 * the rest is the pre-started sandbox's single-use lifecycle. When the
 * image cannot be made or a restore fails, sandboxes start as they would
 * without `restore` (counted in `folio_sandbox_restore_fallbacks_total`,
 * logged once), and a failed image is made again.
 *
 * Needs root (runsc creates namespaces and cgroups) and the Debian packages
 * runsc, libreoffice-writer-nogui, libreoffice-impress-nogui, poppler-utils
 * and fonts (fonts-dejavu-core at least).
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { chown, cp, mkdir, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { Metrics } from "../platform/metrics/index.ts";
import { prepareAssets, type PreparedAssets } from "./assets.ts";
import { RestoreMetrics, discardImage, ensureImage, imageKey, type StoreUsers } from "./checkpoint.ts";
import { liveOwner, liveOwners, ownerTags, processesNaming, removeOwner, tagOf, withWorkLock, writeOwner } from "./owners.ts";
import { storeUncompressed } from "./imagefile.ts";
import { JOB_FILES_BYTES, jobBytes, mountJobDir, resizeJobDir, unmountJobDir } from "./jobfs.ts";
import { HANDIN_FILE, HANDIN_SIGNAL, PRESTART_FILE, READY_LINE, type HandInFile, type PrestartSpec } from "./converter.ts";
import type { JobResult, ProbeSpec, SandboxBackend, SandboxInput, SandboxResult } from "./interface.ts";
import { checkInput, readOutput, readResult, resultError, writeJob, DEFAULT_MAX_OUTPUT_BYTES } from "./jobdir.ts";
import { DEFAULT_LIMITS, NOBODY, SANDBOX_PATHS, buildOciConfig, type SandboxLimits } from "./oci.ts";
import { SEED_BYTES } from "./reseed.ts";

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

/** How long to keep trying to kill a sandbox that is still being created. */
const KILL_RETRY_MS = 10_000;
/** Output of runsc and the program kept for logs and error messages. */
const LOG_BYTES = 4000;
/** How long `runsc run` gets to exit by itself after its sandbox was killed or told to stop. */
const EXIT_GRACE_MS = 3000;
/** How often the host looks for a running sandbox's result.json when its folder cannot be watched. */
const RESULT_POLL_MS = 5;
/** Default number of idle pre-started sandboxes (the service's default concurrency). */
const DEFAULT_PRESTART_POOL = 2;
/**
 * The prestart.json of the sandbox that is checkpointed: it waits for a
 * signal (a restored sandbox's stdin never becomes readable) and warms
 * LibreOffice up first (converter.ts, warm-office.ts). Part of the image's key.
 */
const CHECKPOINTED: PrestartSpec = Object.freeze({ profileDir: SANDBOX_PATHS.profile, handIn: "signal", warmUp: true });
/** The state file `runsc checkpoint` writes into the image folder (this runsc: one file). */
const IMAGE_STATE_FILE = "checkpoint.img";
/** The checkpoint's timings and retries. */
const CHECKPOINT = {
  /** How long the sandbox to checkpoint may take until LibreOffice listens (about 1.5 s). */
  imageReadyMs: 60_000,
  /** Images made again in a row after restores from them failed, before restoring is given up. */
  maxImageRemakes: 1,
} as const;

/** The work folder of a backend given none: one per user under the system's temporary folder. */
export function defaultWorkDir(): string {
  return join(tmpdir(), `folio-runsc-${process.getuid?.() ?? 0}`);
}

/** How a sandbox came to be: made for its document, pre-started, or restored from the image. */
type SandboxStart = "cold" | "prestarted" | "restored";

interface RunOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  computeMillis: number;
  timedOut: boolean;
  aborted: boolean;
}

/** A `runsc run` process and what it said. */
interface Launched {
  id: string;
  child: ChildProcessByStdio<Writable | null, Readable, Readable>;
  output(): string;
  exited(): boolean;
  /** Settles when `runsc run` exits; rejects when it could not be started. */
  closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A sandbox waiting for its document: pre-started or restored. */
interface Prestarted {
  launched: Launched;
  /** Holds the job folder and the bundle; removed with the sandbox. */
  base: string;
  jobDir: string;
  /** The program said LibreOffice listens (a restored sandbox: from the start). */
  ready: boolean;
  start: "prestarted" | "restored";
}

export class RunscBackend implements SandboxBackend {
  readonly workDir: string;
  /** runsc's private state folder (`--root`): `runsc --root <this> list` shows live sandboxes. */
  readonly stateDir: string;
  private readonly runsc: string;
  private readonly platform: string;
  private readonly limits: SandboxLimits;
  private readonly maxOutputBytes: number;
  private readonly poolSize: number;
  private assets: Promise<PreparedAssets> | undefined;
  /** Idle pre-started sandboxes, oldest first. */
  private readonly idle: Prestarted[] = [];
  /** Pre-started sandboxes being set up (not yet in {@link idle}). */
  private readonly starting = new Set<Promise<void>>();
  /** Finished sandboxes being removed after their answer ({@link settled}). */
  private readonly removals = new Set<Promise<void>>();
  private closed = false;
  /** Counters of restores and their fallbacks. */
  readonly restoreMetrics: RestoreMetrics;
  /** The checkpoint image's folder (with `restore`, once prepared); undefined when there is none. */
  private image: Promise<string | undefined> | undefined;
  /** Images whose restore failed: each is made again once. */
  private readonly failedImages = new Set<string>();
  /** Images made again since the last restore that worked. */
  private imageRemakes = 0;
  /** Fallback reasons already logged (each is logged once). */
  private readonly loggedFallbacks = new Set<string>();
  /** In this backend's container ids, so that what it leaves when its process dies can be told apart (see {@link removeLeftovers}). */
  private readonly tag = randomBytes(4).toString("hex");

  constructor(private readonly options: RunscBackendOptions = {}) {
    this.workDir = options.workDir ?? defaultWorkDir();
    this.stateDir = join(this.workDir, "state");
    this.runsc = options.runsc ?? "runsc";
    this.platform = options.platform ?? "ptrace";
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    this.poolSize = options.prestart ? Math.max(1, options.prestartPool ?? DEFAULT_PRESTART_POOL) : 0;
    this.restoreMetrics = new RestoreMetrics(options.metrics);
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
      await this.removeLeftovers();
      const assets = await prepareAssets(join(this.workDir, "assets"), { nodeBinary: this.options.nodeBinary, program: this.options.program });
      if (this.options.restore) await (this.image = this.imageFor(assets));
      setImmediate(() => this.fillPool());
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
    const sandbox = this.takeIdle() ?? (await this.restored({ wake: false }));
    // The replacement starts once this sandbox has exited, not now: a
    // conversion never shares the CPUs with the warm-up of its own
    // replacement (docs/benchmarks/conversion-history.md, "Conversion (issue 4)").
    const run = await (sandbox ? this.handIn(sandbox, input, signal) : this.runJob(input, input.timeoutMs, signal, {})).catch((err: unknown) => {
      this.fillPool();
      throw err;
    });
    try {
      if (!run.result.ok) throw resultError(run.result);
      return { ...(await readOutput(run.jobDir, run.result, input, this.maxOutputBytes)), computeMillis: run.computeMillis };
    } finally {
      // The answer does not wait for the sandbox to end and be removed (see finish()).
      this.inBackground(run.cleanup().finally(() => this.fillPool()));
    }
  }

  /**
   * Removes what backends of processes that have died left in this work
   * folder without {@link close} (killed, out of memory): a restored
   * sandbox waits for its hand-in signal for ever (its stdin never ends,
   * unlike a pre-started one's), holding its memory. Each backend has a
   * tag in its containers' ids (`folio-<tag>-<uuid>`) and an owner file
   * `owners/<tag>` naming its process (pid and start time), written before
   * its first container (owners.ts). A tag whose process is not alive (or
   * whose file is missing: an earlier release's ids) is dead: its
   * containers are killed and deleted, any process still naming one of them
   * (runsc commands, file servers, sandbox kernels whose state is gone) is
   * killed, and its job folders and owner file are removed. All of it under
   * the work folder's lock, which every backend also holds to write its
   * owner file, and with the owner read again before each kill or removal:
   * a backend that starts meanwhile (another service, another test) waits
   * for the lock, so none of its sandboxes can be taken for a dead one's.
   * Then this backend's own owner file is written, still under the lock.
   */
  private async removeLeftovers(): Promise<void> {
    await withWorkLock(this.workDir, async () => {
      const dead = async (id: string) => {
        const tag = tagOf(id);
        return tag !== undefined && tag !== this.tag && !(await liveOwner(this.workDir, tag));
      };
      const { output } = await this.runsc_(["list", "-quiet"]);
      let sandboxes = 0;
      for (const id of output.split("\n")) {
        if (!(await dead(id))) continue;
        sandboxes++;
        await this.runsc_(["kill", id, "KILL"]);
        await this.deleteContainer(id);
      }
      const stray = await processesNaming(this.stateDir, dead);
      for (const pid of stray) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
      }
      let folders = 0;
      for (const folder of await readdir(join(this.workDir, "jobs")).catch(() => [] as string[])) {
        if (!(await dead(folder))) continue;
        folders++;
        await removeSandboxFolder(join(this.workDir, "jobs", folder));
      }
      for (const tag of await ownerTags(this.workDir)) {
        if (tag !== this.tag && !(await liveOwner(this.workDir, tag))) await removeOwner(this.workDir, tag);
      }
      if (sandboxes + stray.length + folders > 0) {
        this.options.logger?.warn({ workDir: this.workDir, sandboxes, processes: stray.length, jobFolders: folders }, "removed what dead processes left in the sandbox work folder");
      }
      await writeOwner(this.workDir, this.tag, {});
    });
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
    this.closed = true;
    const idle = this.idle.splice(0);
    await Promise.all([...idle.map((s) => this.discard(s)), ...this.starting, this.settled()]);
    if (this.options.restore && this.assets) {
      this.image = Promise.resolve(undefined);
      await withWorkLock(this.workDir, () => writeOwner(this.workDir, this.tag, {}));
    }
  }

  /** Container ids of the idle pre-started sandboxes (for tests and metrics). */
  idleSandboxes(): { id: string; ready: boolean; restored: boolean }[] {
    return this.idle.map((s) => ({ id: s.launched.id, ready: s.ready, restored: s.start === "restored" }));
  }

  /** The checkpoint image's folder once prepared; undefined without `restore` or when there is none. */
  async checkpointImage(): Promise<string | undefined> {
    await this.prepare();
    return this.image;
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

  /**
   * A new sandbox's folders and OCI bundle; `fill` writes the job folder's
   * first files. The job folder is a tmpfs of `jobFolderBytes` (jobfs.ts).
   */
  private async makeBundle(assets: PreparedAssets, input: Pick<SandboxInput, "traceparent">, jobFolderBytes: number, fill: (jobDir: string) => Promise<void>) {
    const id = `folio-${this.tag}-${randomUUID()}`;
    const base = join(this.workDir, "jobs", id);
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

  private ociConfig(assets: PreparedAssets, jobDir: string, env: Record<string, string>): Record<string, unknown> {
    return buildOciConfig({
      rootfs: assets.rootfs,
      jobDir,
      nodeBinary: assets.nodeBinary,
      program: assets.program,
      profileDir: assets.profileDir,
      limits: this.limits,
      env,
      masks: { emptyFile: assets.emptyFile, files: assets.maskedFiles },
    });
  }

  private async runJob(
    input: SandboxInput,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    extra: { probe?: ProbeSpec },
  ): Promise<{ result: JobResult; computeMillis: number; jobDir: string; cleanup: () => Promise<void> }> {
    signal?.throwIfAborted();
    const assets = await this.prepare();
    const { id, base, jobDir, bundleDir } = await this.makeBundle(assets, input, jobBytes(input.document.length, this.maxOutputBytes), async (jobDir) => {
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
      launched = this.launch(id, ["run", "--bundle", bundleDir], false);
      const outcome = await this.supervise(launched, timeoutMs, signal, undefined, jobDir);
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
  private async finish(
    id: string,
    base: string,
    jobDir: string,
    launched: () => Launched | undefined,
    run: () => Promise<{ outcome: RunOutcome; result: JobResult }>,
  ): Promise<{ result: JobResult; computeMillis: number; jobDir: string; cleanup: () => Promise<void> }> {
    const cleanup = async () => {
      const sandbox = launched();
      const ended = sandbox && (await exitsWithin(sandbox, EXIT_GRACE_MS)) ? await sandbox.closed.catch(() => undefined) : undefined;
      if (sandbox && !ended) await this.killContainer(sandbox);
      // `runsc run` and `runsc restore` (attached) remove their container
      // when its program ends by itself; only what was killed or failed is deleted here.
      if (!(ended?.code === 0 && ended.signal === null)) await this.deleteContainer(id);
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
  private async handIn(
    sandbox: Prestarted,
    input: SandboxInput,
    signal: AbortSignal | undefined,
  ): Promise<{ result: JobResult; computeMillis: number; jobDir: string; cleanup: () => Promise<void> }> {
    const { launched, base, jobDir } = sandbox;
    return this.finish(launched.id, base, jobDir, () => launched, async () => {
      // Room for this document and its pages, before the document is written (the folder had room for the small files only).
      await resizeJobDir(jobDir, jobBytes(input.document.length, this.maxOutputBytes));
      await writeJob(jobDir, input, { profileDir: SANDBOX_PATHS.profile, timeoutMs: input.timeoutMs, maxOutputBytes: this.maxOutputBytes, cpus: this.limits.cpus }, { chownOutput: true });
      const start = sandbox.start === "restored" ? () => this.handInBySignal(launched, jobDir) : async () => void launched.child.stdin?.write("\n");
      const outcome = await this.supervise(launched, input.timeoutMs, signal, start, jobDir);
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

  /**
   * Starts `runsc run` (or `restore`: `command` is the subcommand and its
   * flags); with `stdin`, the sandbox program's stdin is a pipe from here.
   * Both stay in the foreground: `closed` settles with the program's exit
   * once the sandbox has ended.
   */
  private launch(id: string, command: string[], stdin: boolean): Launched {
    const args = [...this.globalFlags(), "--network=none", ...command, id];
    const child: Launched["child"] = stdin
      ? spawn(this.runsc, args, { stdio: ["pipe", "pipe", "pipe"] })
      : spawn(this.runsc, args, { stdio: ["ignore", "pipe", "pipe"] });
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
  private async supervise(launched: Launched, timeoutMs: number, signal: AbortSignal | undefined, start?: () => Promise<void>, jobDir?: string): Promise<RunOutcome> {
    const started = performance.now();
    let timedOut = false;
    let aborted = false;
    const stop = () => {
      void this.killContainer(launched);
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

  /** Takes the oldest idle pre-started sandbox that is still alive. */
  private takeIdle(): Prestarted | undefined {
    for (let s = this.idle.shift(); s; s = this.idle.shift()) {
      if (!s.launched.exited()) return s;
      void this.discard(s);
    }
    return undefined;
  }

  /**
   * Starts pre-started sandboxes until {@link poolSize} are idle or starting.
   * A failed start is logged and not retried here (the next conversion
   * tries again), so a broken runsc cannot turn into a busy loop.
   */
  private fillPool(): void {
    while (!this.closed && this.poolSize > 0 && this.idle.length + this.starting.size < this.poolSize) {
      const started: Promise<void> = this.waitingSandbox()
        .then((sandbox) => {
          if (this.closed) return this.discard(sandbox);
          this.idle.push(sandbox);
        })
        .catch((err: unknown) => {
          this.options.logger?.error({ err }, "a pre-started sandbox could not be started");
        })
        .finally(() => this.starting.delete(started));
      this.starting.add(started);
    }
  }

  /** A sandbox for the pool: restored from the image (and woken) when it can be, else pre-started. */
  private async waitingSandbox(): Promise<Prestarted> {
    return (await this.restored({ wake: true })) ?? (await this.prestartOne());
  }

  private async prestartOne(): Promise<Prestarted> {
    const assets = await this.prepare();
    const { id, base, jobDir, bundleDir } = await this.makeBundle(assets, {}, JOB_FILES_BYTES, (jobDir) => waitingJobDir(jobDir, { profileDir: SANDBOX_PATHS.profile, handIn: "stdin" }));
    const launched = this.launch(id, ["run", "--bundle", bundleDir], true);
    const sandbox: Prestarted = { launched, base, jobDir, ready: false, start: "prestarted" };
    void saysReady(launched).then((ready) => (sandbox.ready = ready));
    this.dropWhenItEnds(sandbox);
    return sandbox;
  }

  /** A sandbox that dies while idle leaves the pool (and is cleaned up) at once. */
  private dropWhenItEnds(sandbox: Prestarted): void {
    void sandbox.launched.closed.then(
      () => this.dropIfIdle(sandbox),
      () => this.dropIfIdle(sandbox),
    );
  }

  /**
   * A sandbox restored from the image, waiting for its hand-in signal.
   * Undefined without `restore`, without an image, or when the restore
   * failed; each of the last two is a counted fallback. With `wake` (the
   * pool's sandboxes) it is woken once restored: the hand-in signal before
   * there is a hand-in file, on which its program starts the page-1
   * pdftoppm and lets LibreOffice's request thread go (converter.ts,
   * runPrestartedJob). A sandbox restored for a document already there is
   * not: a process started beside LibreOffice's conversion slowed it by
   * more than it gained.
   */
  private async restored({ wake }: { wake: boolean }): Promise<Prestarted | undefined> {
    if (!this.options.restore) return undefined;
    const assets = await this.prepare();
    const image = await this.image;
    if (!image) {
      this.fallback("image");
      return undefined;
    }
    const { id, base, jobDir, bundleDir } = await this.makeBundle(assets, {}, JOB_FILES_BYTES, (jobDir) => waitingJobDir(jobDir, { profileDir: SANDBOX_PATHS.profile, handIn: "signal" }));
    const launched = this.launch(id, ["restore", `--image-path=${image}`, "--bundle", bundleDir, `--pid-file=${join(base, "pid")}`], false);
    const failure = await this.restoreFailure(launched, join(base, "pid"), wake);
    if (failure) {
      this.fallback("restore", new Error(`runsc restore failed: ${failure}`));
      if (!launched.exited()) await this.killContainer(launched);
      await this.deleteContainer(id);
      await removeSandboxFolder(base);
      this.remakeImage(image);
      return undefined;
    }
    this.restoreMetrics.restores.inc();
    this.imageRemakes = 0;
    const sandbox: Prestarted = { launched, base, jobDir, ready: true, start: "restored" };
    this.dropWhenItEnds(sandbox);
    return sandbox;
  }

  /**
   * Waits for `runsc restore` to finish restoring; undefined when it did,
   * else what went wrong. Not detached: like `runsc run`, the command stays
   * the parent of the sandbox's processes, reaps them, exits with the
   * program's status and removes the container (a detached restore's
   * container takes `runsc delete` 1.5 s). Restoring holds the container's
   * lock from after the pid file is written until it is done, so the first
   * runsc command on the container after the pid file returns once the
   * restore is over: `runsc kill ID SIGUSR2` when the sandbox is to be
   * woken (one command for both), else `runsc state`.
   */
  private async restoreFailure(launched: Launched, pidFile: string, wake: boolean): Promise<string | undefined> {
    const exited = new AbortController();
    void launched.closed.finally(() => exited.abort()).catch(() => undefined);
    if (!(await fileAppears(pidFile, exited.signal))) return `it exited: ${lastLine(launched.output())}`;
    if (wake) {
      const { code, output } = await this.runsc_(["kill", launched.id, HANDIN_SIGNAL]);
      return code === 0 ? undefined : `it could not be woken: ${lastLine(launched.output() || output)}`;
    }
    const { code, output } = await this.runsc_(["state", launched.id]);
    const status = code === 0 ? stateStatus(output) : undefined;
    return status === "running" ? undefined : `the container is ${String(status ?? "unknown")}: ${lastLine(launched.output() || output)}`;
  }

  /**
   * The checkpoint image for these assets: found under its key, or made.
   * Undefined (logged) when it cannot be made.
   */
  private async imageFor(assets: PreparedAssets): Promise<string | undefined> {
    try {
      const key = await imageKey({
        runsc: this.runsc,
        runscFlags: this.tuningFlags(),
        config: this.ociConfig(assets, "<job folder>", {}),
        prestart: CHECKPOINTED,
        programFile: assets.program,
        nodeBinary: assets.nodeBinary,
        profileDir: assets.profileDir,
      });
      return await ensureImage(join(this.workDir, "checkpoint"), key, (dir) => this.checkpoint(assets, dir), this.storeUsers());
    } catch (err) {
      this.logFallback("image", err);
      return undefined;
    }
  }

  /** The backends sharing this work folder's checkpoint store: their owner files, under the work folder's lock. */
  private storeUsers(): StoreUsers {
    return {
      builder: this.tag,
      locked: (work) => withWorkLock(this.workDir, work),
      claim: (key) => writeOwner(this.workDir, this.tag, { image: key }),
      inUse: async () => {
        const live = await liveOwners(this.workDir);
        return { tags: new Set(live.keys()), images: new Set([...live.values()].flatMap((o) => (o.image ? [o.image] : []))) };
      },
    };
  }

  /**
   * Starts a sandbox waiting for a hand-in signal and checkpoints it into
   * `dir` once LibreOffice listens (which ends it). It gets stdio of the
   * kinds a restore has: none for stdin, pipes for stdout and stderr.
   */
  private async checkpoint(assets: PreparedAssets, dir: string): Promise<void> {
    const { id, base, bundleDir } = await this.makeBundle(assets, {}, JOB_FILES_BYTES, (jobDir) => waitingJobDir(jobDir, CHECKPOINTED));
    const launched = this.launch(id, ["run", "--bundle", bundleDir], false);
    const late = setTimeout(() => void this.killContainer(launched), CHECKPOINT.imageReadyMs);
    try {
      if (!(await saysReady(launched))) throw new Error(`the sandbox to checkpoint ended before LibreOffice listened: ${lastLine(launched.output())}`);
      const { code, output } = await this.runsc_(["checkpoint", `--image-path=${dir}`, id]);
      if (code !== 0) throw new Error(`runsc checkpoint failed: ${lastLine(output)}`);
      await launched.closed;
      await this.storeImageUncompressed(dir);
    } finally {
      clearTimeout(late);
      if (!launched.exited()) await this.killContainer(launched);
      await this.deleteContainer(id);
      await removeSandboxFolder(base);
    }
  }

  /**
   * Rewrites the new image's state file without compression (imagefile.ts):
   * every restore then copies it instead of inflating it. An image in a
   * format this does not know stays compressed (logged): slower, not wrong.
   */
  private async storeImageUncompressed(dir: string): Promise<void> {
    const file = join(dir, IMAGE_STATE_FILE);
    const outcome = await storeUncompressed(file).catch((err: unknown) => ({ stored: false as const, reason: (err as Error).message }));
    if (outcome.stored) this.options.logger?.info({ image: dir, ...outcome }, "checkpoint image stored uncompressed");
    else this.options.logger?.warn({ image: dir, reason: outcome.reason }, "the checkpoint image stays compressed: its state file is not in the format this release rewrites");
  }

  /**
   * Hands the job to a restored sandbox: handin.json with a seed fresh from
   * here (written beside and renamed into place, so the program never reads
   * half of it), then the signal the program waits for. A sandbox that
   * ended before it could be signalled is left to its exit status, as one
   * that ends during its conversion.
   */
  private async handInBySignal(launched: Launched, jobDir: string): Promise<void> {
    const handIn: HandInFile = { seed: randomBytes(SEED_BYTES).toString("hex") };
    const beside = join(jobDir, `.${HANDIN_FILE}`);
    await writeFile(beside, JSON.stringify(handIn), { mode: 0o644 });
    await rename(beside, join(jobDir, HANDIN_FILE));
    const { code, output } = await this.runsc_(["kill", launched.id, HANDIN_SIGNAL]);
    if (code !== 0 && !(await exitsWithin(launched, EXIT_GRACE_MS))) {
      throw new FolioError("internal_error", "the restored sandbox could not be handed its document", { cause: new Error(`runsc kill said: ${lastLine(output)}`), retryable: true });
    }
  }

  /** After a failed restore: the image is made again, once in a row; after that restoring is given up. */
  private remakeImage(failed: string): void {
    if (this.failedImages.has(failed)) return;
    this.failedImages.add(failed);
    if (this.imageRemakes >= CHECKPOINT.maxImageRemakes) {
      this.options.logger?.error({ image: failed }, "a remade checkpoint image failed to restore too; sandboxes start without one from now on");
      this.image = Promise.resolve(undefined);
      return;
    }
    this.imageRemakes++;
    // Removed even when another live backend restores from it too: it failed here, and the same image fails there.
    this.image = withWorkLock(this.workDir, () => discardImage(failed))
      .then(() => this.prepare())
      .then((assets) => this.imageFor(assets));
  }

  /** Counts a sandbox started without the image; the first of each reason is logged with `err`. */
  private fallback(reason: "image" | "restore", err?: unknown): void {
    this.restoreMetrics.fallbacks.inc({ reason });
    if (err) this.logFallback(reason, err);
  }

  private logFallback(reason: string, err: unknown): void {
    if (this.loggedFallbacks.has(reason)) return;
    this.loggedFallbacks.add(reason);
    this.options.logger?.error({ err, reason }, "sandboxes start without the checkpoint image (logged once per reason)");
  }

  private dropIfIdle(sandbox: Prestarted): void {
    const at = this.idle.indexOf(sandbox);
    if (at < 0) return;
    this.idle.splice(at, 1);
    this.options.logger?.warn({ sandbox: sandbox.launched.id, output: lastLine(sandbox.launched.output()) }, "an idle pre-started sandbox ended");
    void this.discard(sandbox);
  }

  /** Stops a waiting sandbox that will not be used and removes its folders. */
  private async discard(sandbox: Prestarted): Promise<void> {
    // Closing stdin makes a pre-started program exit; the kill is for a
    // program that does not, and for a restored one (it has no stdin).
    const stdin = sandbox.launched.child.stdin;
    stdin?.end();
    if (!stdin || !(await exitsWithin(sandbox.launched, EXIT_GRACE_MS))) await this.killContainer(sandbox.launched);
    await sandbox.launched.closed.catch(() => undefined);
    await this.deleteContainer(sandbox.launched.id);
    await removeSandboxFolder(sandbox.base);
  }

  private globalFlags(): string[] {
    return [`--root=${this.stateDir}`, ...this.tuningFlags()];
  }

  /** The global flags that shape a sandbox (part of the checkpoint image's key). */
  private tuningFlags(): string[] {
    return [`--platform=${this.platform}`, ...(this.options.runscFlags ?? [])];
  }

  /**
   * Kills the sandbox. A sandbox still being created is not known to
   * `runsc kill` yet, so it is retried until it works or `runsc run` exits.
   * `runsc run` then tears the sandbox down itself; a `runsc delete` at the
   * same time only makes both wait on runsc's lock (5 s), so the deletion is
   * forced only when `runsc run` does not exit.
   */
  private async killContainer(launched: Launched): Promise<void> {
    const until = Date.now() + KILL_RETRY_MS;
    while (!launched.exited() && Date.now() < until) {
      const { code } = await this.runsc_(["kill", launched.id, "KILL"]);
      if (code === 0) break;
      await sleep(50);
    }
    if (await exitsWithin(launched, EXIT_GRACE_MS)) return;
    await this.runsc_(["delete", "--force", launched.id]);
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

/** Whether `runsc run` exits within `ms` (it may have already). */
async function exitsWithin(launched: Launched, ms: number): Promise<boolean> {
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

/** How often {@link fileAppears} looks for its file besides inotify's word. */
const FILE_POLL_MS = 100;

/**
 * True once `file` exists, false when `stop` aborts first (or at once when
 * it already has). Watches the file's folder (inotify), with a slower poll
 * besides; a folder that cannot be watched is polled at {@link RESULT_POLL_MS}.
 */
async function fileAppears(file: string, stop: AbortSignal): Promise<boolean> {
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

/** The `status` of `runsc state`'s JSON answer, if it has one. */
function stateStatus(output: string): unknown {
  try {
    return (JSON.parse(output) as { status?: unknown }).status;
  } catch {
    return undefined;
  }
}

/** Resolves true once the program says {@link READY_LINE}, false when the sandbox ends first. */
function saysReady(launched: Launched): Promise<boolean> {
  return new Promise((resolve) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      if (!seen.includes(READY_LINE)) {
        seen = seen.slice(-READY_LINE.length);
        return;
      }
      launched.child.stdout.off("data", onData);
      resolve(true);
    };
    launched.child.stdout.on("data", onData);
    void launched.closed.then(
      () => resolve(false),
      () => resolve(false),
    );
  });
}

/**
 * The job folder of a sandbox that waits for its document: prestart.json
 * (`spec`), input/, and output/ (nobody's).
 */
async function waitingJobDir(jobDir: string, spec: PrestartSpec): Promise<void> {
  await mkdir(join(jobDir, "input"), { recursive: true, mode: 0o755 });
  await mkdir(join(jobDir, "output"), { recursive: true, mode: 0o700 });
  await chown(join(jobDir, "output"), NOBODY, NOBODY);
  await writeFile(join(jobDir, PRESTART_FILE), JSON.stringify(spec), { mode: 0o644 });
}

/** Removes a sandbox's folder (job folder and bundle), its job folder's tmpfs unmounted first. */
async function removeSandboxFolder(base: string): Promise<void> {
  await unmountJobDir(join(base, "job"));
  await rm(base, { recursive: true, force: true });
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
