/**
 * The conversion that runs inside a sandbox (and, for the `unsandboxed`
 * development backend, directly on the host): one job folder in, PNG pages
 * and `result.json` out.
 *
 * Job folder layout (the host writes the first two, the program the rest):
 *
 *     job.json                 {@link JobSpec}
 *     input/document.<ext>     the document, extension from its format
 *     output/page-<N>.png      N = 1, 2, …: one 200-DPI PNG per page converted
 *                              (with a selection, page-N is its N-th page)
 *     output/document.pdf      with output `pdf` instead of the pages: the PDF
 *                              LibreOffice wrote, every page of it
 *     output/result.json       {@link JobResult}
 *
 * Steps: a fresh copy of the prepared LibreOffice profile; for plain text, a
 * UTF-8 copy of the document (it may come in UTF-16, Windows-1252, …:
 * `readText`); `soffice.bin --convert-to pdf` (not the `soffice` wrapper
 * script: it calls `ls` on its own path, which fails under the runsc on
 * Debian 12); the page count read from the PDF's page tree (`pdfpages.ts`;
 * `pdfinfo` when the PDF is not the simple kind LibreOffice writes), checked
 * against the limit and the job's page selection (nothing rendered when it
 * fails); `pdftoppm -r 200` to raw pixels on a pipe, as many at
 * once as the job's CPUs, each page encoded as a PNG by the program
 * (`png.ts`: grey where the page is grey) and written the moment it is
 * ready. LibreOffice exits 0 and writes no PDF when it cannot load a
 * document (corrupt, truncated, password-protected): the missing PDF is what
 * marks that case.
 *
 * Pre-started mode: when the job folder holds `prestart.json`
 * ({@link PrestartSpec}) instead of `job.json`, the sandbox was started before
 * its document existed. The program then copies the profile, starts
 * LibreOffice (headless, with an empty Writer document so that it outlives
 * a conversion) and waits for the host to hand the job in (a line on stdin,
 * by default); the conversion is then sent to the running LibreOffice over
 * its own single-instance pipe ({@link officeRequest}) instead of starting
 * it. Still one document per program, and LibreOffice is killed afterwards.
 * A sandbox restored from a checkpoint of this waiting state is handed its
 * job by a signal instead ({@link HANDIN_SIGNAL}), and reseeds what its
 * image fixed (`reseed.ts`) before it converts; the one that is
 * checkpointed first runs the warm-up conversions (`warmup.ts`), so every
 * restored sandbox converts with a warm LibreOffice.
 *
 * This module is bundled into the sandbox program: it may import only Node's
 * built-ins, types, its own folder's Node-only modules (`png.ts`, `probe.ts`,
 * `profile.ts`, `pdfpages.ts`, `reseed.ts`, `warmup.ts`) and the dependency-free format table and page
 * selections (`internal/formats`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, mkdir, mkdtemp, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { createConnection, type Socket } from "node:net";
import { basename, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { FORMAT_EXTENSIONS, PAGE_DPI, readText, type ConversionFormat } from "../formats/index.ts";
import { parsePages, planPages } from "../formats/pages.ts";
import type { JobErrorCode, JobResult, JobSpec } from "./interface.ts";
import { quickPdfPageCount } from "./pdfpages.ts";
import { PnmSplitter, encodePage, pnmsOfFile, type FileImage, type PageImage, type RawImage } from "./png.ts";
import { runProbe } from "./probe.ts";
import { SEED_BYTES, reseedMathRandom } from "./reseed.ts";
import { SOFFICE_BIN, fileUrl } from "./profile.ts";
import { WARM_UP_STEPS, warmUpSources } from "./warmup.ts";

/** Default limits when job.json names none. */
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT_BYTES = 512 * 1024 * 1024;
/** Bytes of a tool's stderr kept for an error message. */
const MESSAGE_BYTES = 2000;

/**
 * glibc malloc settings for the tools: allocations under 256 MiB come from
 * the heap (not a mapping of their own), and the heap is not trimmed until
 * 256 MiB of it are free. At start LibreOffice (headless, svp) allocates,
 * clears and frees large pixel buffers over and over; with glibc's defaults
 * every round goes through mmap/munmap or a heap trim, so the pages are
 * faulted in afresh each time: about 293,000 page faults per start, against
 * 47,000 with these settings (LibreOffice 7.4, any document; 0.81 → 0.49 s
 * on the host). Under gVisor's ptrace platform a page fault is a round trip
 * through the sandbox kernel, so there it was the largest single cost of a
 * conversion (docs/benchmarks.md). Either setting alone does not help. The
 * processes live for one document, so keeping their peak heap (about 50 MB
 * more) costs nothing.
 */
export const MALLOC_ENV = Object.freeze({ MALLOC_MMAP_THRESHOLD_: String(256 * 1024 * 1024), MALLOC_TRIM_THRESHOLD_: String(256 * 1024 * 1024) });

