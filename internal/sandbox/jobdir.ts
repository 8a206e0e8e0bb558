/**
 * Host side of a job folder: writing the document and job.json in, reading
 * result.json and the pages (or the PDF) out, with limits on what is read back.
 *
 * Everything under `output/` was written by the sandbox (owned by `nobody`
 * there), so it is read as hostile: opened without following a symbolic
 * link (`O_NOFOLLOW`; `output/` itself sits in the host's root-owned job
 * folder and cannot be swapped), without blocking on a FIFO, checked on the
 * open descriptor (a regular file, within the bound) and read up to the size
 * checked, never more: a file that grows or shrinks meanwhile is refused
 * ({@link readSandboxFile}).
 */
import { constants } from "node:fs";
import { chown, mkdir, open, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FolioError } from "../platform/errors/index.ts";
import { FORMAT_EXTENSIONS, PAGE_DPI } from "../formats/index.ts";
import { formatPages } from "../formats/pages.ts";
import type { JobResult, JobSpec, SandboxInput, SandboxOutput } from "./interface.ts";
import { NOBODY } from "./oci.ts";

/** Upper bound on what the host reads back from one job's output folder. */
export const DEFAULT_MAX_OUTPUT_BYTES = 512 * 1024 * 1024;
/**
 * Largest result.json read back. The largest real one is a probe's report
 * (a few folder listings, a few KiB); a conversion's is under 1 KiB.
 */
export const MAX_RESULT_BYTES = 1024 * 1024;

/** Why {@link readSandboxFile} refused a file. */
export type RefusedFile = "not_regular" | "too_large" | "changed";

/**
 * A sandbox's file that the host refuses to read: not a regular file (a
 * symbolic link, a FIFO, a folder), over its bound, or changed while read.
 * The message names neither the host path nor anything the sandbox chose.
 */
export class SandboxFileRefused extends FolioError {
  constructor(
    readonly reason: RefusedFile,
    what: string,
    limit: number,
  ) {
    const why = { not_regular: "is not a regular file", too_large: `is larger than ${limit} bytes`, changed: "changed while it was read" }[reason];
    super("conversion_failed", `the sandbox's ${what} ${why}`);
  }
}

/**
 * Reads a file the sandbox wrote, at most `maxBytes`; undefined when there
 * is none. Opened with O_NOFOLLOW and O_NONBLOCK (a FIFO planted in its
 * place must not stall the host), size-checked on the open descriptor, and
 * read up to the size checked: one more byte there means it grew meanwhile.
 * `what` names it in the refusal (e.g. "result.json", "page 3").
 */
export async function readSandboxFile(path: string, maxBytes: number, what: string): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    // ELOOP: the last component is a symbolic link; ENXIO: a socket.
    if (code === "ELOOP" || code === "ENXIO") throw new SandboxFileRefused("not_regular", what, maxBytes);
    throw err;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new SandboxFileRefused("not_regular", what, maxBytes);
    if (info.size > maxBytes) throw new SandboxFileRefused("too_large", what, maxBytes);
    const bytes = Buffer.alloc(info.size);
    let got = 0;
    while (got < bytes.length) {
      const { bytesRead } = await handle.read(bytes, got, bytes.length - got, got);
      if (bytesRead === 0) throw new SandboxFileRefused("changed", what, maxBytes);
      got += bytesRead;
    }
    const { bytesRead: more } = await handle.read(Buffer.alloc(1), 0, 1, got);
    if (more > 0) throw new SandboxFileRefused("changed", what, maxBytes);
    return bytes;
  } finally {
    await handle.close();
  }
}

/** Checks the parts of an input that the sandbox program would otherwise reject less clearly. */
export function checkInput(input: SandboxInput): void {
  if (!(input.format in FORMAT_EXTENSIONS)) throw new FolioError("unsupported_format", `cannot convert format ${String(input.format)}`);
  if (!Number.isInteger(input.maxPages) || input.maxPages < 1) throw new FolioError("invalid_request", "maxPages must be a positive integer");
  if (!(input.timeoutMs > 0)) throw new FolioError("invalid_request", "timeoutMs must be positive");
  if (input.document.length === 0) throw new FolioError("conversion_failed", "the document is empty");
  if (input.output !== undefined && input.output !== "pages" && input.output !== "pdf") throw new FolioError("invalid_request", `unknown output ${String(input.output)}`);
  if (input.output === "pdf" && input.pages) throw new FolioError("invalid_request", "a page selection cannot be combined with output pdf (the PDF holds every page)", { param: "pages" });
}

/**
 * Writes `input/document.<ext>` and `job.json` into `jobDir` and makes
 * `output/` writable by `nobody` (the sandbox's user) when `chownOutput`.
 */
export async function writeJob(
  jobDir: string,
  input: SandboxInput,
  spec: Omit<JobSpec, "format" | "dpi" | "maxPages" | "pages">,
  options: { chownOutput: boolean },
): Promise<void> {
  await mkdir(join(jobDir, "input"), { recursive: true, mode: 0o755 });
  await mkdir(join(jobDir, "output"), { recursive: true, mode: 0o700 });
  if (options.chownOutput) await chown(join(jobDir, "output"), NOBODY, NOBODY);
  await writeFile(join(jobDir, "input", `document.${FORMAT_EXTENSIONS[input.format]}`), input.document, { mode: 0o644 });
  const full: JobSpec = {
    format: input.format,
    dpi: PAGE_DPI,
    maxPages: input.maxPages,
    ...(input.pages ? { pages: formatPages(input.pages) } : {}),
    ...(input.output === "pdf" ? { output: "pdf" as const } : {}),
    ...spec,
    ...(input.traceparent ? { traceparent: input.traceparent } : {}),
  };
  await writeFile(join(jobDir, "job.json"), JSON.stringify(full), { mode: 0o644 });
}

