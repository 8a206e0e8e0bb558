/**
 * PDF pages to PNG images with poppler (`pdfinfo`, `pdftoppm` from
 * poppler-utils). Everything heavy runs in child processes, so the event loop
 * only moves bytes; the PDF and the rendered pages live in a private
 * temporary folder (mode 0700) that is removed afterwards, whatever happens.
 *
 * Pages are rendered at 200 DPI by default (an A4 page is 1654 × 2339
 * pixels) from the crop box, which is what PDF viewers show. A page whose
 * rendering would exceed `maxPixelsPerPage` (default 40 megapixels, a little
 * above A1 at 200 DPI) is rendered at the highest resolution that fits
 * instead: a tiny PDF with a huge page must not make pdftoppm allocate
 * gigabytes.
 *
 * Errors are {@link FolioError}s: a damaged, non-PDF or password-protected
 * file, or too many pages, is `invalid_request` (the caller sets `param`,
 * which it knows: `url`, `base64`, a chat content part); running out of time
 * is `timeout`; poppler missing is `service_unavailable`. When the caller's
 * signal aborts, the promise rejects with `signal.reason` and the child is
 * killed.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FolioError } from "../platform/errors/index.ts";
import { PAGE_DPI } from "../formats/index.ts";

/** Default pixel budget per page: A1 at 200 DPI (4681 × 6622) fits; A0 is rendered at about 160 DPI. */
export const DEFAULT_MAX_PIXELS_PER_PAGE = 40_000_000;
const DEFAULT_TIMEOUT_MS = 30_000;
/** pdfinfo's output is a few lines per page; anything near this is not poppler talking. */
const MAX_TOOL_OUTPUT_BYTES = 4 * 1024 * 1024;

export interface PdfInfoOptions {
  /** For the pdfinfo run; default 30 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface RasterizeOptions {
  /** Resolution in dots per inch; default 200. */
  dpi?: number;
  /** More pages than this is a 400 (`document has N pages; the limit is M`). */
  maxPages: number;
  /** For the whole job: inspection and every page. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Pages larger than this at `dpi` are rendered at a lower resolution; default 40 MP. */
  maxPixelsPerPage?: number;
}

