/**
 * Page rendering, the sandbox program's last step (`converter.ts`): the
 * page count read from the PDF's page tree (`pdfpages.ts`; `pdfinfo` when
 * the PDF is not the simple kind LibreOffice writes); `pdftoppm -r 200` to
 * raw pixels on a pipe, as many at once as the job's CPUs, each page
 * encoded as a PNG by the program (`png.ts`: grey where the page is grey)
 * and written the moment it is ready. A short document's pages go through
 * files instead, its page 1 by the pdftoppm pre-started beside the warm
 * office ({@link startRenderer}; {@link renderPages} says when).
 *
 * Bundled into the sandbox program with `converter.ts`, under its rule on
 * imports.
 */
import { open, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PAGE_DPI } from "../formats/index.ts";
import type { ConverterOptions } from "./converter.ts";
import { JobError } from "./job-error.ts";
import { quickPdfPageCount } from "./pdfpages.ts";
import { PnmSplitter, encodePage, pnmsOfFile, type FileImage, type PageImage, type RawImage } from "./png.ts";
import { runTool, spawnTool, startTool, superviseTool, type StartedTool, type ToolRun } from "./tools.ts";

/**
 * The pages of LibreOffice's PDF: read from the file's page tree
 * (`pdfpages.ts`, no process), or by pdfinfo when the file is not the simple
 * kind LibreOffice writes.
 */
export async function countPages(pdf: string, deadline: number, options: ConverterOptions): Promise<{ pages: number; by: "page tree" | "pdfinfo" }> {
  const quick = await quickPdfPageCount(pdf);
  if (quick !== undefined) return { pages: quick, by: "page tree" };
  const run = await runTool(options.pdfinfoPath ?? "/usr/bin/pdfinfo", [pdf], deadline, options.signal);
  const match = /^Pages:\s+(\d+)\s*$/m.exec(run.output);
  if (run.code !== 0 || !match) throw new JobError("conversion_failed", `pdfinfo could not read LibreOffice's PDF: ${run.output.trim().slice(0, 300)}`);
  const pages = Number(match[1]);
  if (pages < 1) throw new JobError("conversion_failed", "the document has no pages");
  return { pages, by: "pdfinfo" };
}

/**
 * Renders `pages` (ascending page numbers: every page, or a selection's) to
 * raw pixels and encodes each as a PNG the moment its pixels are complete,
 * writing `output/page-K.png` for the K-th of them as soon as it is ready
 * (pages of different workers finish out of order). Up to `workers`
 * workers render consecutive shares of the pages at once, each with one
 * pdftoppm process per run of consecutive page numbers in its share.
 *
 * A short document (at most {@link FILE_RUN_PAGES} pages to render) has its
 * page 1, when asked for and a pre-started pdftoppm waits (`warm`), rendered
 * by that one, and every run written to a file and read once its pdftoppm
 * has exited. A longer one streams PPM through pipes, each paused while two
 * of its pages wait to be encoded, so at most a few raw pages are held in
 * memory; its pre-started pdftoppm is killed unused. The PNG encoding runs
 * on libuv's thread pool beside the renderers.
 */
export async function renderPages(
  pdf: string,
  pages: readonly number[],
  outputDir: string,
  limits: { maxOutputBytes: number; workers: number },
  deadline: number,
  options: ConverterOptions & { scratch: string },
  warm?: WarmRenderer,
): Promise<{ greyPages: number; pngBytes: number; warmRenderer: number }> {
  // Only a short document uses the pre-started pdftoppm and page files (see
  // FILE_RUN_PAGES); one that already ended (it should not) leaves page 1 to the others.
  const short = pages.length <= FILE_RUN_PAGES;
  const useWarm = short && warm !== undefined && pages[0] === 1 && !warm.tool.ended();
  if (!useWarm) warm?.tool.kill();
  const rest = useWarm ? pages.slice(1) : pages;
  const offset = pages.length - rest.length;
  const workers = Math.max(1, Math.min(limits.workers, rest.length));
  const per = Math.ceil(rest.length / workers);
  const shares: PageRun[][] = [];
  for (let from = 0; from < rest.length; from += per) shares.push(pageRuns(rest, from, Math.min(rest.length, from + per), offset));
  const stats = { greyPages: 0, pngBytes: 0 };
  const page = { outputDir, maxOutputBytes: limits.maxOutputBytes, stats };
  // One failure stops the other workers at once.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const stopping = { ...options, signal: stop.signal };
  const work = async (render: () => Promise<void>) => {
    try {
      await render();
    } catch (err) {
      stop.abort();
      throw err;
    }
  };
  try {
    await Promise.all([
      ...(useWarm ? [work(() => renderFileRun({ warm: warm!, pdf }, { first: 1, last: 1, outputs: new Map([[1, 1]]) }, page, deadline, stopping))] : []),
      ...shares.map((runs) =>
        work(async () => {
          for (const run of runs) {
            if (short) await renderFileRun({ pdf, file: join(options.scratch, `pages-${run.first}.ppm`) }, run, page, deadline, stopping);
            else await renderRange(pdf, run, page, deadline, stopping);
          }
        }),
      ),
    ]);
  } catch (err) {
    // A stop caused by the caller's signal is that signal's timeout, not the other worker's error.
    if (options.signal?.aborted) throw new JobError("timeout", "the conversion ran out of time");
    throw err;
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
  }
  return { ...stats, warmRenderer: useWarm ? 1 : 0 };
}

