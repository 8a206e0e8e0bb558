/**
 * The runsc backend's checkpoint/restore policy (option `restore`): when the
 * backend prepares, one sandbox is started in the pre-started mode and,
 * once LibreOffice listens in it and has run the warm-up conversions,
 * checkpointed (`runsc checkpoint`) into an image kept under the work
 * folder (`checkpoint.ts`: keyed on what it is made of, made again when any
 * of that changes; its state file rewritten uncompressed, `imagefile.ts`).
 * Each document's sandbox is then `runsc restore` of that image with a
 * bundle of its own (its own job folder), ahead of demand with `prestart`
 * (runsc-pool.ts), else when the document comes. The job is handed in by a
 * signal (`runsc kill ID SIGUSR2`) and a file (`handin.json`, with a fresh
 * seed the program reseeds from: a restored sandbox's memory is the
 * image's); a pool's sandbox gets the same signal once restored, before any
 * file, to start its page-1 pdftoppm and let LibreOffice's request thread
 * go back to accept() (converter.ts). When the image cannot be made or a
 * restore fails, sandboxes start as they would without `restore` (counted
 * in `folio_sandbox_restore_fallbacks_total`, logged once), and a failed
 * image is made again, once in a row.
 */
import { randomBytes } from "node:crypto";
import { rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { PreparedAssets } from "./assets.ts";
import { discardImage, ensureImage, imageKey, type RestoreMetrics, type StoreUsers } from "./checkpoint.ts";
import { HANDIN_FILE, HANDIN_SIGNAL, type HandInFile, type PrestartSpec } from "./converter.ts";
import { storeUncompressed } from "./imagefile.ts";
import { JOB_FILES_BYTES } from "./jobfs.ts";
import { SANDBOX_PATHS } from "./oci.ts";
import { liveOwners, withWorkLock, writeOwner } from "./owners.ts";
import { SEED_BYTES } from "./reseed.ts";
import { EXIT_GRACE_MS, exitsWithin, fileAppears, lastLine, removeSandboxFolder, type Launched, type Runsc } from "./runsc-launch.ts";
import { saysReady, waitingJobDir, type Prestarted } from "./runsc-pool.ts";

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

export interface RestorePolicyOptions {
  runsc: Runsc;
  /** The backend's work folder: the image store is `<workDir>/checkpoint`, shared under the folder's lock (owners.ts). */
  workDir: string;
  /** The backend's tag: its owner file names the image it restores from. */
  tag: string;
  metrics: RestoreMetrics;
  /** The backend's prepared assets (RunscBackend.prepare). */
  prepare: () => Promise<PreparedAssets>;
  /** Told of each restored sandbox at once: one that ends while idle leaves the pool (runsc-pool.ts). */
  dropWhenItEnds: (sandbox: Prestarted) => void;
  logger?: Logger;
}

export class RestorePolicy {
  /** The checkpoint image's folder (once prepared); undefined when there is none. */
  private image: Promise<string | undefined> | undefined;
  /** Images whose restore failed: each is made again once. */
  private readonly failedImages = new Set<string>();
  /** Images made again since the last restore that worked. */
  private imageRemakes = 0;
  /** Fallback reasons already logged (each is logged once). */
  private readonly loggedFallbacks = new Set<string>();

  constructor(private readonly options: RestorePolicyOptions) {}

  /** Finds or makes the image for the prepared `assets`; undefined (logged) when it cannot be made. */
  prepareImage(assets: PreparedAssets): Promise<string | undefined> {
    return (this.image = this.imageFor(assets));
  }

  /** The image's folder as it stands (undefined before {@link prepareImage}, or when there is none). */
  currentImage(): Promise<string | undefined> | undefined {
    return this.image;
  }

  /**
   * Gives up the image: sandboxes start without it from now on, and the
   * backend's owner file no longer claims it, so another backend on the
   * work folder may remove it.
   */
  async release(): Promise<void> {
    this.image = Promise.resolve(undefined);
    await withWorkLock(this.options.workDir, () => writeOwner(this.options.workDir, this.options.tag, {}));
  }

  /**
   * A sandbox restored from the image, waiting for its hand-in signal.
   * Undefined without an image, or when the restore failed; each is a
   * counted fallback. With `wake` (the pool's sandboxes) it is woken once
   * restored: the hand-in signal before there is a hand-in file, on which
   * its program starts the page-1 pdftoppm and lets LibreOffice's request
   * thread go (converter.ts, runPrestartedJob). A sandbox restored for a
   * document already there is not: a process started beside LibreOffice's
   * conversion slowed it by more than it gained.
   */
  async restored({ wake }: { wake: boolean }): Promise<Prestarted | undefined> {
    const { runsc } = this.options;
    const assets = await this.options.prepare();
    const image = await this.image;
    if (!image) {
      this.fallback("image");
      return undefined;
    }
    const { id, base, jobDir, bundleDir } = await runsc.makeBundle(assets, {}, JOB_FILES_BYTES, (jobDir) => waitingJobDir(jobDir, { profileDir: SANDBOX_PATHS.profile, handIn: "signal" }));
    const launched = runsc.launch(id, ["restore", `--image-path=${image}`, "--bundle", bundleDir, `--pid-file=${join(base, "pid")}`], false);
    const failure = await this.restoreFailure(launched, join(base, "pid"), wake);
    if (failure) {
      this.fallback("restore", new Error(`runsc restore failed: ${failure}`));
      if (!launched.exited()) await runsc.kill(launched);
      await runsc.delete(id);
      await removeSandboxFolder(base);
      this.remakeImage(image);
      return undefined;
    }
    this.options.metrics.restores.inc();
    this.imageRemakes = 0;
    const sandbox: Prestarted = { launched, base, jobDir, ready: true, start: "restored" };
    this.options.dropWhenItEnds(sandbox);
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
      const { code, output } = await this.options.runsc.command(["kill", launched.id, HANDIN_SIGNAL]);
      return code === 0 ? undefined : `it could not be woken: ${lastLine(launched.output() || output)}`;
    }
    const { code, output } = await this.options.runsc.command(["state", launched.id]);
    const status = code === 0 ? stateStatus(output) : undefined;
    return status === "running" ? undefined : `the container is ${String(status ?? "unknown")}: ${lastLine(launched.output() || output)}`;
  }

  /**
   * The checkpoint image for these assets: found under its key, or made.
   * Undefined (logged) when it cannot be made.
   */
  private async imageFor(assets: PreparedAssets): Promise<string | undefined> {
    const { runsc } = this.options;
    try {
      const key = await imageKey({
        runsc: runsc.binary,
        runscFlags: runsc.tuningFlags(),
        config: runsc.ociConfig(assets, "<job folder>", {}),
        prestart: CHECKPOINTED,
        programFile: assets.program,
        nodeBinary: assets.nodeBinary,
        profileDir: assets.profileDir,
      });
      return await ensureImage(join(this.options.workDir, "checkpoint"), key, (dir) => this.checkpoint(assets, dir), this.storeUsers());
    } catch (err) {
      this.logFallback("image", err);
      return undefined;
    }
  }

  /** The backends sharing this work folder's checkpoint store: their owner files, under the work folder's lock. */
  private storeUsers(): StoreUsers {
    return {
      builder: this.options.tag,
      locked: (work) => withWorkLock(this.options.workDir, work),
      claim: (key) => writeOwner(this.options.workDir, this.options.tag, { image: key }),
      inUse: async () => {
        const live = await liveOwners(this.options.workDir);
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
    const { runsc } = this.options;
    const { id, base, bundleDir } = await runsc.makeBundle(assets, {}, JOB_FILES_BYTES, (jobDir) => waitingJobDir(jobDir, CHECKPOINTED));
    const launched = runsc.launch(id, ["run", "--bundle", bundleDir], false);
    const late = setTimeout(() => void runsc.kill(launched), CHECKPOINT.imageReadyMs);
    try {
      if (!(await saysReady(launched))) throw new Error(`the sandbox to checkpoint ended before LibreOffice listened: ${lastLine(launched.output())}`);
      const { code, output } = await runsc.command(["checkpoint", `--image-path=${dir}`, id]);
      if (code !== 0) throw new Error(`runsc checkpoint failed: ${lastLine(output)}`);
      await launched.closed;
      await this.storeImageUncompressed(dir);
    } finally {
      clearTimeout(late);
      if (!launched.exited()) await runsc.kill(launched);
      await runsc.delete(id);
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
    this.image = withWorkLock(this.options.workDir, () => discardImage(failed))
      .then(() => this.options.prepare())
      .then((assets) => this.imageFor(assets));
  }

  /** Counts a sandbox started without the image; the first of each reason is logged with `err`. */
  private fallback(reason: "image" | "restore", err?: unknown): void {
    this.options.metrics.fallbacks.inc({ reason });
    if (err) this.logFallback(reason, err);
  }

  private logFallback(reason: string, err: unknown): void {
    if (this.loggedFallbacks.has(reason)) return;
    this.loggedFallbacks.add(reason);
    this.options.logger?.error({ err, reason }, "sandboxes start without the checkpoint image (logged once per reason)");
  }
}

/**
 * Hands the job to a restored sandbox: handin.json with a seed fresh from
 * here (written beside and renamed into place, so the program never reads
 * half of it), then the signal the program waits for. A sandbox that
 * ended before it could be signalled is left to its exit status, as one
 * that ends during its conversion.
 */
export async function handInBySignal(runsc: Runsc, launched: Launched, jobDir: string): Promise<void> {
  const handIn: HandInFile = { seed: randomBytes(SEED_BYTES).toString("hex") };
  const beside = join(jobDir, `.${HANDIN_FILE}`);
  await writeFile(beside, JSON.stringify(handIn), { mode: 0o644 });
  await rename(beside, join(jobDir, HANDIN_FILE));
  const { code, output } = await runsc.command(["kill", launched.id, HANDIN_SIGNAL]);
  if (code !== 0 && !(await exitsWithin(launched, EXIT_GRACE_MS))) {
    throw new FolioError("internal_error", "the restored sandbox could not be handed its document", { cause: new Error(`runsc kill said: ${lastLine(output)}`), retryable: true });
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