export interface RasterizedPdf {
  pageCount: number;
  /** PNG images, page 1 first. */
  pages: Buffer[];
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
  readonly pageSizes: readonly PdfPageSize[];
  /**
   * Renders pages `first`..`last` (from 1, inclusive) to PNG, one pdftoppm
   * process per run of pages with the same resolution.
   * @param opts.timeoutMs for this call; default the `timeoutMs` given to {@link openPdf}
   */
  render(first: number, last: number, opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<Buffer[]>;
  /** Removes the temporary folder; idempotent. */
  close(): Promise<void>;
}

/** Number of pages of a PDF (pdfinfo); a damaged or encrypted PDF is a 400. */
export async function pdfPageCount(bytes: Buffer, opts: PdfInfoOptions = {}): Promise<number> {
  const dir = await privateDir();
  try {
    const file = join(dir, "document.pdf");
    await writeFile(file, bytes, { mode: 0o600 });
    const info = await inspect(file, 1, deadline(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, opts.signal));
    return info.pageCount;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Renders every page of a PDF to PNG. Checks the page count against
 * `maxPages` before rendering anything.
 */
export async function rasterizePdf(bytes: Buffer, opts: RasterizeOptions): Promise<RasterizedPdf> {
  // One deadline for the whole job, shared by inspection and rendering.
  const d = deadline(opts.timeoutMs, opts.signal);
  let pdf: OpenedPdf | undefined;
  try {
    pdf = await openPdf(bytes, { ...opts, signal: d.signal });
    // The job's deadline (d) rules; render's own limit is a second later so it never fires first.
    const pages = await pdf.render(1, pdf.pageCount, { signal: d.signal, timeoutMs: Math.max(1, d.remainingMs()) + 1000 });
    return { pageCount: pdf.pageCount, pages };
  } catch (err) {
    throw d.translate(err);
  } finally {
    d.dispose();
    await pdf?.close();
  }
}

/**
 * Writes the PDF to a private temporary folder and reads its page count and
 * page sizes; more pages than `maxPages` is a 400 and leaves nothing behind.
 * `timeoutMs` bounds the inspection and, by default, each `render` call.
 */
export async function openPdf(bytes: Buffer, opts: RasterizeOptions): Promise<OpenedPdf> {
  const dpi = opts.dpi ?? PAGE_DPI;
  if (!(dpi > 0 && dpi <= 1200)) throw new RangeError(`dpi must be in (0, 1200], got ${dpi}`);
  const maxPixels = opts.maxPixelsPerPage ?? DEFAULT_MAX_PIXELS_PER_PAGE;
  const dir = await privateDir();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const file = join(dir, "document.pdf");
    await writeFile(file, bytes, { mode: 0o600 });
    const d = deadline(opts.timeoutMs, opts.signal);
    let info: PdfInfo;
    try {
      // Sizes of the pages we may render only: a 100,000-page PDF is refused after one line.
      info = await inspect(file, Math.max(1, opts.maxPages), d);
    } finally {
      d.dispose();
    }
    if (info.pageCount > opts.maxPages) {
      throw new FolioError("invalid_request", `document has ${info.pageCount} pages; the limit is ${opts.maxPages}`, {
        extra: { page_count: info.pageCount, max_pages: opts.maxPages },
      });
    }
    if (info.pageCount === 0) throw new FolioError("invalid_request", "the PDF has no pages");
    let batch = 0;
    return {
      pageCount: info.pageCount,
      pageSizes: info.sizes,
      close,
      async render(first, last, renderOpts = {}) {
        if (closed) throw new Error("render() after close()");
        if (!Number.isInteger(first) || !Number.isInteger(last) || first < 1 || last < first || last > info.pageCount) {
          throw new RangeError(`pages ${first}..${last} are not within 1..${info.pageCount}`);
        }
        const rd = deadline(renderOpts.timeoutMs ?? opts.timeoutMs, renderOpts.signal ?? opts.signal);
        try {
          const out: Buffer[] = [];
          for (const run of resolutionRuns(info.sizes, first, last, dpi, maxPixels)) {
            const prefix = join(dir, `r${batch++}`);
            await tool("pdftoppm", ["-q", "-cropbox", "-r", String(run.dpi), "-f", String(run.first), "-l", String(run.last), "-png", file, prefix], rd);
            out.push(...(await collectPages(dir, prefix, run.first, run.last)));
          }
          return out;
        } catch (err) {
          throw rd.translate(err);
        } finally {
          rd.dispose();
        }
      },
    };
  } catch (err) {
    await close();
    throw err;
  }
}

// ---------------------------------------------------------------- internals

interface PdfInfo {
  pageCount: number;
  /** Pages 1..min(pageCount, upTo). */
  sizes: PdfPageSize[];
}

async function inspect(file: string, upTo: number, d: Deadline): Promise<PdfInfo> {
  let stdout: string;
  try {
    // -f/-l: per-page sizes; pdfinfo clamps -l to the real page count.
    ({ stdout } = await tool("pdfinfo", ["-f", "1", "-l", String(upTo), file], d));
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
function resolutionRuns(sizes: readonly PdfPageSize[], first: number, last: number, dpi: number, maxPixels: number): ResolutionRun[] {
  const runs: ResolutionRun[] = [];
  for (let n = first; n <= last; n++) {
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

/** pdftoppm writes `<prefix>-<n>.png`, n zero-padded to the document's page-count width. */
async function collectPages(dir: string, prefix: string, first: number, last: number): Promise<Buffer[]> {
  const base = prefix.slice(dir.length + 1) + "-";
  const byPage = new Map<number, string>();
  for (const name of await readdir(dir)) {
    if (name.startsWith(base) && name.endsWith(".png")) byPage.set(Number(name.slice(base.length, -4)), name);
  }
  const pages: Buffer[] = [];
  for (let n = first; n <= last; n++) {
    const name = byPage.get(n);
    // pdftoppm skips a page it cannot render and still exits 0 when others worked.
    if (!name) throw unreadable(`page ${n} could not be rendered`);
    const path = join(dir, name);
    pages.push(await readFile(path));
    await rm(path, { force: true });
  }
  return pages;
}

function privateDir(): Promise<string> {
  // mkdtemp creates the folder with mode 0700.
  return mkdtemp(join(tmpdir(), "folio-pdf-"));
}

/** The caller's signal plus a time limit, and what to throw when either fires. */
interface Deadline {
  signal: AbortSignal;
  remainingMs(): number;
  /** Turns a failure into the error the caller should see. */
  translate(err: unknown): unknown;
  dispose(): void;
}

class TimedOut extends Error {}

function deadline(timeoutMs: number, caller: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  const endsAt = Date.now() + timeoutMs;
  const timer = setTimeout(() => controller.abort(new TimedOut()), timeoutMs);
  const onAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    remainingMs: () => endsAt - Date.now(),
    translate(err) {
      if (caller?.aborted) return caller.reason;
      if (err instanceof TimedOut || controller.signal.reason instanceof TimedOut) {
        return new FolioError("timeout", `rendering the PDF took longer than ${formatSeconds(timeoutMs)}`, { cause: err });
      }
      return err;
    },
    dispose() {
      clearTimeout(timer);
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

/** Runs a poppler tool (no shell); rejects with a FolioError, or with the signal's reason when aborted. */
function tool(cmd: "pdfinfo" | "pdftoppm", args: string[], d: Deadline): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    if (d.signal.aborted) return reject(d.signal.reason);
    execFile(
      cmd,
      args,
      { signal: d.signal, killSignal: "SIGKILL", maxBuffer: MAX_TOOL_OUTPUT_BYTES, encoding: "utf8", windowsHide: true },
      (err: ToolError | null, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        if (d.signal.aborted) return reject(d.signal.reason);
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
  });
}

function firstPopplerError(stderr: string): string {
  return stderr.split("\n").find((l) => /error/i.test(l))?.trim() ?? "poppler could not open it";
}

function unreadable(detail: string, cause?: unknown): FolioError {
  // The detail goes to `cause` (logs), not the message: it can name our temporary paths.
  return new FolioError("invalid_request", "the PDF is damaged or not a PDF and could not be read", { cause: new Error(detail, { cause }) });
}