/** Where rendered pages go: the output folder, its byte limit, and the running totals. */
interface PageSink {
  outputDir: string;
  maxOutputBytes: number;
  stats: { greyPages: number; pngBytes: number };
}

/**
 * A document with at most this many pages to render is rendered to files
 * in the sandbox's tmpfs (pdftoppm's stdout) read once pdftoppm has exited,
 * instead of through pipes, and uses the pre-started pdftoppm for page 1:
 * a pipe carries 64 KiB at a time, and each of the 178 round trips of an A4
 * page between pdftoppm and the program (a write, a wake-up, a read)
 * passes through gVisor's sentry, about 230 ms a page under ptrace, against
 * 30-90 ms to read the page's file back, and a process start costs about
 * 190 ms (docs/benchmarks.md). Longer documents keep the pipes, whose pages
 * are encoded while the next ones render, and their `workers` renderers
 * alone: the pre-started one beside them made three renderers on two CPUs,
 * and short file runs within a long document lost that overlap. Both made
 * documents of 4 pages and more up to 19% slower.
 */
const FILE_RUN_PAGES = 3;

/**
 * stdout buffer of pdftoppm, set by preloading coreutils' libstdbuf (what
 * `stdbuf -o` does, without its extra exec): poppler writes a PPM row by
 * row, and a row of an A4 page at 200 DPI (4,962 bytes) is larger than
 * glibc's default 4 KiB buffer, so every row was a write system call of its
 * own: 140,000 for 60 pages, each a round trip through gVisor's sentry under
 * the ptrace platform. With a buffer larger than a page, one write per page
 * or so: 60 pages to raw pixels took 9.9 s in the sandbox, 1.3 s with it
 * (docs/benchmarks/conversion-history.md, "Conversion: fast page images").
 */
const STDOUT_BUFFER_BYTES = 16 * 1024 * 1024;
const LIBSTDBUF = "/usr/libexec/coreutils/libstdbuf.so";

/**
 * Renderers when neither job.json nor the cgroup says how many CPUs there
 * are: each holds a couple of raw pages (11.6 MB each for A4), so a machine
 * with many CPUs must not mean as many renderers.
 */
export const DEFAULT_MAX_WORKERS = 2;

/** CPUs of the cgroup v2 quota (`cpu.max`), when there is one and it is visible (a Kubernetes pod's limit). */
export async function cgroupCpus(): Promise<number | undefined> {
  const text = await readFile("/sys/fs/cgroup/cpu.max", "utf8").catch(() => "");
  const [quota, period] = text.trim().split(/\s+/);
  const cpus = Number(quota) / Number(period);
  return Number.isFinite(cpus) && cpus > 0 ? cpus : undefined;
}

/** Bytes of one raw page at most (an A4 page at 200 DPI is 11.6 MB in RGB); a larger page is refused. */
const MAX_RAW_PAGE_BYTES = 256 * 1024 * 1024;
/** Raw pages a worker may have waiting for their encoding before its pipe is paused. */
const PAGES_IN_FLIGHT = 2;

/**
 * Pages not asked for that one pdftoppm renders (to raw pixels, dropped
 * unencoded) rather than start another for the pages after them: a start
 * (a process, and poppler reading the PDF) takes longer in gVisor than
 * rendering a couple of pages, 20-25 ms each there.
 */
