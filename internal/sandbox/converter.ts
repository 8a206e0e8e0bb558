/**
 * The conversion that runs inside a sandbox (and, for the `unsandboxed`
 * development backend, directly on the host): one job folder in, PNG pages
 * and `result.json` out. This module is the program's entry ({@link runJob})
 * and the job protocol: the files the host writes and reads, the hand-in of
 * a pre-started sandbox, and the steps of a conversion in order. The steps
 * themselves live beside it, one job a module:
 *
 * - `office.ts`: LibreOffice to PDF, with a LibreOffice started for the
 *   document;
 * - `warm-office.ts`: the warm office, a LibreOffice started before its
 *   document, and the single-instance pipe that hands it the conversion;
 * - `render.ts`: the PDF's page count and its pages as PNG files (poppler);
 * - `tools.ts`: tool supervision, each tool in a process group of its own,
 *   with a fixed environment and the job's deadline;
 * - `job-error.ts`: the failure a job reports in result.json, raised by all
 *   of them.
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
 * Steps ({@link convertJob}): a fresh copy of the prepared LibreOffice
 * profile; for plain text, a UTF-8 copy of the document; the document to a
 * PDF by LibreOffice (`office.ts`; `warm-office.ts` in pre-started mode); the
 * page count read from the PDF, checked against the limit and the job's page
 * selection (nothing rendered when it fails); the pages rendered and written
 * as PNGs the moment each is ready (`render.ts`).
 *
 * Pre-started mode: when the job folder holds `prestart.json`
 * ({@link PrestartSpec}) instead of `job.json`, the sandbox was started before
 * its document existed. The program then copies the profile, starts
 * LibreOffice (headless, with an empty Writer document so that it outlives
 * a conversion) and waits for the host to hand the job in (a line on stdin,
 * by default); the conversion is then sent to the running LibreOffice over
 * its own single-instance pipe (`warm-office.ts`, `officeRequest`) instead
 * of starting it. Still one document per program, and LibreOffice is killed
 * afterwards. A sandbox restored from a checkpoint of this waiting state is
 * handed its job by a signal instead ({@link HANDIN_SIGNAL}), and reseeds
 * what its image fixed (`reseed.ts`) before it converts; the one that is
 * checkpointed first runs the warm-up conversions (`warmup.ts`), so every
 * restored sandbox converts with a warm LibreOffice.
 *
 * This module and the five above are bundled into the sandbox program: they
 * may import only Node's built-ins, types, their own folder's Node-only
 * modules (each other, `png.ts`, `probe.ts`, `profile.ts`, `pdfpages.ts`,
 * `reseed.ts`, `warmup.ts`) and the dependency-free format table and page
 * selections (`internal/formats`).
 */
import { cp, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import type { Socket } from "node:net";
import { basename, join } from "node:path";
import { FORMAT_EXTENSIONS, PAGE_DPI } from "../formats/index.ts";
import { parsePages, planPages } from "../formats/pages.ts";
import type { JobResult, JobSpec } from "./interface.ts";
import { JobError } from "./job-error.ts";
import { toPdf, utf8Copy, type PdfJob } from "./office.ts";
import { runProbe } from "./probe.ts";
import { DEFAULT_MAX_WORKERS, cgroupCpus, countPages, renderPages, startRenderer, type WarmRenderer } from "./render.ts";
import { SEED_BYTES, reseedMathRandom } from "./reseed.ts";
import { OFFICE_START_MS, holdOffice, startOffice, toPdfWarm, warmUpOffice, type WarmOffice } from "./warm-office.ts";

/** Default limits when job.json names none. */
const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_OUTPUT_BYTES = 512 * 1024 * 1024;

/** Name of the file that puts the program into pre-started mode. */
export const PRESTART_FILE = "prestart.json";
/** Line the program writes on stdout in pre-started mode once LibreOffice listens. */
export const READY_LINE = "folio-sandbox-ready";

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
