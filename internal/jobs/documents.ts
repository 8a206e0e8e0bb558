/**
 * A worker's files of its jobs' documents: a job's stored document is
 * written to a private temporary folder once, one 1 MiB chunk at a time, and
 * every range of that job this process reads renders its pages from that
 * file, inspected (page count and sizes, pdfinfo) once. So a 500 MB scan costs disk, not memory, and is fetched from the
 * database once per worker, not once per range. A file no range has used for
 * a while is deleted; the folder goes with the worker.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PdfInfo } from "../documents/index.ts";
import type { DB } from "../platform/db/index.ts";
import { documentFile, type DocumentStore } from "./blobs.ts";

interface Entry {
  ready: Promise<string | undefined>;
  /** What pdfinfo says of the file, once asked. */
  inspected?: Promise<PdfInfo>;
  users: number;
  lastUsed: number;
}

export class JobDocuments {
  private dir: Promise<string> | undefined;
  private readonly entries = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;
  private written = 0;

  /** @param idleMs how long an unused document's file is kept */
  constructor(
    private readonly db: DB,
    private readonly store: DocumentStore,
    private readonly idleMs: number,
  ) {
    this.sweeper = setInterval(() => void this.sweep(), Math.max(1_000, Math.floor(idleMs / 2)));
    this.sweeper.unref();
  }

  /**
   * The path of `jobId`'s document, written first when this process has no
   * file of it; undefined when the job has no document any more (it ended).
   * Call {@link release} with the job id when done with it.
   */
  async acquire(jobId: string): Promise<string | undefined> {
    let entry = this.entries.get(jobId);
    if (!entry) {
      const ready = this.write(jobId);
      entry = { ready, users: 0, lastUsed: Date.now() };
      this.entries.set(jobId, entry);
      // A failed write is not kept: the next range tries again.
      ready.catch(() => this.entries.delete(jobId));
    }
    entry.users++;
    try {
      return await entry.ready;
    } catch (err) {
      entry.users--;
      throw err;
    }
  }

  /**
   * The page count and page sizes of `jobId`'s file, read by `inspect` the
   * first time they are asked for (a failure is not kept); call between
   * {@link acquire} and {@link release}.
   */
  inspected(jobId: string, inspect: () => Promise<PdfInfo>): Promise<PdfInfo> {
    const entry = this.entries.get(jobId);
    if (!entry) return inspect();
    if (!entry.inspected) {
      const p = inspect();
      entry.inspected = p;
      p.catch(() => {
        if (entry.inspected === p) entry.inspected = undefined;
      });
    }
    return entry.inspected;
  }

  release(jobId: string): void {
    const entry = this.entries.get(jobId);
    if (!entry) return;
    entry.users--;
    entry.lastUsed = Date.now();
  }

  /** Deletes every file and the folder. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.entries.clear();
    if (this.dir) await rm(await this.dir, { recursive: true, force: true });
  }

  private async write(jobId: string): Promise<string | undefined> {
    this.dir ??= mkdtemp(join(tmpdir(), "folio-jobs-"));
    // A fresh name each time: a file being swept never collides with a new one of the same job.
    return documentFile(this.db, this.store, jobId, join(await this.dir, `${jobId}.${++this.written}`));
  }

  private async sweep(): Promise<void> {
    const now = Date.now();
    for (const [jobId, entry] of this.entries) {
      if (entry.users > 0 || now - entry.lastUsed < this.idleMs) continue;
      this.entries.delete(jobId);
      const path = await entry.ready.catch(() => undefined);
      // Only this worker's own copies: the files store's documents are the store's.
      const dir = this.dir && (await this.dir);
      if (path && dir && path.startsWith(dir + "/")) await rm(path, { force: true });
    }
  }
}
