/**
 * Pages out of pdftoppm's output folder for `pdf.ts`: the PNG files of a
 * finished run, and the PGM stream, where pdftoppm renders in the
 * background, each page is handed over as soon as it is complete, and
 * pdftoppm is paused while too many wait on disk.
 */
import { readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { pdftoppmArgs, type ResolutionRun } from "./pdf-inspect.ts";
import { signalTool, tool, unreadable, type Deadline, type ToolChild } from "./poppler.ts";

/**
 * How often a stream looks at the folder while pdftoppm runs (its exit is
 * noticed at once). A page takes some 25 ms to render and far longer to
 * read, so this adds no measurable delay.
 */
const STREAM_POLL_MS = 10;

/** The page files of one pdftoppm run in the folder by page number: `<prefix>-<n>.<ext>`, n zero-padded to the document's page-count width. */
async function pageFiles(dir: string, prefix: string, ext: "png" | "pgm"): Promise<Map<number, string>> {
  const base = prefix.slice(dir.length + 1) + "-";
  const suffix = `.${ext}`;
  const byPage = new Map<number, string>();
  for (const name of await readdir(dir)) {
    if (name.startsWith(base) && name.endsWith(suffix)) byPage.set(Number(name.slice(base.length, -suffix.length)), join(dir, name));
  }
  return byPage;
}

/** The PNG pages `first`..`last` of a finished pdftoppm run, read and removed from the folder. */
export async function collectPages(dir: string, prefix: string, first: number, last: number): Promise<Buffer[]> {
  const byPage = await pageFiles(dir, prefix, "png");
  const pages: Buffer[] = [];
  for (let n = first; n <= last; n++) {
    const path = byPage.get(n);
    // pdftoppm skips a page it cannot render and still exits 0 when others worked.
    if (!path) throw unreadable(`page ${n} could not be rendered`);
    pages.push(await readFile(path));
    await rm(path, { force: true });
  }
  return pages;
}

export interface Rendering {
  /**
   * Waits until page `n` is completely written and returns its file; rejects
   * when pdftoppm failed or skipped it, or the deadline fired. Pages are
   * taken in order: asking for page n says pages before it are taken.
   */
  page(n: number): Promise<string>;
  /** Settles (never rejects) once every pdftoppm run has exited, however. */
  exited: Promise<void>;
}

/**
 * Runs pdftoppm (PGM) over `runs` one after the other, in the background,
 * until all are written, one fails, or `d.signal` aborts (which kills the
 * running one). While it runs, the folder is listed every few milliseconds:
 * that tells which pages are complete, and pauses pdftoppm (SIGSTOP, and the
 * deadline's clock) when more than `pagesAhead` pages wait to be taken; the
 * consumer asking for the next page resumes it.
 */
export function renderInBackground(
  file: string,
  dir: string,
  runs: readonly (ResolutionRun & { prefix: string })[],
  d: Deadline,
  o: { pagesAhead: number; onRendered: () => void },
): Rendering {
  const prefixes = runs.map((run) => run.prefix.slice(dir.length + 1) + "-");
  /** Runs before this index have exited successfully; `runs.length` when all have. */
  let finished = 0;
  let failure: { err: unknown } | undefined;
  let child: ToolChild | undefined;
  let paused = false;
  /** Page files on disk at the last listing (complete, or the one being written). */
  let files = new Map<number, string>();
  /** The page the consumer waits for or will ask for next; pages before it are taken. */
  let wanted = runs[0]?.first ?? 1;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
    waiters.clear();
  };

  const list = async () => {
    const next = new Map<number, string>();
    for (const name of await readdir(dir)) {
      const k = prefixes.findIndex((p) => name.startsWith(p));
      if (k >= 0 && name.endsWith(".pgm")) next.set(Number(name.slice(prefixes[k]!.length, -4)), join(dir, name));
    }
    files = next;
  };
  const waiting = () => [...files.keys()].filter((m) => m >= wanted).length;
  const pause = () => {
    if (paused || !child) return;
    paused = signalTool(child, "SIGSTOP");
    if (paused) d.pauseClock();
  };
  const resume = () => {
    if (!paused) return;
    paused = false;
    d.resumeClock();
    if (child) signalTool(child, "SIGCONT");
  };

  const exited = (async () => {
    for (const run of runs) {
      let running = true;
      const done = tool("pdftoppm", pdftoppmArgs(run, "pgm", file, run.prefix), { read: [file], write: [dir] }, d, (c) => (child = c)).finally(() => {
        running = false;
        child = undefined;
        resume();
      });
      // Watch the folder while this run renders (a listing that fails only delays pages to the run's end).
      const watching = (async () => {
        while (running) {
          if (!paused) {
            await list();
            wake();
            // The file being written counts: more than pagesAhead files are pagesAhead complete pages and one more.
            if (waiting() > o.pagesAhead) pause();
          }
          await new Promise((resolve) => setTimeout(resolve, STREAM_POLL_MS));
        }
      })().catch(() => undefined);
      try {
        await done;
      } finally {
        await watching;
      }
      // Every file of the run is listed before the run counts as finished: page() trusts the listing then.
      await list();
      finished++;
      wake();
    }
    o.onRendered();
  })().catch((err: unknown) => {
    failure = { err };
    wake();
  });

  return {
    exited,
    async page(n) {
      const r = runs.findIndex((run) => n >= run.first && n <= run.last);
      if (r < 0) throw new RangeError(`page ${n} is not rendered by this stream`);
      wanted = n;
      for (;;) {
        if (failure) throw failure.err;
        // Aborted after rendering finished (the caller went away): nothing is left to kill.
        d.signal.throwIfAborted();
        // pdftoppm writes pages in order: a later file means this one is complete; so does its run's exit.
        if (r < finished || [...files.keys()].some((m) => m > n)) {
          const path = files.get(n);
          // pdftoppm skips a page it cannot render and still exits 0 when others worked.
          if (!path) throw unreadable(`page ${n} could not be rendered`);
          wanted = n + 1;
          if (waiting() <= o.pagesAhead) resume();
          return path;
        }
        // This page is still being written: pdftoppm must run (it is paused only with complete pages waiting).
        resume();
        await new Promise<void>((resolve) => waiters.add(resolve));
      }
    },
  };
}
