/**
 * Host side of a job folder: writing the document and job.json in, reading
 * result.json and the pages out, with limits on what is read back.
 */
import { chown, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { FolioError } from "../platform/errors/index.ts";
import { FORMAT_EXTENSIONS, PAGE_DPI } from "../formats/index.ts";
import { formatPages } from "../formats/pages.ts";
import type { JobResult, JobSpec, SandboxInput } from "./interface.ts";
import { NOBODY } from "./oci.ts";

/** Upper bound on what the host reads back from one job's output folder. */
export const DEFAULT_MAX_OUTPUT_BYTES = 512 * 1024 * 1024;

/** Checks the parts of an input that the sandbox program would otherwise reject less clearly. */
export function checkInput(input: SandboxInput): void {
  if (!(input.format in FORMAT_EXTENSIONS)) throw new FolioError("unsupported_format", `cannot convert format ${String(input.format)}`);
  if (!Number.isInteger(input.maxPages) || input.maxPages < 1) throw new FolioError("invalid_request", "maxPages must be a positive integer");
  if (!(input.timeoutMs > 0)) throw new FolioError("invalid_request", "timeoutMs must be positive");
  if (input.document.length === 0) throw new FolioError("conversion_failed", "the document is empty");
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
    ...spec,
    ...(input.traceparent ? { traceparent: input.traceparent } : {}),
  };
  await writeFile(join(jobDir, "job.json"), JSON.stringify(full), { mode: 0o644 });
}

/** Reads `output/result.json`, or undefined when the program wrote none. */
export async function readResult(jobDir: string): Promise<JobResult | undefined> {
  const text = await readFile(join(jobDir, "output", "result.json"), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as JobResult;
  } catch {
    return undefined;
  }
}

/** Reads the pages a successful result names, refusing more than `maxBytes` in total. */
export async function readPages(jobDir: string, pageCount: number, maxBytes = DEFAULT_MAX_OUTPUT_BYTES): Promise<Buffer[]> {
  const pages: Buffer[] = [];
  let total = 0;
  for (let n = 1; n <= pageCount; n++) {
    const path = join(jobDir, "output", `page-${n}.png`);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) throw new FolioError("conversion_failed", `the sandbox reported ${pageCount} pages but page ${n} is missing`);
    total += info.size;
    if (total > maxBytes) throw new FolioError("conversion_failed", `the rendered pages exceed ${maxBytes} bytes`);
    pages.push(await readFile(path));
  }
  return pages;
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
