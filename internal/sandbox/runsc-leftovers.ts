/**
 * Leftovers cleanup of the runsc work folder: what backends of processes
 * that have died left in it without RunscBackend.close (killed, out of
 * memory) is removed when the next backend on the folder prepares, under
 * the folder's lock (owners.ts). A restored sandbox waits for its hand-in
 * signal for ever (its stdin never ends, unlike a pre-started one's),
 * holding its memory, so nothing else would end it.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../platform/log/index.ts";
import { liveOwner, ownerTags, processesNaming, removeOwner, tagOf, withWorkLock, writeOwner } from "./owners.ts";
import { removeSandboxFolder, type Runsc } from "./runsc-launch.ts";

export interface LeftoversOptions {
  runsc: Runsc;
  workDir: string;
  /** runsc's state folder (`--root`) under the work folder. */
  stateDir: string;
  /** The backend's own tag: never a dead one's. */
  tag: string;
  logger?: Logger;
}

/**
 * Removes what dead backends left in the work folder, then writes this
 * backend's owner file. Each backend has a tag in its containers' ids
 * (`folio-<tag>-<uuid>`) and an owner file `owners/<tag>` naming its
 * process (pid and start time), written before its first container
 * (owners.ts). A tag whose process is not alive (or whose file is missing:
 * an earlier release's ids) is dead: its containers are killed and deleted,
 * any process still naming one of them (runsc commands, file servers,
 * sandbox kernels whose state is gone) is killed, and its job folders and
 * owner file are removed. All of it under the work folder's lock, which
 * every backend also holds to write its owner file, and with the owner read
 * again before each kill or removal: a backend that starts meanwhile
 * (another service, another test) waits for the lock, so none of its
 * sandboxes can be taken for a dead one's. Then this backend's own owner
 * file is written, still under the lock.
 */
export async function removeLeftovers({ runsc, workDir, stateDir, tag: ownTag, logger }: LeftoversOptions): Promise<void> {
  await withWorkLock(workDir, async () => {
    const dead = async (id: string) => {
      const tag = tagOf(id);
      return tag !== undefined && tag !== ownTag && !(await liveOwner(workDir, tag));
    };
    const { output } = await runsc.command(["list", "-quiet"]);
    let sandboxes = 0;
    for (const id of output.split("\n")) {
      if (!(await dead(id))) continue;
      sandboxes++;
      await runsc.command(["kill", id, "KILL"]);
      await runsc.delete(id);
    }
    const stray = await processesNaming(stateDir, dead);
    for (const pid of stray) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
    let folders = 0;
    for (const folder of await readdir(join(workDir, "jobs")).catch(() => [] as string[])) {
      if (!(await dead(folder))) continue;
      folders++;
      await removeSandboxFolder(join(workDir, "jobs", folder));
    }
    for (const tag of await ownerTags(workDir)) {
      if (tag !== ownTag && !(await liveOwner(workDir, tag))) await removeOwner(workDir, tag);
    }
    if (sandboxes + stray.length + folders > 0) {
      logger?.warn({ workDir, sandboxes, processes: stray.length, jobFolders: folders }, "removed what dead processes left in the sandbox work folder");
    }
    await writeOwner(workDir, ownTag, {});
  });
}
