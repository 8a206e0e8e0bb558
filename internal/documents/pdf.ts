/**
 * PDF pages to images with poppler (`pdfinfo`, `pdftoppm` from
 * poppler-utils): PNG for whoever needs a standard image (upstream models,
 * chat attachments), or binary PGM, streamed page by page, for the local OCR
 * engines. Everything heavy runs in child processes, so the event loop only
 * moves bytes; the rendered pages, and the PDF when it is given as bytes,
 * live in a private temporary folder (mode 0700) that is removed afterwards,
 * whatever happens. A PDF given as a file ({@link PdfSource}) is read where
 * it is: a 300 MB document is never whole in memory, nor copied.
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
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { FolioError } from "../platform/errors/index.ts";
import { PAGE_DPI, PGM_MIME_TYPE } from "../formats/index.ts";
import { DEFAULT_MAX_PIXELS_PER_PAGE, planPages, type PageSelection } from "../formats/pages.ts";
import { inspect, inspectedSpan, pdftoppmArgs, resolutionRuns, type PdfInfo } from "./pdf-inspect.ts";

export type { PdfInfo } from "./pdf-inspect.ts";
import { collectPages, renderInBackground } from "./pdf-stream.ts";
import { deadline, privateDir, tool } from "./poppler.ts";

export { DEFAULT_MAX_PIXELS_PER_PAGE };
const DEFAULT_TIMEOUT_MS = 30_000;
/**
 * Rendered pages a stream lets wait on disk for the consumer before it
 * pauses pdftoppm: 8 A4 pages are 32 MB, where a 100-page PDF rendered
 * ahead of a slow reader would be 400 MB in the temporary folder.
 */
const DEFAULT_PAGES_AHEAD = 8;

/**
 * The PDF: its bytes, or a file on disk that poppler reads where it is. The
 * file is never copied, changed or removed, and must stay until the work is
 * done ({@link OpenedPdf.close}, the end of a stream's loop).
 */
export type PdfSource = Buffer | { path: string };

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
  /**
   * The PDF's page count and the sizes of (at least) the pages to render,
   * when the caller read them before ({@link inspectPdf}): no pdfinfo is run.
   * A job's worker inspects its file of a document once for all its ranges.
   */
  inspected?: PdfInfo;
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
 * A PDF inspected (page count, page sizes), ready to render pages on demand
 * into a private temporary folder: lets a caller start work on page 1 while
 * later pages are still to be rendered. Call {@link close}.
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
  /** Stops any stream's pdftoppm and removes the temporary folder (never a {@link PdfSource}'s file); idempotent. */
  close(): Promise<void>;
}

/**
 * The page count and the sizes of the first `maxPages` pages of a PDF file
 * (pdfinfo), for {@link RasterizeOptions.inspected}; a damaged or encrypted
 * PDF is a 400.
 */
export async function inspectPdf(path: string, opts: { maxPages: number } & PdfInfoOptions): Promise<PdfInfo> {
  const d = deadline(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, opts.signal);
  try {
    return await inspect(await callerFile(path), 1, Math.max(1, opts.maxPages), d);
  } finally {
    d.dispose();
  }
}

/** Number of pages of a PDF (pdfinfo); a damaged or encrypted PDF is a 400. */
export async function pdfPageCount(source: PdfSource, opts: PdfInfoOptions = {}): Promise<number> {
  const dir = await privateDir();
  const d = deadline(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, opts.signal);
  try {
    const file = await pdfFile(source, dir);
    const info = await inspect(file, 1, 1, d);
    return info.pageCount;
  } finally {
    d.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Renders every page of a PDF (or the selected ones) to PNG. Checks the
 * page count against `maxPages` and the selection before rendering anything.
 */
export async function rasterizePdf(source: PdfSource, opts: RasterizeOptions): Promise<RasterizedPdf> {
  // One deadline for the whole job, shared by inspection and rendering.
  const d = deadline(opts.timeoutMs, opts.signal);
  let pdf: OpenedPdf | undefined;
  try {
    pdf = await openPdf(source, { ...opts, signal: d.signal });
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
export async function* streamPdfPages(source: PdfSource, opts: StreamPdfOptions): AsyncGenerator<RenderedPage, void, undefined> {
  const started = Date.now();
  const pdf = await openPdf(source, opts);
  try {
    // What inspection left of the time limit is the rendering's; the stream's clock stops while the consumer lags.
    yield* pdf.streamPages(pdf.selected, { ...opts, timeoutMs: Math.max(1, opts.timeoutMs - (Date.now() - started)) });
  } finally {
    await pdf.close();
  }
}

/**
 * Makes a private temporary folder for the rendered pages (and the PDF, when
 * it is given as bytes) and reads the PDF's page count and page sizes; more
 * pages than `maxPages` (or, with `pages`, more selected, or a page beyond
 * the end) is a 400 and leaves nothing behind.
 * `timeoutMs` bounds the inspection and, by default, each `render` call.
 */
export async function openPdf(source: PdfSource, opts: RasterizeOptions): Promise<OpenedPdf> {
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
    // A jailed pdftoppm can still be dying (and writing its last page) when the jail's first process has exited:
    // rm retries a folder that filled again (ENOTEMPTY) instead of failing.
    await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  };
  try {
    const file = await pdfFile(source, dir);
    let info: PdfInfo;
    if (opts.inspected) info = opts.inspected;
    else {
      const d = deadline(opts.timeoutMs, opts.signal);
      try {
        // Sizes of the pages we may render only: a 100,000-page PDF is refused after one line.
        const span = inspectedSpan(opts.pages, Math.max(1, opts.maxPages));
        info = await inspect(file, 1, span.from === 1 ? span.to : 1, d);
        // A selection further in: its pages' sizes (pdfinfo refuses a first page past the end, which planPages reports).
        if (span.from > 1 && span.from <= info.pageCount) info = await inspect(file, span.from, span.to, d);
      } finally {
        d.dispose();
      }
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
          await tool("pdftoppm", pdftoppmArgs(run, "png", file, prefix), { read: [file], write: [dir] }, rd);
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

/** Pages first..last, for the callers of the two-number forms (none when it is no range: the call then rejects). */
function pageRange(first: number, last: number): number[] {
  return Number.isInteger(first) && Number.isInteger(last) && last >= first ? Array.from({ length: last - first + 1 }, (_, i) => first + i) : [];
}

/** The file poppler reads: the caller's own, where it is, or the bytes written into the private folder `dir`. */
async function pdfFile(source: PdfSource, dir: string): Promise<string> {
  if (!Buffer.isBuffer(source)) return callerFile(source.path);
  const file = join(dir, "document.pdf");
  await writeFile(file, source, { mode: 0o600 });
  return file;
}

/** A caller's PDF file as poppler is given it: absolute, and a regular file. */
async function callerFile(path: string): Promise<string> {
  // Absolute: a relative name starting with "-" would reach poppler as an option.
  const file = resolve(path);
  // A missing file is the caller's mistake, which poppler would report as a damaged PDF (a 400 to the
  // client); a FIFO or a device would keep pdfinfo waiting until the time limit.
  if (!(await stat(file)).isFile()) throw new Error(`${file} is not a regular file`);
  return file;
}