/**
 * Reads `output/result.json`, or undefined when the program wrote none (or
 * not as JSON). Throws {@link SandboxFileRefused} when the file is there but
 * not one to read.
 */
export async function readResult(jobDir: string): Promise<JobResult | undefined> {
  const bytes = await readSandboxFile(join(jobDir, "output", "result.json"), MAX_RESULT_BYTES, "result.json");
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(bytes.toString("utf8")) as JobResult;
  } catch {
    return undefined;
  }
}

/** Reads the pages a successful result names, refusing more than `maxBytes` in total. */
export async function readPages(jobDir: string, pageCount: number, maxBytes = DEFAULT_MAX_OUTPUT_BYTES): Promise<Buffer[]> {
  const pages: Buffer[] = [];
  let total = 0;
  for (let n = 1; n <= pageCount; n++) {
    // Each page gets what the pages before it left of the bound.
    const page = await readSandboxFile(join(jobDir, "output", `page-${n}.png`), maxBytes - total, `page ${n}`).catch((err: unknown) => {
      if (err instanceof SandboxFileRefused && err.reason === "too_large") throw new FolioError("conversion_failed", `the rendered pages exceed ${maxBytes} bytes`);
      throw err;
    });
    if (!page) throw new FolioError("conversion_failed", `the sandbox reported ${pageCount} pages but page ${n} is missing`);
    total += page.length;
    pages.push(page);
  }
  return pages;
}

/** A PDF starts with this (ISO 32000-1 7.5.2; readers allow up to 1 KiB of junk before it, LibreOffice writes none). */
const PDF_HEADER = Buffer.from("%PDF-");

/**
 * What a successful result hands back, read from `jobDir` and checked
 * against what was asked (`output`, `maxPages`): the pages, or with output
 * `pdf` the document's PDF (`output/document.pdf`, a regular file of at most
 * `maxBytes` starting with `%PDF-`) and its page count. Every backend reads
 * a finished job through this.
 */
export async function readOutput(
  jobDir: string,
  result: JobResult,
  asked: { output?: SandboxOutput | undefined; maxPages: number },
  maxBytes = DEFAULT_MAX_OUTPUT_BYTES,
): Promise<{ pages: Buffer[]; pageCount: number; documentPageCount: number; pdf?: Buffer }> {
  if (asked.output !== "pdf") {
    if (result.pdf) throw new FolioError("conversion_failed", "the sandbox returned a PDF where pages were asked for");
    const { pageCount, documentPageCount } = checkedPageCount(result, asked.maxPages);
    return { pages: await readPages(jobDir, pageCount, maxBytes), pageCount, documentPageCount };
  }
  const of = result.documentPageCount;
  if (result.pdf !== true || result.pageCount !== 0 || !Number.isInteger(of) || of! < 1 || of! > asked.maxPages) {
    throw new FolioError("conversion_failed", `the sandbox reported an impossible PDF result (${String(of)} pages, ${String(result.pageCount)} rendered)`);
  }
  const pdf = await readSandboxFile(join(jobDir, "output", "document.pdf"), maxBytes, "PDF");
  if (!pdf) throw new FolioError("conversion_failed", "the sandbox reported a PDF but wrote none");
  if (!pdf.subarray(0, PDF_HEADER.length).equals(PDF_HEADER)) throw new FolioError("conversion_failed", "the sandbox's PDF does not start like a PDF");
  return { pages: [], pageCount: 0, documentPageCount: of!, pdf };
}

/** Turns a failed result into the FolioError the caller sees (the message is the sandbox's, shortened). */
export function resultError(result: JobResult): FolioError {
  return jobError(result.error?.code, typeof result.error?.message === "string" ? result.error.message : undefined);
}

/**
 * The FolioError for a job error code and message as a sandbox reported them
 * (in result.json, or through the broker): unknown codes are
 * `conversion_failed`.
 */
export function jobError(code: string | undefined, message: string | undefined): FolioError {
  const text = message ? message.slice(0, 500) : "the conversion failed";
  if (code === "invalid_pages") return new FolioError("invalid_request", text, { param: "pages" });
  // More pages than the limit is the same 400 whatever the document (a PDF's: documents/pdf.ts).
  if (code === "over_limit") return new FolioError("invalid_request", text);
  return new FolioError(code === "timeout" ? "timeout" : "conversion_failed", text);
}

/**
 * The page counts of a successful result (pages converted, pages of the
 * document), checked against the request: the sandbox's output is as
 * untrusted as the document that ran in it. The conversion service checks
 * them against the selection.
 */
export function checkedPageCount(result: JobResult, maxPages: number): { pageCount: number; documentPageCount: number } {
  const n = result.pageCount;
  const of = result.documentPageCount ?? n;
  if (!Number.isInteger(n) || n < 1 || n > maxPages || !Number.isInteger(of) || of < n) {
    throw new FolioError("conversion_failed", `the sandbox reported an impossible page count (${String(n)} of ${String(of)})`);
  }
  return { pageCount: n, documentPageCount: of };
}
