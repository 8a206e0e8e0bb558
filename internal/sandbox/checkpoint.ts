/**
 * Checkpoint images of a waiting sandbox, for the runsc backend's
 * `restore` option: where they are kept, what they are keyed on, and the
 * counters of restores and of their fallbacks.
 *
 * An image is a `runsc checkpoint` of a sandbox whose program has started
 * LibreOffice and waits for its hand-in. It is only valid for what that
 * sandbox was made of, so it is kept under a key hashed from all of it (the
 * LibreOffice install, the profile, the program bundle, the Node binary, the
 * OCI configuration with the job folder left out, runsc and its flags, and
 * the system's packages: see {@link SYSTEM_FILES}); a change of any of them
 * gives a new key, and the image is made again. The store may be shared by
 * several live backends on one work folder (another service, a test, a
 * release being rolled out), each restoring from its own image: an image is
 * removed only when no live backend restores from it, and a folder being
 * built only when its builder is dead, decided under the work folder's lock
 * and read again before each removal ({@link StoreUsers}, owners.ts).
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { Metrics } from "../platform/metrics/index.ts";
import { SOFFICE_BIN } from "./profile.ts";

const run = promisify(execFile);

/** Bump when what an image holds changes in a way none of the key's inputs show. */
const IMAGE_FORMAT = "2: state stored uncompressed";
/** Written into an image folder once the checkpoint in it is complete. */
const COMPLETE_MARKER = "complete";

/** What an image depends on; each part is hashed into its key. */
export interface ImageInputs {
  /** The runsc binary and the global flags sandboxes get (platform, tuning). */
  runsc: string;
  runscFlags: readonly string[];
  /** The OCI configuration of a sandbox with its job folder replaced by a placeholder (its root folder's etc/ files are hashed too). */
  config: unknown;
  /** The prestart.json of the sandbox that is checkpointed (how it waits, whether it warms LibreOffice up). */
  prestart?: unknown;
  programFile: string;
  nodeBinary: string;
  profileDir: string;
  /** Files whose identity (path, size, change time) is part of the key; default {@link SYSTEM_FILES}. */
  systemFiles?: readonly string[];
}

/**
 * The image holds running processes mapping the host's binaries and
 * libraries (LibreOffice, the pre-started pdftoppm, glibc, fontconfig…),
 * bound read-only from /usr. Restored over other versions of those files,
 * such a process would run code it was not loaded with. pdftoppm stands
 * for poppler, and dpkg's status file, rewritten by every package
 * installed, upgraded or removed, for all the rest on a Debian system
 * (elsewhere it is "missing", and only the named binaries count).
 */
export const SYSTEM_FILES: readonly string[] = ["/usr/bin/pdftoppm", "/var/lib/dpkg/status"];

/** The key of an image made from `inputs`: a hex digest, also the name of its folder. */
export async function imageKey(inputs: ImageInputs): Promise<string> {
  const hash = createHash("sha256").update(`format ${IMAGE_FORMAT}\n`);
  const part = (name: string, value: string | Buffer) => hash.update(`${name} ${value.length}\n`).update(value);
  const { stdout: runscVersion } = await run(inputs.runsc, ["--version"]);
  part("runsc", runscVersion);
  part("flags", JSON.stringify(inputs.runscFlags));
  part("config", JSON.stringify(inputs.config));
  // The configuration names its root folder; what the root's etc/ says (the font configuration above all) is part of it.
  const root = (inputs.config as { root?: { path?: unknown } } | undefined)?.root?.path;
  if (typeof root === "string") {
    const etc = join(root, "etc");
    for (const file of await filesUnder(etc).catch(() => [])) part(`root/etc/${file}`, await readFile(join(etc, file)));
  }
  if (inputs.prestart !== undefined) part("prestart", JSON.stringify(inputs.prestart));
  part("program", await readFile(inputs.programFile));
  // The Node binary is large; its identity (path, size, change time) stands for its content.
  part("node", await identity(inputs.nodeBinary));
  for (const file of await filesUnder(inputs.profileDir)) part(`profile/${file}`, await readFile(join(inputs.profileDir, file)));
  const office = dirname(SOFFICE_BIN);
  part("office", await readFile(join(office, "versionrc")).catch(() => ""));
  for (const file of [SOFFICE_BIN, join(office, "libmergedlo.so"), ...(inputs.systemFiles ?? SYSTEM_FILES)]) part(file, await identity(file));
  return hash.digest("hex").slice(0, 32);
}