/** Name of the file that puts the program into pre-started mode. */
export const PRESTART_FILE = "prestart.json";
/** Line the program writes on stdout in pre-started mode once LibreOffice listens. */
export const READY_LINE = "folio-sandbox-ready";
/**
 * How long a pre-started LibreOffice may take to start (0.5 s on the host,
 * about 1.5 s under gVisor). Past it the document gets a LibreOffice of its
 * own.
 */
const OFFICE_START_MS = 60_000;
/** Poll interval while waiting for LibreOffice's pipe to appear. */
const OFFICE_POLL_MS = 25;

/**
 * `prestart.json`: written by the host into the job folder of a sandbox that
 * starts before its document exists (then without job.json). Paths are as
 * the program sees them.
 */
export interface PrestartSpec {
  /** The prepared LibreOffice profile; the program copies it and starts LibreOffice on the copy. */
  profileDir: string;
  /**
   * How the job is handed in: `stdin` (the default), a line on stdin;
   * `signal`, {@link HANDIN_SIGNAL} once {@link HANDIN_FILE} is in the job
   * folder. A sandbox restored from a checkpoint (made while the program
   * waited here) needs `signal`: the stdin of a restored sandbox never
   * becomes readable.
   */
  handIn?: "stdin" | "signal";
  /**
   * Run the warm-up conversions (`warmup.ts`) once LibreOffice listens and
   * before saying it is ready: for the sandbox that is checkpointed, so
   * that every sandbox restored from its image converts with a warm
   * LibreOffice.
   */
  warmUp?: boolean;
}

/** The file the host writes into the job folder before it signals the hand-in ({@link PrestartSpec.handIn} `signal`). */
export const HANDIN_FILE = "handin.json";
/** The signal that hands the job in (`runsc kill ID SIGUSR2`); SIGUSR1 would start Node's inspector. */
export const HANDIN_SIGNAL = "SIGUSR2";

/**
 * `handin.json`: written by the host (atomically: written beside, then
 * renamed) once job.json and the document are in place.
 */
export interface HandInFile {
  /** {@link SEED_BYTES} random bytes in hex, fresh from the host: `Math.random` is reseeded from them. */
  seed: string;
}

export interface ConverterOptions {
  /** Where private scratch folders go (the sandbox's tmpfs). Default `/tmp`. */
  scratchDir?: string;
  sofficePath?: string;
  pdfinfoPath?: string;
  pdftoppmPath?: string;
  /** coreutils' libstdbuf, preloaded to give pdftoppm a large stdout buffer; skipped when it does not exist. */
  libstdbufPath?: string;
  /** Aborting kills the running tool; the job ends as `timeout`. */
  signal?: AbortSignal;
  /**
   * Pre-started mode: resolves true once the host has written `job.json`
   * and the document, false when it never will (the program then exits
   * without a result). Default: true on a line on stdin, false when stdin
   * ends. `wake` is what the host's wake-up of a restored sandbox does
   * (start the page-1 pdftoppm).
   */
  handIn?: (wake: () => void) => Promise<boolean>;
  /** Pre-started mode: called once LibreOffice listens. Default: writes {@link READY_LINE} on stdout. */
  onReady?: () => void;
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
  if (spec.cpus !== undefined && !(typeof spec.cpus === "number" && spec.cpus > 0 && spec.cpus <= 256)) throw new Error("job.json: cpus must be a number above 0, at most 256");
  if (spec.output !== undefined && spec.output !== "pages" && spec.output !== "pdf") throw new Error(`job.json: unknown output ${JSON.stringify(spec.output)}`);
  if (spec.output === "pdf" && spec.pages !== undefined) throw new Error("job.json: pages cannot be combined with output pdf");
  if (spec.pages !== undefined) {
    const parsed = typeof spec.pages === "string" ? parsePages(spec.pages) : undefined;
    if (!parsed?.ok) throw new Error(`job.json: pages: ${parsed?.problem ?? "must be a string"}`);
  }
  return spec as JobSpec;
}

/**
 * Runs the job in `jobDir` and writes `output/result.json`. Document
 * problems end up in the result, not as exceptions; an exception means the
 * job folder itself is unusable.
 */
export async function runJob(jobDir: string, options: ConverterOptions = {}): Promise<JobResult> {
  const prestart = await readPrestartSpec(jobDir);
  if (prestart) return runPrestartedJob(jobDir, prestart, options);
  const spec = await readJobSpec(jobDir);
  const outputDir = join(jobDir, "output");
  await mkdir(outputDir, { recursive: true });
  let result: JobResult;
  if (spec.probe) {
    result = { ok: true, pageCount: 0, probe: await runProbe(spec.probe) };
  } else {
    result = await convertJob(jobDir, spec, options);
  }
  await writeResult(outputDir, result);
  return result;
}

/**
 * Writes `result.json` whole or not at all (written beside, then renamed):
 * the host may take the result the moment the file is there, before the
 * sandbox has ended (runsc.ts). It comes after every page.
 */
