/**
 * PDF pages to images with poppler (`pdfinfo`, `pdftoppm` from
 * poppler-utils): PNG for whoever needs a standard image (upstream models,
 * chat attachments), or binary PGM, streamed page by page, for the local OCR
 * engines. Everything heavy runs in child processes, so the event loop only
 * moves bytes; the PDF and the rendered pages live in a private temporary
 * folder (mode 0700) that is removed afterwards, whatever happens.
 *
 * Pages are rendered at 200 DPI by default (an A4 page is 1654 × 2339
 * pixels) from the crop box, which is what PDF viewers show. A page whose
 * rendering would exceed `maxPixelsPerPage` (default 40 megapixels, a little
 * above A1 at 200 DPI) is rendered at the highest resolution that fits
 * instead: a tiny PDF with a huge page must not make pdftoppm allocate
 * gigabytes.
 *
 * Why PGM for local engines: pdftoppm renders a page in milliseconds and
 * spends most of its time compressing PNG (10 A4 pages: about 0.25 s to raw
 * pixels, 4.7 s to PNG on a 2-core machine), and an OCR engine only decodes
 * the PNG again. A PGM page is 4 MB, so streamed pages wait on disk, not in
 * memory, until the consumer takes them, and pdftoppm is paused (SIGSTOP)
 * while 8 of them wait: a 100-page PDF must not fill the temporary folder
 * ahead of a slow reader.
 *
 * Errors are {@link FolioError}s: a damaged, non-PDF or password-protected
 * file, or too many pages, is `invalid_request` (the caller sets `param`,
 * which it knows: `url`, `base64`, a chat content part); running out of time
 * is `timeout`; poppler missing is `service_unavailable`. When the caller's
 * signal aborts, the promise (or the stream's `next()`) rejects with
 * `signal.reason` and the child is killed.
 */
import { execFile, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FolioError } from "../platform/errors/index.ts";
import { PAGE_DPI, PGM_MIME_TYPE } from "../formats/index.ts";
import { planPages, type PageSelection } from "../formats/pages.ts";

/** Default pixel budget per page: A1 at 200 DPI (4681 × 6622) fits; A0 is rendered at about 160 DPI. */
export const DEFAULT_MAX_PIXELS_PER_PAGE = 40_000_000;
const DEFAULT_TIMEOUT_MS = 30_000;
/** pdfinfo's output is a few lines per page; anything near this is not poppler talking. */
const MAX_TOOL_OUTPUT_BYTES = 4 * 1024 * 1024;
/**
 * How often a stream looks at the folder while pdftoppm runs (its exit is
 * noticed at once). A page takes some 25 ms to render and far longer to
 * read, so this adds no measurable delay.
 */
const STREAM_POLL_MS = 10;
/**
 * Rendered pages a stream lets wait on disk for the consumer before it
 * pauses pdftoppm: 8 A4 pages are 32 MB, where a 100-page PDF rendered
 * ahead of a slow reader would be 400 MB in the temporary folder.
 */
const DEFAULT_PAGES_AHEAD = 8;

export interface PdfInfoOptions {
  /** For the pdfinfo run; default 30 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface RasterizeOptions {
  /** Resolution in dots per inch; default 200. */
  dpi?: number;
  /**
   * More pages than this is a 400 naming the limit and the `pages` option;
   * with `pages`, more selected pages than this.
   */
  maxPages: number;
  /**
   * Only these pages (the request's `pages` option); a page beyond the
   * document's end is a 400 with `param: "pages"`. Default: every page.
   */
  pages?: PageSelection;
  /** For the whole job: inspection and every page. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Pages larger than this at `dpi` are rendered at a lower resolution; default 40 MP. */
  maxPixelsPerPage?: number;
}

export interface RasterizedPdf {
  /** The document's pages. */
  pageCount: number;
  /** The pages rendered, in document order: every page, or the selected ones. */
  pageNumbers: number[];
  /** PNG images, one per entry of `pageNumbers`. */
  pages: Buffer[];
}

