/**
 * The conversion that runs inside a sandbox (and, for the `unsandboxed`
 * development backend, directly on the host): one job folder in, PNG pages
 * and `result.json` out.
 *
 * Job folder layout (the host writes the first two, the program the rest):
 *
 *     job.json                 {@link JobSpec}
 *     input/document.<ext>     the document, extension from its format
 *     output/page-<N>.png      N = 1, 2, …: one 200-DPI PNG per page
 *     output/result.json       {@link JobResult}
 *
 * Steps: a fresh copy of the prepared LibreOffice profile, `soffice.bin
 * --convert-to pdf` (not the `soffice` wrapper script: it calls `ls` on its
 * own path, which fails under the runsc on Debian 12), `pdfinfo` for the page
 * count (over the limit is an error, nothing rendered), `pdftoppm -r 200
 * -png`. LibreOffice exits 0 and writes no PDF when it cannot load a
 * document (corrupt, truncated, password-protected): the missing PDF is what
 * marks that case.
 *
 * This module is bundled into the sandbox program: it may import only Node's
 * built-ins and types.
 */
import { spawn } from "node:child_process";
import { copyFile, cp, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ConversionFormat, JobErrorCode, JobResult, JobSpec } from "./interface.ts";
import { runProbe } from "./probe.ts";
import { SOFFICE_BIN, fileUrl } from "./profile.ts";

/** File extension LibreOffice sees for each format (it picks its import filter by it and by content). */
export const FORMAT_EXTENSIONS: Readonly<Record<ConversionFormat, string>> = Object.freeze({
  DOCX: "docx",
  PPTX: "pptx",
  DOC: "doc",
  ODT: "odt",
  RTF: "rtf",
  TXT: "txt",
});

/** Resolution of every rendered page; the spec fixes it. */
export const PAGE_DPI = 200;
/** Default limits when job.json names none. */
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT_BYTES = 512 * 1024 * 1024;
/** Bytes of a tool's stderr kept for an error message. */
const MESSAGE_BYTES = 2000;

export interface ConverterOptions {
  /** Where private scratch folders go (the sandbox's tmpfs). Default `/tmp`. */
  scratchDir?: string;
  sofficePath?: string;
  pdfinfoPath?: string;
  pdftoppmPath?: string;
  /** Aborting kills the running tool; the job ends as `timeout`. */
  signal?: AbortSignal;
}

