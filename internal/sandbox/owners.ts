/**
 * Who uses a runsc work folder: the owner files of the backends sharing it
 * (`owners/<tag>`, one a backend), the lock under which they and the
 * checkpoint store change, and what a dead backend's leftovers look like
 * (container ids and processes naming its tag).
 *
 * An owner file's first line is its process's identity (pid and start time,
 * {@link processIdentity}); a second line `image <key>` names the checkpoint
 * image the backend restores from. A tag whose file is missing, unreadable
 * or names a process that is not alive is dead.
 *
 * The lock is `flock(1)` (util-linux, on every Debian system; the project's
 * scripts/ensure-deps.sh locks with it too) on `<workDir>/lock`, held by a
 * child process for as long as the work runs: the kernel drops it when that
 * child ends, so a backend that dies holding it cannot wedge the others,
 * and there is no pid in a file to check for liveness or to reuse. Node has
 * no flock of its own, and the npm packages for it are either native add-ons
 * or lock by mkdir and an age (a slow live holder loses its lock). Taken
 * only around short steps (registering, leftover cleanup, the checkpoint
 * store's rename and pruning), never around a conversion or a checkpoint.
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** The work folder's owner files, one a backend. */
export const OWNERS_DIR = "owners";
/** The lock file in the work folder. */
const LOCK_FILE = "lock";
/**
 * How long a backend waits for the lock: the longest holder is a leftover
 * cleanup killing and deleting dead sandboxes, about 2 s each under
 * runsc's own container lock (5 s at worst); a minute is many of them.
 */
const LOCK_WAIT_SECONDS = 60;
/** What the lock's holder prints once it holds the lock. */
const LOCKED = "locked";

/** A backend's tag: in its container ids (`folio-<tag>-<uuid>`), its job folders' names and its owner file's name. */
const TAG = /^[0-9a-f]{8}$/;

/**
 * Runs `work` holding the work folder's lock (exclusive, across processes
 * and within one: each call holds its own flock). Not reentrant.
 */
export async function withWorkLock<T>(workDir: string, work: () => Promise<T>): Promise<T> {
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  // `cat` holds the lock until its stdin ends: when the work is done, or when this process dies.
  const holder = spawn("flock", ["--exclusive", "--wait", String(LOCK_WAIT_SECONDS), join(workDir, LOCK_FILE), "sh", "-c", `echo ${LOCKED}; exec cat >/dev/null`], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  holder.stdin.on("error", () => undefined);
  const ended = new Promise<number | null>((resolve) => {
    holder.once("error", () => resolve(-1));
    holder.once("close", (code) => resolve(code));
  });
  let said = "";
  holder.stderr.on("data", (chunk: Buffer) => (said = (said + chunk.toString("utf8")).slice(-500)));
  const locked = await new Promise<boolean>((resolve) => {
    let seen = "";
    holder.stdout.on("data", (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      if (seen.includes(LOCKED)) resolve(true);
    });
    void ended.then(() => resolve(false));
  });
  if (!locked) throw new Error(`could not lock the work folder ${workDir} within ${LOCK_WAIT_SECONDS} s (flock exit ${String(await ended)}): ${said.trim()}`);
  try {
    return await work();
  } finally {
    holder.stdin.end();
    await ended;
  }
}

/** What an owner file says. */
export interface Owner {
  /** `<pid>:<start time>` of the backend's process. */
  identity: string;
  /** The checkpoint image's key the backend restores from, if any. */
  image?: string;
}

/** The owner file of `tag`, when it is there and readable. */
async function readOwner(workDir: string, tag: string): Promise<Owner | undefined> {
  const text = await readFile(join(workDir, OWNERS_DIR, tag), "utf8").catch(() => undefined);
  const [identity, ...rest] = (text ?? "").split("\n").map((line) => line.trim());
  if (!identity) return undefined;
  const image = rest.find((line) => line.startsWith("image "))?.slice("image ".length);
  return { identity, ...(image ? { image } : {}) };
}

/** The owner of `tag` when its process is alive (read now: call it again before each kill or removal). */
export async function liveOwner(workDir: string, tag: string): Promise<Owner | undefined> {
  const owner = await readOwner(workDir, tag);
  if (!owner) return undefined;
  return (await processIdentity(Number(owner.identity.split(":")[0]))) === owner.identity ? owner : undefined;
}

/** The live owners of the work folder, by tag (read now). */
export async function liveOwners(workDir: string): Promise<Map<string, Owner>> {
  const live = new Map<string, Owner>();
  for (const tag of await ownerTags(workDir)) {
    const owner = await liveOwner(workDir, tag);
    if (owner) live.set(tag, owner);
  }
  return live;
}

/** The tags that have an owner file. */
export async function ownerTags(workDir: string): Promise<string[]> {
  return (await readdir(join(workDir, OWNERS_DIR)).catch(() => [] as string[])).filter((name) => TAG.test(name));
}

/**
 * Writes this process's owner file for `tag` (whole: written beside and
 * renamed, so a reader never sees half of it). Call it holding the lock.
 */
export async function writeOwner(workDir: string, tag: string, owner: { image?: string }): Promise<void> {
  const dir = join(workDir, OWNERS_DIR);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const identity = (await processIdentity(process.pid)) ?? String(process.pid);
  const beside = join(dir, `.${tag}`);
  await writeFile(beside, `${identity}\n${owner.image ? `image ${owner.image}\n` : ""}`, { mode: 0o600 });
  await rename(beside, join(dir, tag));
}

/** Removes the owner file of `tag`. Call it holding the lock. */
export async function removeOwner(workDir: string, tag: string): Promise<void> {
  await rm(join(workDir, OWNERS_DIR, tag), { force: true });
}

/** The tag of a container id or job folder made by a backend (`folio-<tag>-…`; an earlier release's `folio-<uuid>` reads as one too). */
export function tagOf(id: string): string | undefined {
  return /^folio-([0-9a-f]{8})-/.exec(id)?.[1];
}

/**
 * The processes (from /proc) that run with runsc's state folder `stateDir`
 * and name a container `dead` says is: runsc commands, file servers and
 * sandbox kernels, found by the container id among their arguments or in
 * the bundle path they were given.
 */
export async function processesNaming(stateDir: string, dead: (id: string) => Promise<boolean>): Promise<number[]> {
  const pids = (await readdir("/proc").catch(() => [] as string[])).filter((name) => /^\d+$/.test(name));
  const found: number[] = [];
  for (const pid of pids) {
    const args = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
    if (!args.includes(`--root=${stateDir}`)) continue;
    const named = args.flatMap((a) => a.split(/[/=]/)).filter((part) => part.startsWith("folio-"));
    for (const id of named) {
      if (await dead(id)) {
        found.push(Number(pid));
        break;
      }
    }
  }
  return found;
}

/**
 * A live process's pid and start time (`/proc/<pid>/stat`), so that a
 * reused pid is not taken for it; undefined when there is no such process
 * or it has died and not been reaped yet (a zombie).
 */
export async function processIdentity(pid: number): Promise<string | undefined> {
  if (!Number.isInteger(pid) || pid < 1) return undefined;
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  // Fields after the command's closing parenthesis: the state is the first, the start time the 20th (the 22nd of the line).
  const fields = stat?.slice(stat.lastIndexOf(")") + 2).split(" ");
  if (!fields || fields[0] === "Z" || fields[0] === "X") return undefined;
  return fields[19] ? `${pid}:${fields[19]}` : undefined;
}
