/**
 * The size limit of a runsc sandbox's job folder: the folder is a tmpfs of
 * its own on the host, mounted with `size=` before the sandbox starts.
 *
 * `/job` is the one host path a sandbox may write (bound read-write into
 * it); without a limit, a document that takes over LibreOffice could fill
 * the host's disk through it. A tmpfs inside the sandbox cannot serve here
 * (its files live in the sandbox's memory, out of the host's reach), and
 * runsc has no size option for a bind mount, so the limit is the host's:
 * writes past it fail with ENOSPC in the sandbox. A tmpfs takes memory
 * only for what is written, and the pages are read into memory anyway.
 *
 * The size: what the host writes (the document, job.json, prestart.json,
 * handin.json, with `precopyProfile` the profile copy) and what the program
 * may write back ({@link jobBytes}). A sandbox started before its document
 * (pre-started, restored) gets {@link JOB_FILES_BYTES} until the hand-in,
 * and its folder is resized for the document before it is written.
 *
 * Needs root, as runsc does; `mount` and `umount` are util-linux's.
 */
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";

/**
 * Room for the job's small files: job.json, prestart.json, handin.json,
 * result.json (at most 1 MiB, jobdir.ts MAX_RESULT_BYTES) and a copy of the
 * prepared LibreOffice profile (256 KiB measured, LibreOffice 7.4), with a
 * wide margin.
 */
export const JOB_FILES_BYTES = 64 * 1024 * 1024;

/** The size of a job folder for a document of `documentBytes` whose pages may take `maxOutputBytes`. */
export function jobBytes(documentBytes: number, maxOutputBytes: number): number {
  return documentBytes + maxOutputBytes + JOB_FILES_BYTES;
}

/** Mounts a tmpfs of `bytes` on the (empty) folder `dir`, owned by root, mode 0755 as the host makes job folders. */
export async function mountJobDir(dir: string, bytes: number): Promise<void> {
  await run("mount", ["-t", "tmpfs", "-o", `size=${bytes},mode=0755,nosuid,nodev`, "tmpfs", dir]);
}

/** Changes the size of a mounted job folder (a tmpfs keeps its files). */
export async function resizeJobDir(dir: string, bytes: number): Promise<void> {
  await run("mount", ["-o", `remount,size=${bytes}`, dir]);
}

/**
 * Unmounts a job folder's tmpfs, if it is one: lazily, so that a file
 * server still going down cannot keep the folder (its memory is freed when
 * the last file is closed). A folder that is not mounted is fine.
 */
export async function unmountJobDir(dir: string): Promise<void> {
  if (!(await isMountPoint(dir))) return;
  await run("umount", ["--lazy", dir]);
}

/** Whether `dir` is a mount point (per /proc/self/mountinfo). */
async function isMountPoint(dir: string): Promise<boolean> {
  const info = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  // Field 5 is the mount point, with spaces and the like escaped as octal.
  const escaped = dir.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);
  return info.split("\n").some((line) => line.split(" ")[4] === escaped);
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
    let said = "";
    child.stderr.on("data", (chunk: Buffer) => (said = (said + chunk.toString("utf8")).slice(-500)));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")} failed (exit ${String(code)}): ${said.trim()}`))));
  });
}