async function writeResult(outputDir: string, result: JobResult): Promise<void> {
  const beside = join(outputDir, ".result.json");
  await writeFile(beside, JSON.stringify(result));
  await rename(beside, join(outputDir, "result.json"));
}

/** Reads `prestart.json` when the job folder has one. */
async function readPrestartSpec(jobDir: string): Promise<PrestartSpec | undefined> {
  const text = await readFile(join(jobDir, PRESTART_FILE), "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  if (text === undefined) return undefined;
  const spec = JSON.parse(text) as Partial<PrestartSpec>;
  if (typeof spec.profileDir !== "string" || !spec.profileDir.startsWith("/")) throw new Error(`${PRESTART_FILE}: profileDir must be an absolute path`);
  if (spec.handIn !== undefined && spec.handIn !== "stdin" && spec.handIn !== "signal") throw new Error(`${PRESTART_FILE}: handIn must be "stdin" or "signal"`);
  if (spec.warmUp !== undefined && typeof spec.warmUp !== "boolean") throw new Error(`${PRESTART_FILE}: warmUp must be a boolean`);
  return spec as PrestartSpec;
}

/**
 * Pre-started mode: LibreOffice is started before the job exists, then the
 * job is converted exactly as {@link convertJob} does, through the running
 * LibreOffice. The time limit counts from the hand-in.
 */
async function runPrestartedJob(jobDir: string, prestart: PrestartSpec, options: ConverterOptions): Promise<JobResult> {
  const scratch = await mkdtemp(join(options.scratchDir ?? "/tmp", "folio-job-"));
  let office: WarmOffice | undefined;
  let renderer: Promise<WarmRenderer | undefined> | undefined;
  try {
    const profile = join(scratch, "profile");
    await cp(prestart.profileDir, profile, { recursive: true });
    office = startOffice(profile, scratch, options);
    // A restored sandbox's pdftoppm is started once the host says the
    // restore is done (the hand-in signal without its file): one kept in
    // the checkpoint image renders slower after the restore than one
    // started then (docs/benchmarks/conversion-history.md, "Page images in bands").
    // A sandbox to be checkpointed holds a connection LibreOffice has
    // greeted, so that its request thread waits in a read, not in accept():
    // an accept() under way when the sandbox is checkpointed fails after
    // the restore, and LibreOffice then sleeps a second before it accepts
    // again (PipeIpcThread::execute), which every document handed to a
    // sandbox in its first second waited for. The connection is let go
    // when the host wakes the sandbox or hands the job in; LibreOffice
    // reads the end of it and goes back to accept() at once.
    let held: Promise<Socket | undefined> | undefined;
    const letGo = () => void held?.then((socket) => socket?.destroy());
    const wake = () => {
      letGo();
      renderer ??= startRenderer(scratch, options).catch(() => undefined);
    };
    if (prestart.handIn !== "signal") wake();
    const warm = office;
    // Warm-up conversions done (for the result's timings), when asked for.
    let warmedUp: number | undefined;
    void office.listening
      .then(async (socket) => {
        if (!socket || !prestart.warmUp) return socket;
        warmedUp = await warmUpOffice(warm, socket, scratch, options);
        return warmedUp === undefined ? undefined : socket;
      })
      .then(async (socket) => {
        if (!socket) return;
        if (prestart.handIn === "signal") await (held = holdOffice(socket, Date.now() + OFFICE_START_MS));
        (options.onReady ?? (() => process.stdout.write(`${READY_LINE}\n`)))();
      });
    const handedIn = await (options.handIn ?? (prestart.handIn === "signal" ? () => signalHandIn(jobDir, wake) : stdinHandIn))(wake);
    letGo();
    if (!handedIn) return { ok: false, pageCount: 0, error: { code: "conversion_failed", message: "no job was handed in" } };
    if (prestart.handIn === "signal") await reseed(jobDir);
    const spec = await readJobSpec(jobDir);
    const outputDir = join(jobDir, "output");
    await mkdir(outputDir, { recursive: true });
    // The job's own files go into a folder made after the hand-in: its name
    // is fresh even in a sandbox restored from a checkpoint.
    const jobScratch = await mkdtemp(join(scratch, "job-"));
    // Drawn before the conversion, whose own draws (if any) vary from run to run.
    const restored = prestart.handIn === "signal" ? { scratch: basename(jobScratch), random: Math.random() } : undefined;
    const result: JobResult = spec.probe
      ? { ok: true, pageCount: 0, probe: await runProbe(spec.probe) }
      : await convertJob(jobDir, spec, options, { scratch: jobScratch, profile, office, renderer });
    if (restored) result.restored = restored;
    // How many warm-up conversions the LibreOffice that converted had run (in a restored sandbox: before the checkpoint).
    if (warmedUp !== undefined) result.timings = { ...result.timings, warmUp: warmedUp };
    // The host takes the result, and reads the output folder, the moment
    // result.json is there: nothing that has read the document may still
    // run (and write) by then.
    await office.stop();
    await (await renderer)?.tool.stop();
    await writeResult(outputDir, result);
    return result;
  } finally {
    office?.kill();
    void renderer?.then((started) => started?.tool.kill());
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * The hand-in of a sandbox restored from a checkpoint: {@link HANDIN_SIGNAL}
 * with {@link HANDIN_FILE} in the job folder (files the host makes after the
 * restore are seen: gVisor revalidates the job folder's bind mount). The
 * handler is in place before LibreOffice is ready, so before any
 * checkpoint. Waiting costs nothing; looking for the file every 5 ms cost
 * an idle sandbox 14% of a CPU under ptrace. The signal without the file
 * is the host's word that the restore is done (`onWake`). Never false: a
 * sandbox that is not used is killed.
 */
function signalHandIn(jobDir: string, onWake: () => void): Promise<boolean> {
  const file = join(jobDir, HANDIN_FILE);
  // Signals after the hand-in (a late wake-up) are ignored, not the default (the end of the program).
  process.on(HANDIN_SIGNAL, () => undefined);
  return new Promise((resolve) => {
    const check = () =>
      void stat(file).then(
        () => {
          process.off(HANDIN_SIGNAL, check);
          resolve(true);
        },
        () => onWake(),
      );
    process.on(HANDIN_SIGNAL, check);
  });
}

/** Reseeds what the image fixed and can be reseeded, from the host's seed in {@link HANDIN_FILE}. */
async function reseed(jobDir: string): Promise<void> {
  const { seed } = JSON.parse(await readFile(join(jobDir, HANDIN_FILE), "utf8")) as Partial<HandInFile>;
  if (typeof seed !== "string" || !new RegExp(`^[0-9a-f]{${SEED_BYTES * 2}}$`).test(seed)) throw new Error(`${HANDIN_FILE}: seed must be ${SEED_BYTES} bytes in hex`);
  reseedMathRandom(Buffer.from(seed, "hex"));
}

/** The default hand-in: a line on stdin means the job is there; stdin ending means it never will be. */
function stdinHandIn(): Promise<boolean> {
  return new Promise((resolve) => {
    const stdin = process.stdin;
    let seen = "";
    const finish = (handedIn: boolean) => {
      stdin.off("data", onData);
      stdin.off("end", onEnd);
      stdin.off("error", onEnd);
      // Not read again: let the process exit when the job is done.
      stdin.destroy();
      resolve(handedIn);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      if (seen.includes("\n")) finish(true);
    };
    const onEnd = () => finish(false);
    stdin.on("data", onData);
    stdin.once("end", onEnd);
    stdin.once("error", onEnd);
  });
}

/** What a pre-started job brings along: its scratch folder, the profile copy and the running LibreOffice. */
interface Prestarted {
  scratch: string;
  profile: string;
  office: WarmOffice;
  /** A pdftoppm waiting for the PDF on its stdin, to render page 1 ({@link startRenderer}), or starting. */
  renderer?: Promise<WarmRenderer | undefined>;
}

async function convertJob(jobDir: string, spec: JobSpec, options: ConverterOptions, prestarted?: Prestarted): Promise<JobResult> {
  const timings: Record<string, number> = {};
  const started = Date.now();
  const deadline = started + (spec.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  const scratch = prestarted?.scratch ?? (await mkdtemp(join(options.scratchDir ?? "/tmp", "folio-job-")));
  try {
    const lap = (name: string, since: number) => (timings[name] = Date.now() - since);

    let t = Date.now();
    let profile = prestarted?.profile ?? spec.profileDir;
    if (!prestarted && !spec.profileInPlace) {
      profile = join(scratch, "profile");
      await cp(spec.profileDir, profile, { recursive: true });
    }
    lap("profile", t);

    t = Date.now();
    let document = join(jobDir, "input", `document.${FORMAT_EXTENSIONS[spec.format]}`);
    if (spec.format === "TXT") {
      document = await utf8Copy(document, join(scratch, "text"));
      lap("text", t);
      t = Date.now();
    }
    const pdfJob: PdfJob = { document, format: spec.format, profile, pdfDir: join(scratch, "pdf"), home: scratch, deadline, options };
    let pdf: string;
    if (prestarted) {
      const warm = await toPdfWarm(prestarted.office, pdfJob);
      pdf = warm.pdf;
      // 1 when the running LibreOffice converted it, 0 when it had to be started after all.
      timings.warmOffice = warm.warm ? 1 : 0;
    } else {
      pdf = await toPdf(pdfJob);
    }
    lap("soffice", t);

    t = Date.now();
    const counted = await countPages(pdf, deadline, options);
    lap("pageCount", t);
    // 1 when LibreOffice's PDF was not the simple kind and pdfinfo counted its pages.
    timings.pdfinfoFallback = counted.by === "pdfinfo" ? 1 : 0;
    const selection = spec.pages === undefined ? undefined : parsePages(spec.pages);
    if (selection && !selection.ok) throw new JobError("invalid_pages", selection.problem);
    const plan = planPages(counted.pages, selection?.selection, spec.maxPages);
    // Too many pages without a selection is the document's problem; a selection it cannot meet is the caller's.
    if (!plan.ok) throw new JobError(plan.problem === "over_limit" ? "over_limit" : "invalid_pages", plan.message);

    if (spec.output === "pdf") {
      // The PDF itself is the answer (a durable job renders it a few pages at a time, outside), within the output limit; copied, since the scratch folder may be another file system.
      const size = (await stat(pdf)).size;
      const limit = spec.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
      if (size > limit) throw new JobError("conversion_failed", `the rendered PDF is ${size} bytes, more than the ${limit} allowed`);
      t = Date.now();
      await cp(pdf, join(jobDir, "output", "document.pdf"));
      lap("pdfOut", t);
      timings.total = Date.now() - started;
      return { ok: true, pageCount: 0, documentPageCount: counted.pages, pdf: true, timings };
    }

    t = Date.now();
    // Whole CPUs: a fractional limit (1.5) gets the whole part in processes, at least one.
    const workers = Math.max(1, Math.floor(spec.cpus ?? (await cgroupCpus()) ?? Math.min(availableParallelism(), DEFAULT_MAX_WORKERS)));
    const rendered = await renderPages(pdf, plan.pages, join(jobDir, "output"), { maxOutputBytes: spec.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES, workers }, deadline, { ...options, scratch }, await prestarted?.renderer);
    lap("pdftoppm", t);
    timings.greyPages = rendered.greyPages;
    // 1 when page 1 came from the pre-started pdftoppm.
    timings.warmRenderer = rendered.warmRenderer;
    timings.pngBytes = rendered.pngBytes;
    timings.total = Date.now() - started;
    return { ok: true, pageCount: plan.pages.length, documentPageCount: counted.pages, timings };
  } catch (err) {
    timings.total = Date.now() - started;
    if (err instanceof JobError) return { ok: false, pageCount: 0, error: { code: err.code, message: err.message }, timings };
    return { ok: false, pageCount: 0, error: { code: "conversion_failed", message: `conversion failed: ${String((err as Error)?.message ?? err)}` }, timings };
  } finally {
    if (!prestarted) await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * Plain text as LibreOffice is told to read it: UTF-8 without a byte-order
 * mark, in `dir`. The document may be in any encoding `readText` accepts
 * (UTF-16 with BOM, Windows-1252, …); LibreOffice's own guess would read
 * Windows-1252 bytes as broken UTF-8.
 */
async function utf8Copy(document: string, dir: string): Promise<string> {
  const bytes = await readFile(document).catch(() => {
    throw new JobError("conversion_failed", "the job has no input document");
  });
  const reading = readText(bytes);
  if (!reading.ok) throw new JobError("conversion_failed", `the document is not text: ${reading.problem}`);
  await mkdir(dir, { recursive: true });
  const copy = join(dir, "document.txt");
  await writeFile(copy, reading.text, "utf8");
  return copy;
}

/**
 * The arguments of a conversion (after the profile and the start options):
 * to PDF, or to `target` (`--convert-to`'s `ext[:filter]`) for the warm-up.
 */
function conversionArgs(document: string, format: ConversionFormat | undefined, outDir: string, target = "pdf"): string[] {
  const args: string[] = [];
  // Plain text was turned into UTF-8 (utf8Copy); say so rather than let LibreOffice guess.
  if (format === "TXT") args.push("--infilter=Text (encoded):UTF8,LF,,,");
  args.push("--convert-to", target, "--outdir", outDir, document);
  return args;
}

/** How long the warm-up conversions may take in all (about 1 s on the host, a few under gVisor). */
const WARM_UP_MS = 60_000;

/**
 * Runs the warm-up conversions (`warmup.ts`) through the running
 * LibreOffice, in a folder of the scratch space removed afterwards. A step
 * that fails is written to stderr. Resolves to the number of steps that
 * made their file, or undefined when LibreOffice no longer answers
 * afterwards (it is killed then, and the program never says it is ready:
 * a sandbox to checkpoint is not checkpointed).
 */
async function warmUpOffice(office: WarmOffice, socket: string, scratch: string, options: ConverterOptions): Promise<number | undefined> {
  const dir = join(scratch, "warm-up");
  const deadline = Date.now() + WARM_UP_MS;
  let made = 0;
  await mkdir(dir, { recursive: true });
  try {
    for (const [name, content] of Object.entries(await warmUpSources())) await writeFile(join(dir, name), content);
    for (const step of WARM_UP_STEPS) {
      const answer = await officeRequest(socket, fileUrl(scratch), conversionArgs(join(dir, step.source), step.format, dir, step.target), deadline, options.signal, () => office.kill());
      const output = join(dir, step.source.replace(/\.[^.]+$/, `.${step.target.split(":")[0]!}`));
      if (answer === "done" && (await stat(output).then((s) => s.size > 0, () => false))) made++;
      else process.stderr.write(`${JSON.stringify({ msg: "a warm-up conversion failed", source: step.source, target: step.target, answer, output: office.output().slice(0, 300) })}\n`);
      if (answer !== "done") break;
    }
    if (await officeGreets(socket, deadline)) return made;
  } catch (err) {
    process.stderr.write(`${JSON.stringify({ msg: "the warm-up failed", error: (err as Error).message })}\n`);
  } finally {
    office.clearOutput();
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
  office.kill();
  return undefined;
}

/** LibreOffice's options for every start: no window, no recovery, no first-start dialog, no lock. */
const OFFICE_FLAGS = ["--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck"] as const;

/** The PDF LibreOffice wrote, or the job error that explains why there is none. */
async function madePdf(pdfDir: string, format: ConversionFormat, code: number | null, output: string): Promise<string> {
  const pdf = join(pdfDir, "document.pdf");
  const made = await stat(pdf).then(
    (s) => s.size > 0,
    () => false,
  );
  if (made) return pdf;
  if (code === 81) throw new JobError("conversion_failed", "LibreOffice asked for a restart: the profile was not prepared");
  const said = output.trim().split("\n").filter((l) => l && !l.startsWith("convert ")).join("; ");
  throw new JobError(
    "conversion_failed",
    `LibreOffice could not read the document as ${format} (it may be corrupt, truncated, password-protected or of another format)` +
      (said ? `: ${said.slice(0, 300)}` : ""),
  );
}

/** One document's way to a PDF: where it is, where the PDF goes, and the profile and home LibreOffice use. */
interface PdfJob {
  document: string;
  format: ConversionFormat;
  profile: string;
  pdfDir: string;
  home: string;
  deadline: number;
  options: ConverterOptions;
}

/**
 * Converts through the pre-started LibreOffice. When it cannot be reached
 * (it died, or never opened its pipe), LibreOffice is started for the
 * document as in the normal mode: slower, same result.
 */
async function toPdfWarm(office: WarmOffice, job: PdfJob): Promise<{ pdf: string; warm: boolean }> {
  const { document, format, pdfDir, home, deadline, options } = job;
  await checkInput(document);
  // Not past the deadline (and not kept waiting by a timer once it answered).
  const giveUp = new AbortController();
  const socket = await Promise.race([office.listening, sleep(Math.max(0, deadline - Date.now()), undefined, { signal: giveUp.signal }).catch(() => undefined)]);
  giveUp.abort();
  if (socket) {
    office.clearOutput();
    const answer = await officeRequest(socket, fileUrl(home), conversionArgs(document, format, pdfDir), deadline, options.signal, () => office.kill());
    if (answer !== "unavailable") return { pdf: await madePdf(pdfDir, format, null, office.output()), warm: true };
  }
  if (Date.now() >= deadline) throw new JobError("timeout", "the conversion ran out of time");
  office.kill();
  return { pdf: await toPdf(job), warm: false };
}

async function toPdf(job: PdfJob): Promise<string> {
  const { document, format, profile, pdfDir, home, deadline, options } = job;
  await checkInput(document);
  const args = [`-env:UserInstallation=${fileUrl(profile)}`, ...OFFICE_FLAGS, ...conversionArgs(document, format, pdfDir)];
  const run = await runTool(options.sofficePath ?? SOFFICE_BIN, args, deadline, options.signal, { HOME: home });
  return madePdf(pdfDir, format, run.code, run.output);
}

async function checkInput(document: string): Promise<void> {
  await stat(document).catch(() => {
    throw new JobError("conversion_failed", "the job has no input document");
  });
}

/**
 * The pages of LibreOffice's PDF: read from the file's page tree
 * (`pdfpages.ts`, no process), or by pdfinfo when the file is not the simple
 * kind LibreOffice writes.
 */
async function countPages(pdf: string, deadline: number, options: ConverterOptions): Promise<{ pages: number; by: "page tree" | "pdfinfo" }> {
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
async function renderPages(
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
const DEFAULT_MAX_WORKERS = 2;

/** CPUs of the cgroup v2 quota (`cpu.max`), when there is one and it is visible (a Kubernetes pod's limit). */
async function cgroupCpus(): Promise<number | undefined> {
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
interface WarmRenderer {
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
async function startRenderer(scratch: string, options: ConverterOptions): Promise<WarmRenderer> {
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

/** The whole environment of a tool: nothing is inherited from the program. */
function toolEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: "/usr/bin:/bin", LANG: "C.UTF-8", SAL_USE_VCLPLUGIN: "svp", ...MALLOC_ENV, ...extra };
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
  return spawnTool(command, args, deadline, signal, env);
}

/**
 * {@link runTool}, and when `onStdout` is given the tool's stdout is that
 * callback's to read (only stderr goes into `output`).
 */
function spawnTool(
  command: string,
  args: string[],
  deadline: number,
  signal: AbortSignal | undefined,
  env: Record<string, string>,
  onStdout?: (child: ChildProcess) => void,
): Promise<ToolRun> {
  if (deadline - Date.now() <= 0 || signal?.aborted) return Promise.reject(new JobError("timeout", "the conversion ran out of time"));
  return superviseTool(startTool(command, args, env, false), deadline, signal, onStdout);
}

/** A tool's process, started in a process group of its own; watched from its start. */
interface StartedTool {
  command: string;
  child: ChildProcess;
  /** Its end (or why it could not start), whenever that comes. */
  closed: Promise<{ code: number | null } | Error>;
  /** stderr (and stdout, unless it has a reader of its own), the first {@link MESSAGE_BYTES} or so. */
  output(): string;
  keep(chunk: Buffer): void;
  /** SIGKILL to its whole process group (idempotent). */
  kill(): void;
  /** {@link kill}, resolving once it has ended. */
  stop(): Promise<void>;
  /** Whether it has ended (or could not start). */
  ended(): boolean;
}

/** Starts a tool; with `stdin` its stdin is a pipe from here, with `stdout` a file descriptor its stdout is that file. */
function startTool(command: string, args: string[], env: Record<string, string>, stdin: boolean, stdout?: number): StartedTool {
  const child = spawn(command, args, { stdio: [stdin ? "pipe" : "ignore", stdout ?? "pipe", "pipe"], detached: true, env: toolEnv(env) });
  // Written to after it may have ended: its end says what happened, not EPIPE.
  child.stdin?.on("error", () => undefined);
  let output = "";
  const keep = (chunk: Buffer) => {
    if (output.length < MESSAGE_BYTES) output += chunk.toString("utf8");
  };
  child.stderr!.on("data", keep);
  let ended = false;
  const closed = new Promise<{ code: number | null } | Error>((resolve) => {
    child.once("error", (err) => resolve(err));
    child.once("close", (code) => resolve({ code }));
  });
  void closed.then(() => (ended = true));
  const kill = () => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  };
  const stop = async () => {
    kill();
    await closed;
  };
  return { command, child, closed, output: () => output, keep, kill, stop, ended: () => ended };
}

/** Waits for a started tool's end; kills it when the deadline passes or `signal` aborts (then throws `timeout`). */
async function superviseTool(tool: StartedTool, deadline: number, signal: AbortSignal | undefined, onStdout?: (child: ChildProcess) => void): Promise<ToolRun> {
  let timedOut = false;
  const kill = () => {
    timedOut = true;
    tool.kill();
  };
  const timer = setTimeout(kill, Math.max(0, deadline - Date.now()));
  signal?.addEventListener("abort", kill, { once: true });
  if (signal?.aborted) kill();
  if (onStdout) onStdout(tool.child);
  else tool.child.stdout?.on("data", tool.keep);
  try {
    const end = await tool.closed;
    if (timedOut) throw new JobError("timeout", "the conversion ran out of time");
    if (end instanceof Error) throw new JobError("conversion_failed", `could not start ${tool.command}: ${end.message}`);
    return { code: end.code, output: tool.output() };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", kill);
  }
}

/** A LibreOffice started ahead of its document (pre-started mode). */
interface WarmOffice {
  /** The path of its single-instance pipe once it listens; undefined when it exited or never opened it. */
  listening: Promise<string | undefined>;
  /** Its stdout and stderr since the last {@link clearOutput} (the first {@link MESSAGE_BYTES} or so). */
  output(): string;
  clearOutput(): void;
  /** Kills its whole process group (idempotent). */
  kill(): void;
  /** Kills its whole process group and resolves once LibreOffice has exited. */
  stop(): Promise<void>;
}

/**
 * Path of the pipe through which a second LibreOffice start hands its
 * command line to the first one with the same profile: osl puts it in /tmp
 * and names it after the user id and the MD5 of the profile's URL, as UTF-16
 * code units, each byte in hex without leading zeros (LibreOffice's
 * `CreateMD5FromString`).
 */
export function officePipePath(profileUrl: string, uid: number, dir = "/tmp"): string {
  const digest = createHash("md5").update(Buffer.from(profileUrl, "utf16le")).digest();
  const hex = [...digest].map((b) => b.toString(16)).join("");
  return join(dir, `OSL_PIPE_${uid}_SingleOfficeIPC_${hex}`);
}

/** Starts LibreOffice headless on `profile` with no document; it waits for requests on its pipe. */
function startOffice(profile: string, home: string, options: ConverterOptions): WarmOffice {
  const url = fileUrl(profile);
  const pipe = officePipePath(url, process.getuid?.() ?? 0);
  // An empty Writer document, opened by LibreOffice's own command line: a
  // request handed over the pipe ends LibreOffice once no document is open
  // (DispatchWatcher), and one on the pipe cannot open one (ignored when
  // headless). With it the warm-up conversions leave LibreOffice running.
  const child = spawn(options.sofficePath ?? SOFFICE_BIN, [`-env:UserInstallation=${url}`, ...OFFICE_FLAGS, "private:factory/swriter"], {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: toolEnv({ HOME: home }),
  });
  let output = "";
  let exited = false;
  const keep = (chunk: Buffer) => {
    if (output.length < MESSAGE_BYTES) output += chunk.toString("utf8");
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  child.once("error", (err) => {
    exited = true;
    keep(Buffer.from(`could not start LibreOffice: ${err.message}\n`));
  });
  child.once("close", () => (exited = true));
  const gone = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.once("error", () => resolve());
  });
  const kill = () => {
    if (exited || child.pid === undefined) return;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  };
  const stop = async () => {
    kill();
    await gone;
  };
  const listening = (async () => {
    const until = Date.now() + OFFICE_START_MS;
    while (!exited && Date.now() < until) {
      if (await officeGreets(pipe, until)) return pipe;
      await sleep(OFFICE_POLL_MS);
    }
    return undefined;
  })();
  return { listening, output: () => output, clearOutput: () => (output = ""), kill, stop };
}

/** The messages of LibreOffice's single-instance protocol (desktop/source/app/officeipcthread.cxx). */
const IPC = Object.freeze({ sendArguments: "InternalIPC::SendArguments", arguments: "InternalIPC::Arguments", processingDone: "InternalIPC::ProcessingDone" });

/**
 * Whether LibreOffice answers on its pipe. It opens the pipe early in its
 * start but greets (`SendArguments`) only once it has finished starting, so
 * the greeting is what "ready" means. The connection is then closed without
 * arguments, which LibreOffice ignores (its "lookup message" case).
 */
async function officeGreets(socketPath: string, until: number): Promise<boolean> {
  const socket = await holdOffice(socketPath, until);
  socket?.destroy();
  return socket !== undefined;
}

/**
 * A connection to LibreOffice's pipe, held open once LibreOffice has
 * greeted it (its request thread then waits for the arguments); undefined
 * when there is no greeting by `until`. Closing it without arguments is
 * LibreOffice's ignored "lookup message".
 */
function holdOffice(socketPath: string, until: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection(socketPath);
    let text = "";
    const finish = (greeted: boolean) => {
      clearTimeout(timer);
      socket.off("data", onData);
      if (!greeted) socket.destroy();
      resolve(greeted ? socket : undefined);
    };
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (text.includes("\0")) finish(text.startsWith(`${IPC.sendArguments}\0`));
    };
    const timer = setTimeout(() => finish(false), Math.max(0, until - Date.now()));
    socket.on("data", onData);
    // Errors after the greeting (LibreOffice killed) end nothing here.
    socket.on("error", () => finish(false));
    socket.once("close", () => finish(false));
  });
}

/** One argument as the protocol carries it: commas, backslashes and NULs escaped. */
function ipcArgument(text: string): string {
  return text.replace(/[\\,\0]/g, (c) => (c === "\0" ? "\\0" : `\\${c}`));
}

/**
 * Hands a command line to a running LibreOffice through its pipe, as a
 * second `soffice.bin` start would, without starting one: LibreOffice says
 * `SendArguments` once it is ready, gets `Arguments` + `1` + the working
 * folder's URL + `,arg` for each argument + NUL, runs the request and answers
 * `ProcessingDone` when it is finished.
 *
 * "unavailable": nothing was handed over (no connection, or an unexpected
 * greeting); "done": LibreOffice says it finished; "broken": the
 * connection ended after the arguments were sent (LibreOffice crashed on the
 * document). Past the deadline or on abort it calls `kill` and throws
 * `timeout`.
 */
export function officeRequest(
  socketPath: string,
  cwdUrl: string,
  args: readonly string[],
  deadline: number,
  signal: AbortSignal | undefined,
  kill: () => void,
): Promise<"done" | "broken" | "unavailable"> {
  if (Date.now() >= deadline || signal?.aborted) return Promise.reject(new JobError("timeout", "the conversion ran out of time"));
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let sent = false;
    let settled = false;
    let pending = Buffer.alloc(0);
    const finish = (answer: "done" | "broken" | "unavailable" | JobError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      if (answer instanceof JobError) reject(answer);
      else resolve(answer);
    };
    const onAbort = () => {
      kill();
      finish(new JobError("timeout", "the conversion ran out of time"));
    };
    const timer = setTimeout(onAbort, deadline - Date.now());
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (let end = pending.indexOf(0); end >= 0; end = pending.indexOf(0)) {
        const message = pending.subarray(0, end).toString("utf8");
        pending = pending.subarray(end + 1);
        if (!sent && message === IPC.sendArguments) {
          sent = true;
          socket.write(`${IPC.arguments}1${ipcArgument(cwdUrl)}${args.map((a) => `,${ipcArgument(a)}`).join("")}\0`);
        } else if (sent && message === IPC.processingDone) {
          finish("done");
        } else {
          finish(sent ? "broken" : "unavailable");
        }
      }
    });
    socket.once("error", () => finish(sent ? "broken" : "unavailable"));
    socket.once("close", () => finish(sent ? "broken" : "unavailable"));
  });
}
