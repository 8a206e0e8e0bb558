/**
 * The runsc backend's prestarted (warm) pool, and what every sandbox that
 * waits for its document has. With `prestart`, a bounded pool of sandboxes
 * is started ahead of demand: each runs the sandbox program in its
 * pre-started mode (`prestart.json` in its job folder: LibreOffice started,
 * waiting for a line on stdin), or is restored from the checkpoint image
 * (runsc-restore.ts) when it can be. A document is written into an idle
 * sandbox's job folder and handed in (runsc.ts); from then on it is a
 * single-use sandbox like any other, and once it has exited the pool starts
 * a replacement. A sandbox that dies while idle leaves the pool at once.
 */
import { chown, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../platform/log/index.ts";
import type { PreparedAssets } from "./assets.ts";
import { PRESTART_FILE, READY_LINE, type PrestartSpec } from "./converter.ts";
import { JOB_FILES_BYTES } from "./jobfs.ts";
import { EXIT_GRACE_MS, exitsWithin, lastLine, removeSandboxFolder, type Launched, type Runsc } from "./runsc-launch.ts";
import { NOBODY, SANDBOX_PATHS } from "./oci.ts";

/** A sandbox waiting for its document: pre-started or restored. */
export interface Prestarted {
  launched: Launched;
  /** Holds the job folder and the bundle; removed with the sandbox. */
  base: string;
  jobDir: string;
  /** The program said LibreOffice listens (a restored sandbox: from the start). */
  ready: boolean;
  start: "prestarted" | "restored";
}

export interface PrestartPoolOptions {
  runsc: Runsc;
  /** Idle sandboxes kept (started or starting); 0: no pool. */
  size: number;
  /** A sandbox for the pool: restored from the image when it can be, else {@link PrestartPool.prestarted}. */
  make: () => Promise<Prestarted>;
  logger?: Logger;
}

export class PrestartPool {
  /** Idle sandboxes, oldest first. */
  private readonly idle: Prestarted[] = [];
  /** Sandboxes being set up (not yet in {@link idle}). */
  private readonly starting = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly options: PrestartPoolOptions) {}

  /** Takes the oldest idle sandbox that is still alive. */
  take(): Prestarted | undefined {
    for (let s = this.idle.shift(); s; s = this.idle.shift()) {
      if (!s.launched.exited()) return s;
      void this.discard(s);
    }
    return undefined;
  }

  /**
   * Starts sandboxes until {@link PrestartPoolOptions.size} are idle or
   * starting. A failed start is logged and not retried here (the next
   * conversion tries again), so a broken runsc cannot turn into a busy loop.
   */
  fill(): void {
    while (!this.closed && this.options.size > 0 && this.idle.length + this.starting.size < this.options.size) {
      const started: Promise<void> = this.options
        .make()
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

  /** Stops the pool: idle and starting sandboxes are killed and removed, and none is started again. */
  async close(): Promise<void> {
    this.closed = true;
    const idle = this.idle.splice(0);
    await Promise.all([...idle.map((s) => this.discard(s)), ...this.starting]);
  }

  /** Container ids of the idle sandboxes (for tests and metrics). */
  list(): { id: string; ready: boolean; restored: boolean }[] {
    return this.idle.map((s) => ({ id: s.launched.id, ready: s.ready, restored: s.start === "restored" }));
  }

  /** A pre-started sandbox: LibreOffice starting in it, its document to come on stdin. */
  async prestarted(assets: PreparedAssets): Promise<Prestarted> {
    const { runsc } = this.options;
    const { id, base, jobDir, bundleDir } = await runsc.makeBundle(assets, {}, JOB_FILES_BYTES, (jobDir) => waitingJobDir(jobDir, { profileDir: SANDBOX_PATHS.profile, handIn: "stdin" }));
    const launched = runsc.launch(id, ["run", "--bundle", bundleDir], true);
    const sandbox: Prestarted = { launched, base, jobDir, ready: false, start: "prestarted" };
    void saysReady(launched).then((ready) => (sandbox.ready = ready));
    this.dropWhenItEnds(sandbox);
    return sandbox;
  }

  /** A sandbox that dies while idle leaves the pool (and is cleaned up) at once. */
  dropWhenItEnds(sandbox: Prestarted): void {
    void sandbox.launched.closed.then(
      () => this.dropIfIdle(sandbox),
      () => this.dropIfIdle(sandbox),
    );
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
    const { runsc } = this.options;
    // Closing stdin makes a pre-started program exit; the kill is for a
    // program that does not, and for a restored one (it has no stdin).
    const stdin = sandbox.launched.child.stdin;
    stdin?.end();
    if (!stdin || !(await exitsWithin(sandbox.launched, EXIT_GRACE_MS))) await runsc.kill(sandbox.launched);
    await sandbox.launched.closed.catch(() => undefined);
    await runsc.delete(sandbox.launched.id);
    await removeSandboxFolder(sandbox.base);
  }
}

/** Resolves true once the program says {@link READY_LINE}, false when the sandbox ends first. */
export function saysReady(launched: Launched): Promise<boolean> {
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
export async function waitingJobDir(jobDir: string, spec: PrestartSpec): Promise<void> {
  await mkdir(join(jobDir, "input"), { recursive: true, mode: 0o755 });
  await mkdir(join(jobDir, "output"), { recursive: true, mode: 0o700 });
  await chown(join(jobDir, "output"), NOBODY, NOBODY);
  await writeFile(join(jobDir, PRESTART_FILE), JSON.stringify(spec), { mode: 0o644 });
}
