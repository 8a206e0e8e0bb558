/**
 * Where a job's document is kept while the job runs. In Postgres, in 1 MiB
 * chunks (`ocr_job_chunks`): every edge and worker replica reads it there.
 * With the embedded database of `folio dev` (PGlite, one process) as a file
 * in its data folder instead: PGlite runs inside the process, and a
 * 500 MB document written through it would pass through its WebAssembly
 * memory, which never shrinks. (The memory growth of folio dev during a
 * long job is something else: docs/benchmarks/jobs-history.md "Durable jobs".) An
 * object store can come later behind the same functions.
 */
import { existsSync } from "node:fs";
import { copyFile, mkdir, open, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../platform/db/index.ts";

type Db = Kysely<Database> | Transaction<Database>;

export type DocumentStore = { kind: "postgres" } | { kind: "files"; dir: string };

/**
 * Where jobs' documents are kept: in Postgres when there is one
 * (DATABASE_URL), else (the embedded database of folio dev) as files in
 * FOLIO_DATA_DIR/jobs (blobs.ts says why). The edge and the workers must agree.
 */
export function jobDocumentStore(config: { DATABASE_URL?: string | undefined; FOLIO_DATA_DIR: string }): DocumentStore {
  return config.DATABASE_URL ? { kind: "postgres" } : { kind: "files", dir: join(config.FOLIO_DATA_DIR, "jobs") };
}

/** The document is stored in chunks of this many bytes (a row each). */
export const CHUNK_BYTES = 1024 * 1024;

/** A job's document as received: bytes, or a file it was streamed to (which the store may move). */
export type JobDocumentInput = Buffer | { path: string; bytes: number };

/** Keeps `jobId`'s document, in the transaction that writes the job (Postgres), or beside it (files: a rolled-back job's file is swept). */
export async function putDocument(trx: Transaction<Database>, store: DocumentStore, jobId: string, document: JobDocumentInput): Promise<void> {
  if (store.kind === "files") {
    await mkdir(store.dir, { recursive: true, mode: 0o700 });
    const dest = join(store.dir, jobId);
    if (Buffer.isBuffer(document)) return writeFile(dest, document, { mode: 0o600 });
    // The upload's folder is removed after the answer: move the file out of it (copy across filesystems).
    await rename(document.path, dest).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== "EXDEV") throw err;
      await copyFile(document.path, dest);
    });
    return;
  }
  let seq = 0;
  for await (const chunk of chunksOf(document)) await trx.insertInto("ocr_job_chunks").values({ job_id: jobId, seq: seq++, data: chunk }).execute();
}

/**
 * An office document's job, converted: its PDF becomes the document its
 * pages are rendered from. Postgres: the chunks are replaced in `trx` (the
 * transaction that queues the pages). Files: written beside the original as
 * `<job>.pdf` (through a temporary name, so it is whole or absent), which
 * {@link documentFile} prefers; written before the transaction commits, so a
 * conversion whose transaction rolls back leaves a file the next one
 * overwrites, and the original stays for that next conversion.
 */
export async function putConvertedDocument(trx: Transaction<Database>, store: DocumentStore, jobId: string, pdf: Buffer): Promise<void> {
  if (store.kind === "files") {
    await mkdir(store.dir, { recursive: true, mode: 0o700 });
    const dest = join(store.dir, `${jobId}${CONVERTED_SUFFIX}`);
    await writeFile(`${dest}.part`, pdf, { mode: 0o600 });
    await rename(`${dest}.part`, dest);
    return;
  }
  await trx.deleteFrom("ocr_job_chunks").where("job_id", "=", jobId).execute();
  await putDocument(trx, store, jobId, pdf);
}

/** The files store's name of a converted document: the job id and this. */
const CONVERTED_SUFFIX = ".pdf";

/** The document in chunks of {@link CHUNK_BYTES}: a file is read one chunk at a time. */
async function* chunksOf(document: JobDocumentInput): AsyncGenerator<Buffer> {
  if (Buffer.isBuffer(document)) {
    for (let at = 0; at < document.length; at += CHUNK_BYTES) yield document.subarray(at, at + CHUNK_BYTES);
    return;
  }
  const file = await open(document.path, "r");
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      const { bytesRead } = await file.read(chunk, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) return;
      yield bytesRead === CHUNK_BYTES ? chunk : chunk.subarray(0, bytesRead);
    }
  } finally {
    await file.close();
  }
}

/**
 * A file holding the job's document: the store's own (files), or `scratch`
 * written from the chunks one at a time (Postgres: a 500 MB scan is never
 * whole in memory). Undefined when the document is gone (the job ended).
 */
export async function documentFile(db: Db, store: DocumentStore, jobId: string, scratch: string): Promise<string | undefined> {
  if (store.kind === "files") {
    for (const path of [join(store.dir, `${jobId}${CONVERTED_SUFFIX}`), join(store.dir, jobId)]) if (existsSync(path)) return path;
    return undefined;
  }
  const file = await open(scratch, "w", 0o600);
  let seq = 0;
  try {
    for (;; seq++) {
      const row = await db.selectFrom("ocr_job_chunks").select("data").where("job_id", "=", jobId).where("seq", "=", seq).executeTakeFirst();
      if (!row) break;
      await file.write(row.data);
    }
  } finally {
    await file.close();
  }
  if (seq > 0) return scratch;
  await rm(scratch, { force: true });
  return undefined;
}

/** The job's document as sent, whole (images and office documents, which are read whole; empty once the job has ended). */
export async function documentBytes(db: Db, store: DocumentStore, jobId: string): Promise<Buffer> {
  if (store.kind === "files") return readFile(join(store.dir, jobId)).catch(() => Buffer.alloc(0));
  const chunks = await db.selectFrom("ocr_job_chunks").select("data").where("job_id", "=", jobId).orderBy("seq").execute();
  return Buffer.concat(chunks.map((c) => c.data));
}

/** Files of this age are past any transaction writing their job. */
const SETTLED_MS = 10 * 60_000;

/**
 * Deletes the files of jobs that have ended or were never written (their
 * transaction rolled back), once they are old enough not to belong to a
 * job being written. Postgres chunks go with the job's end instead.
 * Returns how many were deleted.
 */
export async function sweepDocuments(db: Db, store: DocumentStore): Promise<number> {
  if (store.kind !== "files" || !existsSync(store.dir)) return 0;
  let deleted = 0;
  for (const name of await readdir(store.dir)) {
    const path = join(store.dir, name);
    // A converted document (and one being written) belongs to the job its name starts with.
    const id = name.replace(/\.pdf(\.part)?$/, "");
    const job = await db.selectFrom("ocr_jobs").select("status").where("id", "=", id).executeTakeFirst();
    if (job && (job.status === "queued" || job.status === "running")) continue;
    if (!job && Date.now() - (await stat(path)).mtimeMs < SETTLED_MS) continue;
    await rm(path, { force: true });
    deleted++;
  }
  return deleted;
}