const MAX_SKIPPED_PAGES = 2;

/** Pages `first`…`last` of the document for one pdftoppm; `outputs` maps the wanted ones to their `page-<K>.png`. */
interface PageRun {
  first: number;
  last: number;
  outputs: Map<number, number>;
}

/**
 * Entries `from`…`to - 1` of `pages` as runs of nearly consecutive page
 * numbers (gaps up to {@link MAX_SKIPPED_PAGES}); the entry at `i` is output
 * `offset + i + 1`.
 */
function pageRuns(pages: readonly number[], from: number, to: number, offset = 0): PageRun[] {
  const runs: PageRun[] = [];
  for (let i = from; i < to; i++) {
    const n = pages[i]!;
    let run = runs.at(-1);
    if (!run || n - run.last - 1 > MAX_SKIPPED_PAGES) runs.push((run = { first: n, last: n, outputs: new Map() }));
    run.last = n;
    run.outputs.set(n, offset + i + 1);
  }
  return runs;
}

/** The environment pdftoppm runs with: libstdbuf's large stdout buffer where it exists (see {@link STDOUT_BUFFER_BYTES}). */
async function pdftoppmEnv(options: ConverterOptions): Promise<Record<string, string>> {
  const libstdbuf = options.libstdbufPath ?? LIBSTDBUF;
  // Without libstdbuf (not a Debian system) pdftoppm runs as it is, slower in gVisor.
  return (await stat(libstdbuf).then(() => true, () => false)) ? { LD_PRELOAD: libstdbuf, _STDBUF_O: String(STDOUT_BUFFER_BYTES) } : {};
}

/** A pdftoppm started before its PDF exists, and the file it writes page 1 into. */
export interface WarmRenderer {
  tool: StartedTool;
  file: string;
}

/**
 * Pre-started mode: `pdftoppm -r 200 -f 1 -l 1 -` reads the PDF from its
 * stdin, so it waits there, loaded and linked (in the checkpoint image
 * too), to render page 1 into a file. Starting a process in gVisor (the
 * program's fork, the exec, the dynamic linker's system calls and page
 * faults) took about 190 ms of a one-page document's 600 ms of rendering
 * under ptrace (docs/benchmarks.md). Killed unused when page 1 is not asked
 * for.
 */
export async function startRenderer(scratch: string, options: ConverterOptions): Promise<WarmRenderer> {
  const file = join(scratch, "page-1.ppm");
  const args = ["-r", String(PAGE_DPI), "-f", "1", "-l", "1", "-"];
  return { tool: await withOutputFile(file, async (fd) => startTool(options.pdftoppmPath ?? "/usr/bin/pdftoppm", args, await pdftoppmEnv(options), true, fd)), file };
}

/** Runs `start` with `file` opened for writing (created), closed here once `start` has handed it to a child. */
async function withOutputFile<T>(file: string, start: (fd: number) => Promise<T>): Promise<T> {
  const handle = await open(file, "w", 0o600);
  try {
    return await start(handle.fd);
  } finally {
    await handle.close();
  }
}

/**
 * A run of pages rendered to a file (pdftoppm's stdout: with its large
 * buffer, one write system call a page, where pdftoppm's own files take
 * one per 4 KiB) by a pdftoppm started for it, or by the pre-started one
 * (page 1, given the PDF on its stdin); read back, encoded and removed once
 * pdftoppm has exited.
 */