/** Options of {@link OpenedPdf.stream}. */
export interface StreamOptions {
  /** Default: the signal given to {@link openPdf}. */
  signal?: AbortSignal;
  /** For the rendering, not for the time the consumer takes; default the `timeoutMs` given to {@link openPdf}. */
  timeoutMs?: number;
  /**
   * Rendered pages not yet taken that may wait on disk; pdftoppm is paused
   * (SIGSTOP, its time limit too) while more do, and resumed as the consumer
   * takes them. Default 8, at least 1.
   */
  pagesAhead?: number;
  /** Called once pdftoppm has written the last page (the consumer may not have taken it yet). */
  onRendered?: () => void;
}

/** Options of {@link streamPdfPages}. */
export type StreamPdfOptions = RasterizeOptions & Omit<StreamOptions, "signal" | "timeoutMs">;

/** One page of a streamed PDF. */
export interface RenderedPage {
  /** From 1. */
  pageNumber: number;
  /** Binary PGM (P5, maxval 255): a short header, then one byte of grey per pixel; `parsePgm` in internal/formats reads it. */
  image: Buffer;
  mimeType: typeof PGM_MIME_TYPE;
}

/** Page size in points (crop box, rotation applied), as pdfinfo reports it. */
export interface PdfPageSize {
  width: number;
  height: number;
}

/**
 * A PDF written to a private temporary folder and inspected (page count,
 * page sizes), ready to render pages on demand: lets a caller start work on
 * page 1 while later pages are still to be rendered. Call {@link close}.
 */