/** A failure the job reports in result.json (never thrown past {@link runJob}). */
class JobError extends Error {
  constructor(
    readonly code: JobErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Reads and checks `job.json`; throws when the host wrote something unusable. */
export async function readJobSpec(jobDir: string): Promise<JobSpec> {
  const spec = JSON.parse(await readFile(join(jobDir, "job.json"), "utf8")) as Partial<JobSpec>;
  if (!spec.format || !(spec.format in FORMAT_EXTENSIONS)) throw new Error(`job.json: unknown format ${JSON.stringify(spec.format)}`);
  if (spec.dpi !== PAGE_DPI) throw new Error(`job.json: dpi must be ${PAGE_DPI}`);
  if (!Number.isInteger(spec.maxPages) || (spec.maxPages ?? 0) < 1) throw new Error("job.json: maxPages must be a positive integer");
  if (typeof spec.profileDir !== "string" || !spec.profileDir.startsWith("/")) throw new Error("job.json: profileDir must be an absolute path");
  return spec as JobSpec;
}

/**
 * Runs the job in `jobDir` and writes `output/result.json`. Document
 * problems end up in the result, not as exceptions; an exception means the
 * job folder itself is unusable.
 */
export async function runJob(jobDir: string, options: ConverterOptions = {}): Promise<JobResult> {
  const spec = await readJobSpec(jobDir);
  const outputDir = join(jobDir, "output");
  await mkdir(outputDir, { recursive: true });
  let result: JobResult;
  if (spec.probe) {
    result = { ok: true, pageCount: 0, probe: await runProbe(spec.probe) };
  } else {
    result = await convertJob(jobDir, spec, options);
  }
  await writeFile(join(outputDir, "result.json"), JSON.stringify(result));
  return result;
}

async function convertJob(jobDir: string, spec: JobSpec, options: ConverterOptions): Promise<JobResult> {
  const timings: Record<string, number> = {};
  const started = Date.now();
  const deadline = started + (spec.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const scratch = await mkdtemp(join(options.scratchDir ?? "/tmp", "folio-job-"));
  try {
    const lap = (name: string, since: number) => (timings[name] = Date.now() - since);

    let t = Date.now();
    let profile = spec.profileDir;
    if (!spec.profileInPlace) {
      profile = join(scratch, "profile");
      await cp(spec.profileDir, profile, { recursive: true });
    }
    lap("profile", t);

    t = Date.now();
    const document = join(jobDir, "input", `document.${FORMAT_EXTENSIONS[spec.format]}`);
    const pdfDir = join(scratch, "pdf");
    const pdf = await toPdf(document, spec.format, profile, pdfDir, scratch, deadline, options);
    lap("soffice", t);

    t = Date.now();
    const pageCount = await countPages(pdf, deadline, options);
    lap("pdfinfo", t);
    if (pageCount > spec.maxPages) {
      throw new JobError("conversion_failed", `the document has ${pageCount} pages; at most ${spec.maxPages} are converted`);
    }

    t = Date.now();
    await renderPages(pdf, pageCount, join(scratch, "png"), join(jobDir, "output"), spec.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, deadline, options);
    lap("pdftoppm", t);
    timings.total = Date.now() - started;
    return { ok: true, pageCount, timings };
  } catch (err) {
    timings.total = Date.now() - started;
    if (err instanceof JobError) return { ok: false, pageCount: 0, error: { code: err.code, message: err.message }, timings };
    return { ok: false, pageCount: 0, error: { code: "conversion_failed", message: `conversion failed: ${String((err as Error)?.message ?? err)}` }, timings };
  } finally {
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

async function toPdf(
  document: string,
  format: ConversionFormat,
  profile: string,
  pdfDir: string,
  home: string,
  deadline: number,
  options: ConverterOptions,
): Promise<string> {
  await stat(document).catch(() => {
    throw new JobError("conversion_failed", "the job has no input document");
  });
  const args = [
    `-env:UserInstallation=${fileUrl(profile)}`,
    "--headless",
    "--norestore",
    "--nologo",
    "--nodefault",
    "--nolockcheck",
  ];
  // Plain text is UTF-8 (the edge checked it); say so rather than let LibreOffice guess.
  if (format === "TXT") args.push("--infilter=Text (encoded):UTF8,LF,,,");
  args.push("--convert-to", "pdf", "--outdir", pdfDir, document);
  const run = await runTool(options.sofficePath ?? SOFFICE_BIN, args, deadline, options.signal, { HOME: home });
  const pdf = join(pdfDir, "document.pdf");
  const made = await stat(pdf).then(
    (s) => s.size > 0,
    () => false,
  );
  if (made) return pdf;
  if (run.code === 81) throw new JobError("conversion_failed", "LibreOffice asked for a restart: the profile was not prepared");
  const said = run.output.trim().split("\n").filter((l) => l && !l.startsWith("convert ")).join("; ");
  throw new JobError(
    "conversion_failed",
    `LibreOffice could not read the document as ${format} (it may be corrupt, truncated, password-protected or of another format)` +
      (said ? `: ${said.slice(0, 300)}` : ""),
  );
}

async function countPages(pdf: string, deadline: number, options: ConverterOptions): Promise<number> {
  const run = await runTool(options.pdfinfoPath ?? "/usr/bin/pdfinfo", [pdf], deadline, options.signal);
  const match = /^Pages:\s+(\d+)\s*$/m.exec(run.output);
  if (run.code !== 0 || !match) throw new JobError("conversion_failed", `pdfinfo could not read LibreOffice's PDF: ${run.output.trim().slice(0, 300)}`);
  const pages = Number(match[1]);
  if (pages < 1) throw new JobError("conversion_failed", "the document has no pages");
  return pages;
}

async function renderPages(
  pdf: string,
  pageCount: number,
  pngDir: string,
  outputDir: string,
  maxOutputBytes: number,
  deadline: number,
  options: ConverterOptions,
): Promise<void> {
  await mkdir(pngDir, { recursive: true });
  const run = await runTool(options.pdftoppmPath ?? "/usr/bin/pdftoppm", ["-r", String(PAGE_DPI), "-png", pdf, join(pngDir, "page")], deadline, options.signal);
  if (run.code !== 0) throw new JobError("conversion_failed", `pdftoppm failed: ${run.output.trim().slice(0, 300)}`);
  // pdftoppm pads page numbers to the width of the page count (page-01.png); the output is unpadded.
  const pages = new Map<number, string>();
  for (const name of await readdir(pngDir)) {
    const m = /^page-(\d+)\.png$/.exec(name);
    if (m) pages.set(Number(m[1]), name);
  }
  if (pages.size !== pageCount) throw new JobError("conversion_failed", `pdftoppm rendered ${pages.size} of ${pageCount} pages`);
  let total = 0;
  for (let n = 1; n <= pageCount; n++) {
    const name = pages.get(n);
    if (!name) throw new JobError("conversion_failed", `pdftoppm did not render page ${n}`);
    total += (await stat(join(pngDir, name))).size;
    if (total > maxOutputBytes) throw new JobError("conversion_failed", `the rendered pages exceed ${maxOutputBytes} bytes`);
  }
  for (let n = 1; n <= pageCount; n++) {
    await copyFile(join(pngDir, pages.get(n) as string), join(outputDir, `page-${n}.png`));
  }
}

interface ToolRun {
  code: number | null;
  /** stdout and stderr together, the first {@link MESSAGE_BYTES} or so. */
  output: string;
}

/**
 * Runs one tool in its own process group and kills the group when the
 * deadline passes or `signal` aborts (then throws `timeout`).
 */
function runTool(command: string, args: string[], deadline: number, signal: AbortSignal | undefined, env: Record<string, string> = {}): Promise<ToolRun> {
  const remaining = deadline - Date.now();
  if (remaining <= 0 || signal?.aborted) return Promise.reject(new JobError("timeout", "the conversion ran out of time"));
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: { PATH: "/usr/bin:/bin", LANG: "C.UTF-8", SAL_USE_VCLPLUGIN: "svp", ...env },
    });
    let output = "";
    let timedOut = false;
    const keep = (chunk: Buffer) => {
      if (output.length < MESSAGE_BYTES) output += chunk.toString("utf8");
    };
    const kill = () => {
      timedOut = true;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer = setTimeout(kill, remaining);
    signal?.addEventListener("abort", kill, { once: true });
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.once("error", (err) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", kill);
      reject(new JobError("conversion_failed", `could not start ${command}: ${err.message}`));
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", kill);
      if (timedOut) reject(new JobError("timeout", "the conversion ran out of time"));
      else resolve({ code, output });
    });
  });
}
