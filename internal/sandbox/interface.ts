/**
 * A sandbox backend converts one office document into 200-DPI PNG pages in
 * an isolated, single-use sandbox. Backends (`runsc`, `kubernetes`,
 * `unsandboxed`) differ only in how the sandbox is made; the program inside
 * it (`cmd/sandbox`, {@link runJob}) is the same for all of them.
 *
 * Errors are {@link FolioError}s: `conversion_failed` (the document could not
 * be converted, with the sandbox's message), `timeout` (the wall-clock limit
 * passed and the sandbox was killed), `internal_error` (the sandbox itself
 * could not be run).
 */
import type { ConversionFormat } from "../formats/index.ts";
import type { PageSelection } from "../formats/pages.ts";

export type { ConversionFormat, PageSelection };

export interface SandboxInput {
  /** The document's bytes, exactly as received. */
  document: Buffer;
  /** What the bytes were sniffed to be; decides the file extension LibreOffice sees. */
  format: ConversionFormat;
  /**
   * More pages than this is `conversion_failed` (nothing is rendered); with
   * `pages`, more selected pages than this is `invalid_request`.
   */
  maxPages: number;
  /**
   * Only these pages are rendered (a page beyond the document's end is
   * `invalid_request`, param `pages`); absent: every page.
   */
  pages?: PageSelection;
  /**
   * What comes back: `pages` (the default), one PNG per page; `pdf`, the PDF
   * LibreOffice renders, with no page rendered (a durable job reads it like a
   * PDF it was sent, a few pages at a time: docs/jobs.md). With `pdf`,
   * `maxPages` bounds the document's pages and `pages` must be absent.
   */
  output?: SandboxOutput;
  /** Wall-clock limit for the whole sandbox, start to exit. */
  timeoutMs: number;
  /** W3C trace context of the caller, handed to the sandbox program. */
  traceparent?: string;
}

export type SandboxOutput = "pages" | "pdf";

export interface SandboxResult {
  /** One PNG per page converted (every page, or the selected ones), in document order, 200 DPI (the pHYs chunk says so); none with output `pdf`. */
  pages: Buffer[];
  /** Pages converted: `pages.length` (0 with output `pdf`). */
  pageCount: number;
  /** With output `pdf`: the document as LibreOffice rendered it, checked to start like a PDF and to fit the output limit. */
  pdf?: Buffer;
  /** The document's pages (what the numbers of a selection's pages follow from). */
  documentPageCount: number;
  /** Wall time from the sandbox's start to its exit: what is billed. */
  computeMillis: number;
}

export interface SandboxBackend {
  /**
   * Converts one document in a fresh sandbox that is destroyed afterwards.
   * Aborting `signal` kills the sandbox and rejects with the signal's reason.
   */
  convert(input: SandboxInput, signal?: AbortSignal): Promise<SandboxResult>;
}

/**
 * Codes the sandbox program reports in `result.json`; `invalid_pages`: the
 * selection asks for pages the document does not have, or more than the
 * limit (the caller's mistake, a 400 naming `pages`); `over_limit`: the
 * document has more pages than the limit and no selection was sent (a 400,
 * as for a PDF: docs/errors.md).
 */
export type JobErrorCode = "conversion_failed" | "timeout" | "invalid_pages" | "over_limit";

/**
 * `job.json`: what the host asks of the sandbox program. Paths are as the
 * program sees them (inside the sandbox).
 */
export interface JobSpec {
  format: ConversionFormat;
  /** Always 200 today; carried so the program has no hidden constant. */
  dpi: number;
  maxPages: number;
  /** Only these pages: the canonical text of the selection ("1-20,25,30-"); absent: every page. */
  pages?: string;
  /** `pdf`: write `output/document.pdf` (LibreOffice's PDF) instead of rendering pages; never with `pages`. Absent: pages. */
  output?: SandboxOutput;
  /**
   * A prepared LibreOffice profile (see `prepareProfile`). The program copies
   * it to a private folder and uses the copy, unless `profileInPlace` says
   * this folder already is a fresh copy made for this job alone.
   */
  profileDir: string;
  profileInPlace?: boolean;
  /** Milliseconds LibreOffice and poppler may take in total inside the program. */
  timeoutMs?: number;
  /** Largest total size of the PNG pages; past it the job fails. */
  maxOutputBytes?: number;
  /**
   * CPUs the sandbox may use (its CPU limit): at most this many pdftoppm
   * processes (its whole part, at least one) render pages at once. Default:
   * the cgroup's CPU quota when the program can read it, else the CPUs it
   * sees, at most 2 (under gVisor those are the host's, whatever the quota,
   * hence this field).
   */
  cpus?: number;
  traceparent?: string;
  /**
   * Test-only probe: report what the sandbox can see, write and reach instead
   * of converting. Never set from a request; see `probe.ts`.
   */
  probe?: ProbeSpec;
}

export interface ProbeSpec {
  /** Paths whose existence/readability is reported. */
  read: string[];
  /** Paths where writing a small marker file is attempted (and removed again). */
  write: string[];
  /** TCP endpoints a connection is attempted to (nothing is sent). */
  connect: { host: string; port: number }[];
}

export interface ProbeReport {
  uid: number;
  gid: number;
  read: { path: string; visible: boolean; entries?: string[]; error?: string }[];
  write: { path: string; written: boolean; error?: string }[];
  connect: { host: string; port: number; connected: boolean; error?: string }[];
}

/** `output/result.json`: what the sandbox program reports. */
export interface JobResult {
  ok: boolean;
  /**
   * Pages converted, written as `output/page-1.png` … `page-<pageCount>.png`
   * in document order (with a selection, the k-th selected page is page-k).
   */
  pageCount: number;
  /** The document's pages, when known (absent: `pageCount`, every page was converted). */
  documentPageCount?: number;
  /** True when the job asked for output `pdf` and `output/document.pdf` was written (then `pageCount` is 0). */
  pdf?: boolean;
  error?: { code: JobErrorCode; message: string };
  /** Milliseconds spent in each step inside the sandbox (for benchmarks and logs). */
  timings?: Record<string, number>;
  probe?: ProbeReport;
  /**
   * Set by a program restored from a checkpoint: what it made after the
   * restore, which must differ between sandboxes restored from one image
   * (the host logs it; tests compare it).
   */
  restored?: { scratch: string; random: number };
}
