/** The local file a client command sends: read whole, or opened as a Blob that is read from disk as it is sent. */
import { openAsBlob } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { ClientError } from "./http.ts";

/** The whole file (documents the synchronous calls take whole anyway). */
export async function readInput(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw inputError(path, err);
  }
}

/**
 * The file as a Blob backed by the file: fetch streams it into the request
 * body from disk, so a 500 MB scan is never whole in memory.
 */
export async function openInput(path: string): Promise<Blob> {
  try {
    // openAsBlob's own error for a missing file or a folder names neither: ask the file system first.
    const s = await stat(path);
    if (s.isDirectory()) throw Object.assign(new Error("is a folder"), { code: "EISDIR" });
    return await openAsBlob(path);
  } catch (err) {
    throw inputError(path, err);
  }
}

function inputError(path: string, err: unknown): ClientError {
  const code = (err as NodeJS.ErrnoException).code;
  return new ClientError(code === "ENOENT" ? `no such file: ${path}` : code === "EISDIR" ? `${path} is a folder, not a file` : `cannot read ${path}: ${code ?? String(err)}`);
}