/** Path, size and change time of a file; "missing" when there is none. */
async function identity(file: string): Promise<string> {
  const info = await stat(file).catch(() => undefined);
  return info ? `${file} ${info.size} ${info.ctimeMs}` : `${file} missing`;
}

/** Files under `dir`, relative, sorted. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

/** The backends sharing a checkpoint store, as {@link ensureImage} needs them (the runsc backend's owner files). */
export interface StoreUsers {
  /** The tag of the backend that builds: in its building folder's name (`<key>.building-<tag>`). */
  builder: string;
  /** Runs `work` holding the lock under which the store and the users change. */
  locked<T>(work: () => Promise<T>): Promise<T>;
  /** Records that the building backend restores from the image `key` (called holding the lock). */
  claim(key: string): Promise<void>;
  /** Read afresh: the tags of the live backends and the image keys they restore from. */
  inUse(): Promise<{ tags: ReadonlySet<string>; images: ReadonlySet<string> }>;
}

/**
 * The folder of the complete image with this key under `store`, made by
 * `make` (into an empty folder) when there is none. The key is claimed for
 * this backend first, so that no other removes the image meanwhile. Made
 * beside and renamed into place, unless another backend completed the same
 * image meanwhile (its image is kept: it may be restoring from it). Then
 * images no live backend restores from, and folders of dead builders, are
 * removed.
 */
export async function ensureImage(store: string, key: string, make: (dir: string) => Promise<void>, users: StoreUsers): Promise<string> {
  const dir = join(store, key);
  const ready = await users.locked(async () => {
    await users.claim(key);
    return isComplete(dir);
  });
  if (!ready) {
    await mkdir(store, { recursive: true, mode: 0o700 });
    const building = `${dir}${BUILDING}${users.builder}`;
    await rm(building, { recursive: true, force: true });
    await mkdir(building, { mode: 0o700 });
    try {
      await make(building);
      await writeFile(join(building, COMPLETE_MARKER), key);
    } catch (err) {
      await rm(building, { recursive: true, force: true });
      throw err;
    }
    await users.locked(async () => {
      if (await isComplete(dir)) {
        await rm(building, { recursive: true, force: true });
        return;
      }
      await rm(dir, { recursive: true, force: true });
      await rename(building, dir);
    });
  }
  await users.locked(() => prune(store, key, users));
  return dir;
}

/** Between an image's key and its builder's tag in the name of a folder being built. */
const BUILDING = ".building-";

/**
 * Removes what no live backend needs from the store: images other than
 * `key` that none restores from, and folders being built whose builder is
 * dead. Who is alive is read again before each removal. Called holding the lock.
 */
async function prune(store: string, key: string, users: StoreUsers): Promise<void> {
  for (const entry of await readdir(store).catch(() => [] as string[])) {
    if (entry === key) continue;
    const at = entry.indexOf(BUILDING);
    const { tags, images } = await users.inUse();
    const needed = at >= 0 ? tags.has(entry.slice(at + BUILDING.length)) : images.has(entry);
    if (!needed) await rm(join(store, entry), { recursive: true, force: true });
  }
}

/** Removes an image that failed to restore, so that the next {@link ensureImage} makes it again. */
export async function discardImage(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

async function isComplete(dir: string): Promise<boolean> {
  return stat(join(dir, COMPLETE_MARKER)).then(
    (s) => s.isFile(),
    () => false,
  );
}

/** Counters of the restore path, in the conversion process's registry. */
export class RestoreMetrics {
  readonly restores;
  readonly fallbacks;

  constructor(metrics: Metrics = new Metrics("conversion", false)) {
    this.restores = metrics.counter("sandbox_restores_total", "runsc sandboxes restored from the checkpoint image (runsc backend, FOLIO_RUNSC_RESTORE).");
    this.fallbacks = metrics.counter(
      "sandbox_restore_fallbacks_total",
      "runsc sandboxes started without the checkpoint image although restore is on, by reason (image: no image could be made; restore: runsc restore failed, the image is made again).",
      ["reason"],
    );
  }
}