export interface OpenedPdf {
  readonly pageCount: number;
  /** What to process, in document order: every page, or those the `pages` option selects. */
  readonly selected: readonly number[];
  /** Sizes of the pages inspected (index: page - 1): the selected ones, and the pages between them. */
  readonly pageSizes: readonly PdfPageSize[];
  /**
   * Renders pages `first`..`last` (from 1, inclusive) to PNG, one pdftoppm
   * process per run of pages with the same resolution.
   * @param opts.timeoutMs for this call; default the `timeoutMs` given to {@link openPdf}
   */
  render(first: number, last: number, opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<Buffer[]>;
  /** {@link render} for a list of pages in ascending order (a selection's pages). */
  renderPages(pages: readonly number[], opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<Buffer[]>;
  /**
   * Renders pages `first`..`last` to binary PGM (8-bit grey) and yields each
   * page as soon as pdftoppm has written it, while pdftoppm goes on with the
   * next: one pdftoppm process per run of pages with the same resolution
   * (one for an ordinary document), started on the first `next()`. Rendered
   * pages wait on disk, up to `opts.pagesAhead` of them; then pdftoppm is
   * paused until the consumer catches up. pdftoppm writes pages in order, so
   * a page is complete once a later page's file exists or pdftoppm has
   * exited.
   *
   * Leaving the loop early (`break`, a throw, `return()`) or the signal
   * aborting kills pdftoppm.
   */
  stream(first: number, last: number, opts?: StreamOptions): AsyncGenerator<RenderedPage, void, undefined>;
  /** {@link stream} for a list of pages in ascending order (a selection's pages). */
  streamPages(pages: readonly number[], opts?: StreamOptions): AsyncGenerator<RenderedPage, void, undefined>;
  /** Stops any stream's pdftoppm and removes the temporary folder; idempotent. */
  close(): Promise<void>;
}

/** Number of pages of a PDF (pdfinfo); a damaged or encrypted PDF is a 400. */
export async function pdfPageCount(bytes: Buffer, opts: PdfInfoOptions = {}): Promise<number> {
  const dir = await privateDir();
  try {
    const file = join(dir, "document.pdf");
    await writeFile(file, bytes, { mode: 0o600 });
    const info = await inspect(file, 1, 1, deadline(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, opts.signal));
    return info.pageCount;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Renders every page of a PDF (or the selected ones) to PNG. Checks the
 * page count against `maxPages` and the selection before rendering anything.
 */
export async function rasterizePdf(bytes: Buffer, opts: RasterizeOptions): Promise<RasterizedPdf> {
  // One deadline for the whole job, shared by inspection and rendering.
  const d = deadline(opts.timeoutMs, opts.signal);
  let pdf: OpenedPdf | undefined;
  try {
    pdf = await openPdf(bytes, { ...opts, signal: d.signal });
    // The job's deadline (d) rules; render's own limit is a second later so it never fires first.
    const pages = await pdf.renderPages(pdf.selected, { signal: d.signal, timeoutMs: Math.max(1, d.remainingMs()) + 1000 });
    return { pageCount: pdf.pageCount, pageNumbers: [...pdf.selected], pages };
  } catch (err) {
    throw d.translate(err);
  } finally {
    d.dispose();
    await pdf?.close();
  }
}

/**
 * Every page of a PDF (or the selected ones) as binary PGM, each yielded as
 * soon as it is rendered ({@link OpenedPdf.stream}): a local OCR engine can
 * read page 1 while pdftoppm renders page 2. The page count and the
 * selection are checked against `maxPages` before anything is rendered (the
 * first `next()` rejects). `timeoutMs`
 * bounds inspection and rendering together, not the time the consumer
 * takes; the folder is removed when the loop ends, however it ends.
 */
export async function* streamPdfPages(bytes: Buffer, opts: StreamPdfOptions): AsyncGenerator<RenderedPage, void, undefined> {
  const started = Date.now();
  const pdf = await openPdf(bytes, opts);
  try {
    // What inspection left of the time limit is the rendering's; the stream's clock stops while the consumer lags.
    yield* pdf.streamPages(pdf.selected, { ...opts, timeoutMs: Math.max(1, opts.timeoutMs - (Date.now() - started)) });
  } finally {
    await pdf.close();
  }
}

/**
 * Writes the PDF to a private temporary folder and reads its page count and
 * page sizes; more pages than `maxPages` (or, with `pages`, more selected, or
 * a page beyond the end) is a 400 and leaves nothing behind.
 * `timeoutMs` bounds the inspection and, by default, each `render` call.
 */
export async function openPdf(bytes: Buffer, opts: RasterizeOptions): Promise<OpenedPdf> {
  const dpi = opts.dpi ?? PAGE_DPI;
  if (!(dpi > 0 && dpi <= 1200)) throw new RangeError(`dpi must be in (0, 1200], got ${dpi}`);
  const maxPixels = opts.maxPixelsPerPage ?? DEFAULT_MAX_PIXELS_PER_PAGE;
  const dir = await privateDir();
  let closed = false;
  /** Streams whose pdftoppm may still run: each stops it and resolves once it has exited. */
  const streams = new Set<() => Promise<void>>();
  const close = async () => {
    if (closed) return;
    closed = true;
    await Promise.all([...streams].map((stop) => stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const file = join(dir, "document.pdf");
    await writeFile(file, bytes, { mode: 0o600 });
    const d = deadline(opts.timeoutMs, opts.signal);
    let info: PdfInfo;
    try {
      // Sizes of the pages we may render only: a 100,000-page PDF is refused after one line.
      const span = inspectedSpan(opts.pages, Math.max(1, opts.maxPages));
      info = await inspect(file, 1, span.from === 1 ? span.to : 1, d);
      // A selection further in: its pages' sizes (pdfinfo refuses a first page past the end, which planPages reports).
      if (span.from > 1 && span.from <= info.pageCount) info = await inspect(file, span.from, span.to, d);
    } finally {
      d.dispose();
    }
    if (info.pageCount === 0) throw new FolioError("invalid_request", "the PDF has no pages");
    const plan = planPages(info.pageCount, opts.pages, opts.maxPages);
    if (!plan.ok) {
      throw new FolioError("invalid_request", plan.message, {
        ...(plan.problem === "over_limit" ? {} : { param: "pages" }),
        extra: { page_count: info.pageCount, max_pages: opts.maxPages },
      });
    }
    let batch = 0;
    const renderPages: OpenedPdf["renderPages"] = async (pages, renderOpts = {}) => {
      checkPages("render", pages);
      const rd = deadline(renderOpts.timeoutMs ?? opts.timeoutMs, renderOpts.signal ?? opts.signal);
      try {
        const out: Buffer[] = [];
        for (const run of resolutionRuns(info.sizes, pages, dpi, maxPixels)) {
          const prefix = join(dir, `r${batch++}`);
          await tool("pdftoppm", pdftoppmArgs(run, "png", file, prefix), rd);
          out.push(...(await collectPages(dir, prefix, run.first, run.last)));
        }
        return out;
      } catch (err) {
        throw rd.translate(err);
      } finally {
        rd.dispose();
      }
    };
    const streamPages: OpenedPdf["streamPages"] = async function* (pages, streamOpts = {}) {
      checkPages("stream", pages);
      const caller = streamOpts.signal ?? opts.signal;
      // Aborted when the consumer leaves the loop or close() is called: kills pdftoppm.
      const stop = new AbortController();
      const rd = deadline(streamOpts.timeoutMs ?? opts.timeoutMs, caller ? AbortSignal.any([caller, stop.signal]) : stop.signal);
      const runs = resolutionRuns(info.sizes, pages, dpi, maxPixels).map((run) => ({ ...run, prefix: join(dir, `r${batch++}`) }));
      const rendering = renderInBackground(file, dir, runs, rd, {
        pagesAhead: Math.max(1, streamOpts.pagesAhead ?? DEFAULT_PAGES_AHEAD),
        onRendered: () => {
          rd.pauseClock();
          streamOpts.onRendered?.();
        },
      });
      const stopRendering = async () => {
        stop.abort();
        await rendering.exited;
      };
      streams.add(stopRendering);
      try {
        for (const n of pages) {
          const path = await rendering.page(n);
          const image = await readFile(path);
          await rm(path, { force: true });
          yield { pageNumber: n, image, mimeType: PGM_MIME_TYPE };
        }
      } catch (err) {
        throw rd.translate(err);
      } finally {
        await stopRendering();
        streams.delete(stopRendering);
        rd.dispose();
      }
    };
    return {
      pageCount: info.pageCount,
      selected: plan.pages,
      pageSizes: info.sizes,
      close,
      render: (first, last, renderOpts) => renderPages(pageRange(first, last), renderOpts),
      renderPages,
      stream: (first, last, streamOpts) => streamPages(pageRange(first, last), streamOpts),
      streamPages,
    };
    function checkPages(what: string, pages: readonly number[]): void {
      if (closed) throw new Error(`${what}() after close()`);
      const bad = pages.findIndex((n, i) => !Number.isInteger(n) || n < 1 || n > info.pageCount || (i > 0 && n <= pages[i - 1]!));
      if (pages.length === 0 || bad >= 0) {
        throw new RangeError(`pages ${pages.slice(0, 5).join(",")}${pages.length > 5 ? ",…" : ""} are not ascending within 1..${info.pageCount}`);
      }
    }
  } catch (err) {
    await close();
    throw err;
  }
}

// ---------------------------------------------------------------- internals

interface PdfInfo {
  pageCount: number;
  /** Pages from..min(pageCount, to) of {@link inspect}, at index page - 1. */
  sizes: PdfPageSize[];
}

/** Pages first..last, for the callers of the two-number forms (none when it is no range: the call then rejects). */
function pageRange(first: number, last: number): number[] {
  return Number.isInteger(first) && Number.isInteger(last) && last >= first ? Array.from({ length: last - first + 1 }, (_, i) => first + i) : [];
}

/**
 * The pages whose sizes are read: those a selection can render, or the
 * first `maxPages` (more is refused anyway). An open range counts
 * `maxPages` pages from its start: a longer one is refused.
 */
function inspectedSpan(pages: PageSelection | undefined, maxPages: number): { from: number; to: number } {
  if (!pages?.length) return { from: 1, to: maxPages };
  const last = pages.at(-1)!;
  return { from: pages[0]!.first, to: last.last ?? last.first + maxPages - 1 };
}

async function inspect(file: string, from: number, to: number, d: Deadline): Promise<PdfInfo> {
  let stdout: string;
  try {
    // -f/-l: per-page sizes; pdfinfo clamps -l to the real page count.
    ({ stdout } = await tool("pdfinfo", ["-f", String(from), "-l", String(to), file], d));
  } catch (err) {
    throw d.translate(err);
  }
  const pages = /^Pages:\s+(\d+)\s*$/m.exec(stdout);
  if (!pages) throw unreadable("pdfinfo reported no page count");
  const sizes: PdfPageSize[] = [];
  const rotations = new Map<number, number>();
  for (const m of stdout.matchAll(/^Page\s+(\d+)\s+rot:\s+(-?\d+)/gm)) rotations.set(Number(m[1]), Number(m[2]));
  for (const m of stdout.matchAll(/^Page\s+(\d+)\s+size:\s+([\d.]+)\s+x\s+([\d.]+)\s+pts/gm)) {
    const n = Number(m[1]);
    const w = Number(m[2]);
    const h = Number(m[3]);
    const turned = Math.abs(rotations.get(n) ?? 0) % 180 === 90;
    sizes[n - 1] = turned ? { width: h, height: w } : { width: w, height: h };
  }
  return { pageCount: Number(pages[1]), sizes };
}

interface ResolutionRun {
  first: number;
  last: number;
  dpi: number;
}

/** Consecutive pages grouped by the resolution each can be rendered at within the pixel budget. */
function resolutionRuns(sizes: readonly PdfPageSize[], pages: readonly number[], dpi: number, maxPixels: number): ResolutionRun[] {
  const runs: ResolutionRun[] = [];
  for (const n of pages) {
    const s = sizes[n - 1];
    let pageDpi = dpi;
    if (s && s.width > 0 && s.height > 0) {
      const pixels = Math.ceil((s.width * dpi) / 72) * Math.ceil((s.height * dpi) / 72);
      if (pixels > maxPixels) pageDpi = dpiWithin(s, maxPixels);
    }
    const prev = runs.at(-1);
    if (prev && prev.dpi === pageDpi && prev.last === n - 1) prev.last = n;
    else runs.push({ first: n, last: n, dpi: pageDpi });
  }
  return runs;
}

/**
 * The highest resolution (pdftoppm takes fractional DPI; 3 decimals here) at
 * which the page's pixel size, rounded up as pdftoppm does, stays within the
 * budget: the largest k = dpi/72 with (w·k + 1)(h·k + 1) <= maxPixels.
 */
function dpiWithin(size: PdfPageSize, maxPixels: number): number {
  const { width: w, height: h } = size;
  const k = (-(w + h) + Math.sqrt((w + h) ** 2 + 4 * w * h * (maxPixels - 1))) / (2 * w * h);
  return Math.max(0.001, Math.floor(k * 72 * 1000) / 1000);
}

/** pdftoppm's arguments for one run of pages, written as `<prefix>-<n>.png` or `.pgm` (`-gray`). */
function pdftoppmArgs(run: ResolutionRun, format: "png" | "pgm", file: string, prefix: string): string[] {
  return ["-q", "-cropbox", "-r", String(run.dpi), "-f", String(run.first), "-l", String(run.last), format === "png" ? "-png" : "-gray", file, prefix];
}

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

async function collectPages(dir: string, prefix: string, first: number, last: number): Promise<Buffer[]> {
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

interface Rendering {
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
function renderInBackground(
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
  let child: ChildProcess | undefined;
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
    paused = child.kill("SIGSTOP");
    if (paused) d.pauseClock();
  };
  const resume = () => {
    if (!paused) return;
    paused = false;
    d.resumeClock();
    child?.kill("SIGCONT");
  };

  const exited = (async () => {
    for (const run of runs) {
      let running = true;
      const done = tool("pdftoppm", pdftoppmArgs(run, "pgm", file, run.prefix), d, (c) => (child = c)).finally(() => {
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

function privateDir(): Promise<string> {
  // mkdtemp creates the folder with mode 0700.
  return mkdtemp(join(tmpdir(), "folio-pdf-"));
}

/** The caller's signal plus a time limit, and what to throw when either fires. */
interface Deadline {
  signal: AbortSignal;
  remainingMs(): number;
  /** Stops the clock: the time limit does not run while the work waits (or is done). */
  pauseClock(): void;
  resumeClock(): void;
  /** Turns a failure into the error the caller should see. */
  translate(err: unknown): unknown;
  dispose(): void;
}

class TimedOut extends Error {}

function deadline(timeoutMs: number, caller: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  const fire = () => controller.abort(new TimedOut());
  // The clock: `left` ms remained at `since`; no timer while paused.
  let left = timeoutMs;
  let since = Date.now();
  let timer: NodeJS.Timeout | undefined = setTimeout(fire, timeoutMs);
  const onAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener("abort", onAbort, { once: true });
  const pauseClock = () => {
    if (!timer) return;
    clearTimeout(timer);
    timer = undefined;
    left -= Date.now() - since;
  };
  return {
    signal: controller.signal,
    remainingMs: () => (timer ? left - (Date.now() - since) : left),
    pauseClock,
    resumeClock() {
      if (timer || controller.signal.aborted) return;
      since = Date.now();
      timer = setTimeout(fire, Math.max(0, left));
    },
    translate(err) {
      if (caller?.aborted) return caller.reason;
      if (err instanceof TimedOut || controller.signal.reason instanceof TimedOut) {
        return new FolioError("timeout", `rendering the PDF took longer than ${formatSeconds(timeoutMs)}`, { cause: err });
      }
      return err;
    },
    dispose() {
      pauseClock();
      caller?.removeEventListener("abort", onAbort);
    },
  };
}

function formatSeconds(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
}

interface ToolError extends Error {
  code?: string | number | null;
  killed?: boolean;
  stderr?: string;
}

/**
 * Runs a poppler tool (no shell); rejects with a FolioError, or with the
 * signal's reason when aborted. `onChild` gets the process (to pause it).
 */
function tool(cmd: "pdfinfo" | "pdftoppm", args: string[], d: Deadline, onChild?: (child: ChildProcess) => void): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    if (d.signal.aborted) return reject(d.signal.reason);
    const child = execFile(
      cmd,
      args,
      { signal: d.signal, killSignal: "SIGKILL", maxBuffer: MAX_TOOL_OUTPUT_BYTES, encoding: "utf8", windowsHide: true },
      (err: ToolError | null, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        if (d.signal.aborted) {
          // Node answers an abort at once, while the killed process may still be running: wait for it
          // to be gone, so that whoever awaits this (close(), a cleanup) never races a live pdftoppm.
          if (child.exitCode === null && child.signalCode === null) return void child.once("exit", () => reject(d.signal.reason));
          return reject(d.signal.reason);
        }
        if (err.code === "ENOENT") {
          return reject(new FolioError("service_unavailable", `${cmd} (poppler-utils) is not installed on this service`, { cause: err }));
        }
        if (err.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") return reject(unreadable(`${cmd} produced too much output`, err));
        // poppler exit codes: 1 error opening the PDF, 3 permissions; both are the document's fault.
        if (/incorrect password/i.test(stderr)) {
          return reject(new FolioError("invalid_request", "the PDF is protected by a password; send it without one", { cause: err }));
        }
        if (err.code === 1 || err.code === 3) return reject(unreadable(firstPopplerError(stderr), err));
        return reject(new FolioError("internal_error", `${cmd} failed (${err.code ?? err.message})`, { cause: err }));
      },
    );
    onChild?.(child);
  });
}

function firstPopplerError(stderr: string): string {
  return stderr.split("\n").find((l) => /error/i.test(l))?.trim() ?? "poppler could not open it";
}

function unreadable(detail: string, cause?: unknown): FolioError {
  // The detail goes to `cause` (logs), not the message: it can name our temporary paths.
  return new FolioError("invalid_request", "the PDF is damaged or not a PDF and could not be read", { cause: new Error(detail, { cause }) });
}