async function renderFileRun(
  source: { pdf: string; file: string } | { pdf: string; warm: WarmRenderer },
  { first, last, outputs }: PageRun,
  sink: PageSink,
  deadline: number,
  options: ConverterOptions,
): Promise<void> {
  if (deadline - Date.now() <= 0 || options.signal?.aborted) throw new JobError("timeout", "the conversion ran out of time");
  let run: ToolRun;
  let file: string;
  if ("warm" in source) {
    file = source.warm.file;
    const running = superviseTool(source.warm.tool, deadline, options.signal);
    source.warm.tool.child.stdin!.end(await readFile(source.pdf));
    run = await running;
  } else {
    file = source.file;
    const args = ["-r", String(PAGE_DPI), "-f", String(first), "-l", String(last), source.pdf];
    const env = await pdftoppmEnv(options);
    const tool = await withOutputFile(file, async (fd) => startTool(options.pdftoppmPath ?? "/usr/bin/pdftoppm", args, env, false, fd));
    run = await superviseTool(tool, deadline, options.signal);
  }
  if (run.code !== 0) throw new JobError("conversion_failed", `pdftoppm failed: ${run.output.trim().slice(0, 300)}`);
  // The pages are encoded from the file, a band of rows at a time (see png.ts), never read whole.
  const handle = await open(file, "r");
  try {
    let images: FileImage[];
    try {
      images = await pnmsOfFile(handle, MAX_RAW_PAGE_BYTES);
    } catch (err) {
      throw new JobError("conversion_failed", `pages ${first}–${last}: ${(err as Error).message}`);
    }
    if (images.length !== last - first + 1) throw new JobError("conversion_failed", `pdftoppm rendered ${images.length} of pages ${first}–${last}`);
    const writes: Promise<void>[] = [];
    let failure: unknown;
    images.forEach((image, i) => {
      const output = outputs.get(first + i);
      if (output !== undefined) writes.push(writePage(image, output, sink).catch((err: unknown) => void (failure ??= err)));
    });
    await Promise.all(writes);
    if (failure) throw failure;
  } finally {
    await handle.close();
    await rm(file, { force: true });
  }
}

/**
 * One pdftoppm process for a run of pages writing PPM to a pipe, its wanted
 * pages encoded and written as they arrive.
 */
async function renderRange(pdf: string, { first, last, outputs }: PageRun, sink: PageSink, deadline: number, options: ConverterOptions): Promise<void> {
  const splitter = new PnmSplitter(MAX_RAW_PAGE_BYTES);
  const writes: Promise<void>[] = [];
  let next = first;
  let inFlight = 0;
  let failure: unknown;
  const run = spawnTool(
    options.pdftoppmPath ?? "/usr/bin/pdftoppm",
    ["-r", String(PAGE_DPI), "-f", String(first), "-l", String(last), pdf],
    deadline,
    options.signal,
    await pdftoppmEnv(options),
    (child) => {
      // A paused pipe would keep the child's "close" from ever coming: once
      // the range has failed or been stopped, whatever is left is drained.
      const drain = () => child.stdout!.resume();
      const fail = (err: unknown) => {
        failure ??= err;
        child.kill("SIGKILL");
        drain();
      };
      options.signal?.addEventListener("abort", drain, { once: true });
      child.once("close", () => options.signal?.removeEventListener("abort", drain));
      child.stdout!.on("data", (chunk: Buffer) => {
        if (failure) return;
        let images: RawImage[];
        try {
          images = splitter.push(chunk);
        } catch (err) {
          fail(new JobError("conversion_failed", `pages ${first}–${last}: ${(err as Error).message}`));
          return;
        }
        for (const image of images) {
          const page = next++;
          if (page > last) {
            fail(new JobError("conversion_failed", `pdftoppm rendered more pages than ${first}–${last}`));
            return;
          }
          const output = outputs.get(page);
          if (output === undefined) {
            splitter.release(image.pixels);
            continue;
          }
          inFlight++;
          if (inFlight >= PAGES_IN_FLIGHT && !options.signal?.aborted) child.stdout!.pause();
          writes.push(
            writePage(image, output, sink)
              .catch(fail)
              .finally(() => {
                splitter.release(image.pixels);
                inFlight--;
                if (inFlight < PAGES_IN_FLIGHT) child.stdout!.resume();
              }),
          );
        }
      });
    },
  );
  const { code, output } = await run;
  await Promise.all(writes);
  if (failure) throw failure;
  if (code !== 0) throw new JobError("conversion_failed", `pdftoppm failed: ${output.trim().slice(0, 300)}`);
  if (next !== last + 1 || !splitter.atBoundary) throw new JobError("conversion_failed", `pdftoppm rendered ${next - first} of pages ${first}–${last}`);
}

/** Encodes one page (grey when it is) and writes it as the `index`-th page; refuses pages past the output limit. */
async function writePage(image: PageImage, index: number, { outputDir, maxOutputBytes, stats }: PageSink): Promise<void> {
  const { png, grey } = await encodePage(image, { dpi: PAGE_DPI });
  stats.pngBytes += png.length;
  if (grey) stats.greyPages++;
  if (stats.pngBytes > maxOutputBytes) throw new JobError("conversion_failed", `the rendered pages exceed ${maxOutputBytes} bytes`);
  await writeFile(join(outputDir, `page-${index}.png`), png);
}
