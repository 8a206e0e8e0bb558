/**
 * `local/tesseract`: tesseract 5 (Debian's), each pass over a page read by a
 * resident program that keeps the language loaded and is sent the page's
 * pixels (engines/tesseract-server.ts, docs/adr/0009-resident-tesseract.md),
 * or where that is not built, by the CLI: one child process per pass, no
 * shell, the image on stdin and TSV on stdout. Both give the same TSV. From
 * the TSV's words and boxes, `layout/page.ts` makes the text in
 * reading order, the tables and the layout blocks; the confidence is the
 * mean confidence of the recognised words, scaled from 0–100 to 0–1.
 *
 * The answer is shaped from that layout by engines/local-result.ts
 * (`output_format`, tables when `extract_tables` asks for them). It prices
 * nothing (usage 0 tokens, no reported cost: the caller charges the
 * configured price per page). Concurrency limits are the caller's. The
 * language a page is read in is chosen by engines/tesseract-languages.ts;
 * the orientation check's trial readings are summed up by
 * engines/tesseract-trial.ts.
 *
 * Decisions a reader may question:
 * - Only bytes that start like an image reach tesseract. Given anything
 *   else, tesseract reads the input as a LIST OF FILE NAMES and OCRs those
 *   files: `echo /some/secret.png | tesseract stdin stdout` prints the
 *   secret. The allow-list below closes that whatever the caller sniffed.
 * - Page segmentation mode 3 (tesseract's automatic layout analysis): it
 *   finds columns, and `layout/` reads what it gets wrong (tables, a
 *   receipt's prices) row by row; mode 4 reads every line straight across
 *   the columns of a page (docs/benchmarks/reading-quality.md "Reading quality").
 * - Small text is read again at twice the size: when the words of a reading
 *   are at most {@link SMALL_WORD_HEIGHT} pixels high (the median of their
 *   boxes, over at least {@link MIN_WORDS_TO_ENLARGE} words: a phone photo, a
 *   page scanned at 100 DPI), the page is enlarged two times (Lanczos) and
 *   read again, and the boxes of that reading are brought back to the page
 *   as sent. Measured on the corpus's pages downscaled to half
 *   (docs/benchmarks/reading-quality.md "Small pages"): tesseract's word boxes told the small
 *   pages apart better than a pixel estimate of the x-height, and larger text
 *   read enlarged got worse, so only the small is enlarged. It costs a second
 *   reading on those pages alone.
 * - OMP_THREAD_LIMIT=1 by default: pages already run in parallel, and on a
 *   2-CPU machine tesseract's OpenMP threads made one A4 page 2.1× slower
 *   (1.67 s against 0.78 s), not faster.
 */
import { spawn } from "node:child_process";
import { jailed, signalJailed, type JailAccess } from "../../platform/jail/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { Engine, ExtractOptions, PageInput, PageResult } from "../types.ts";
import { hasPngSignature, parsePgm } from "../../formats/index.ts";
import { decodePixels, decodeToPng, fromPixels, ImageDecodeError } from "../../platform/decoder/index.ts";
import { findPageRules, scaleRules, type PageRules } from "../layout/grid.ts";
import { decodeGrey, encodePgm, viewGrey } from "../layout/image.ts";
import { letterHeight } from "../layout/letters.ts";
import { analyzePage, type AnalyzedPage, type OrderChoice } from "../layout/page.ts";
import { watchDeadline } from "./deadline.ts";
import { pageResult, wantsGrids } from "./local-result.ts";
import { readAnyLanguage, tesseractLanguage } from "./tesseract-languages.ts";
import { builtResidentProgram, ResidentTesseract, TESSERACT_COMMAND, tesseractEnv, type RawPage } from "./tesseract-server.ts";
import { parseTrial, type TrialReading } from "./tesseract-trial.ts";

export interface TesseractEngineOptions {
  /** The executable; default `tesseract` from PATH. */
  command?: string;
  /**
   * Backstop per page, killing the child; default 120 s. The caller's
   * AbortSignal (request deadline) normally fires first.
   */
  timeoutMs?: number;
  /** tesseract `--psm`; default 3 (see the module comment). */
  pageSegmentationMode?: number;
  /** OMP_THREAD_LIMIT for the child; default 1 (see the module comment). */
  threads?: number;
  /**
   * Where the geometry reads a table and tesseract read its words in another
   * order: decided by the evidence of the page (default, `layout/joins.ts`),
   * or always one of them (what `make eval` compares).
   */
  readingOrder?: "evidence" | OrderChoice;
  /**
   * The resident tesseract programs that read for it (engines/tesseract-server.ts),
   * or null for the CLI; default: the process's ({@link useResidentTesseract}).
   */
  resident?: ResidentTesseract | null;
}

let residentSetting: "auto" | "off" = "auto";
let sharedResident: ResidentTesseract | null | undefined;

/**
 * Whether this process's engines read with the resident tesseract program
 * (FOLIO_TESSERACT_RESIDENT; `auto`: where `make deps` built it). Called by
 * the extraction service's start; changing it stops the programs running.
 */
export function useResidentTesseract(setting: "auto" | "off"): void {
  if (setting === residentSetting) return;
  residentSetting = setting;
  void sharedResident?.close();
  sharedResident = undefined;
}

/** The process's resident programs, or null when they are off or not built. */
export function processResident(): ResidentTesseract | null {
  if (sharedResident !== undefined) return sharedResident;
  const program = residentSetting === "auto" ? builtResidentProgram() : undefined;
  sharedResident = program ? new ResidentTesseract({ program, threads: 1, access: tessdataAccess(), maxOutputBytes: MAX_TSV_BYTES }) : null;
  return sharedResident;
}

/** Ends the process's resident programs (started again by the next reading). */
export async function stopResidentTesseract(): Promise<void> {
  const r = sharedResident;
  sharedResident = undefined;
  await r?.close();
}

const DEFAULT_TIMEOUT_MS = 120_000;
/** Words whose boxes are at most this many pixels high (median) are read again enlarged (see the module comment). */
export const SMALL_WORD_HEIGHT = 9;
/**
 * A page whose letter-shaped ink is at most this many pixels high, three
 * letters in four (`layout/letters.ts`), is read enlarged without a first
 * reading: capitals and ascenders of 6 px leave an x-height of about 4,
 * where tesseract reads garbage whose word boxes span lines and so do not
 * look small (docs/benchmarks/reading-quality.md "Small pages").
 */
export const TINY_LETTER_HEIGHT = 6;
/** Fewer words than this (a label, a line) are never enlarged: their median says little. */
const MIN_WORDS_TO_ENLARGE = 20;
/** How much small text is enlarged. */
const ENLARGEMENT = 2;
/** An enlarged page may have at most this many pixels (tesseract's memory grows with them). */
const MAX_ENLARGED_PIXELS = 60_000_000;
/** A dense A4 page is ~100 KB of TSV; far more means something is wrong. */
const MAX_TSV_BYTES = 32 * 1024 * 1024;
/** Kept for error causes (logs). */
const MAX_STDERR_CHARS = 4096;

/** What tesseract reads besides the system in its jail: its models' folder when TESSDATA_PREFIX puts them outside /usr. */
function tessdataAccess(): JailAccess {
  const prefix = process.env.TESSDATA_PREFIX;
  return prefix && !prefix.startsWith("/usr/") ? { read: [prefix] } : {};
}

// ---------------------------------------------------------------- images

/** Formats leptonica decodes that PageInput may carry, by signature (PNM: pages rasterized from a PDF for a local engine). */
export function imageFormat(bytes: Buffer): "png" | "jpeg" | "tiff" | "gif" | "webp" | "bmp" | "pnm" | undefined {
  const starts = (sig: number[], at = 0) => bytes.length >= at + sig.length && sig.every((b, i) => bytes[at + i] === b);
  if (hasPngSignature(bytes)) return "png";
  if (starts([0xff, 0xd8, 0xff])) return "jpeg";
  if (starts([0x49, 0x49, 0x2a, 0x00]) || starts([0x4d, 0x4d, 0x00, 0x2a])) return "tiff";
  if (starts([0x47, 0x49, 0x46, 0x38])) return "gif";
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return "webp";
  if (starts([0x42, 0x4d])) return "bmp";
  // Binary PGM/PPM ("P5"/"P6" and a blank): raw pages rendered from a PDF.
  if ((starts([0x50, 0x35]) || starts([0x50, 0x36])) && bytes.length > 2 && /\s/.test(String.fromCharCode(bytes[2]!))) return "pnm";
  return undefined;
}

// ---------------------------------------------------------------- engine

/**
 * A page's pixels for a resident program: a PGM's own (a PDF page), else the
 * image decoder child's (strict: a damaged image is left to the CLI, which
 * says what is wrong with it; three channels on white when it has alpha);
 * undefined for an image the decoder does not know (BMP).
 */
async function rawPage(page: PageInput, signal: AbortSignal): Promise<RawPage | undefined> {
  const pgm = parsePgm(page.image);
  if (pgm) return { width: pgm.width, height: pgm.height, channels: 1, data: pgm.pixels, dpi: null };
  try {
    let px = await decodePixels(page.image, { strict: true, signal });
    if (px.channels !== 1 && px.channels !== 3) px = await decodePixels(page.image, { strict: true, rgbOnWhite: true, signal });
    if (px.channels !== 1 && px.channels !== 3) return undefined;
    return { width: px.width, height: px.height, channels: px.channels, data: px.data, dpi: px.density };
  } catch (err) {
    signal.throwIfAborted();
    if (err instanceof ImageDecodeError) return undefined;
    throw err;
  }
}

function checkImage(page: PageInput): void {
  if (!imageFormat(page.image)) {
    throw new FolioError("invalid_request", `page ${page.pageNumber} is not an image tesseract can read (PNG, JPEG, TIFF, GIF, WebP, BMP or PNM)`, {
      extra: { page_number: page.pageNumber },
    });
  }
}


/** Rules by page image, while the image lives: a page read in two or three languages is one page. */
const rulesOf = new WeakMap<Buffer, Promise<PageRules>>();

/** The ruled tables and blanks of a page's image; none when it cannot be decoded here (BMP: tesseract still reads it). */
function pageRules(page: PageInput): Promise<PageRules> {
  let rules = rulesOf.get(page.image);
  if (!rules) {
    rules = decodeGrey(page.image).then(findPageRules, () => ({ grids: [], blanks: [] }));
    rulesOf.set(page.image, rules);
  }
  return rules;
}

/**
 * Whether a page's letters are too small for tesseract by their pixels
 * (`layout/letters.ts`: three in four at most {@link TINY_LETTER_HEIGHT}
 * high): the page's size when they are, to read it enlarged without reading
 * it first; undefined when not, or when the page cannot be decoded here.
 */
function tinyLetters(page: PageInput): Promise<{ width: number; height: number } | undefined> {
  let tiny = tinyOf.get(page.image);
  if (!tiny) {
    tiny = viewGrey(page.image).then(
      (grey) => {
        const h = letterHeight(grey);
        return h !== null && h <= TINY_LETTER_HEIGHT ? { width: grey.width, height: grey.height } : undefined;
      },
      () => undefined,
    );
    tinyOf.set(page.image, tiny);
  }
  return tiny;
}

/** {@link tinyLetters} by page image, while the image lives: a page read in two or three languages is measured once. */
const tinyOf = new WeakMap<Buffer, Promise<{ width: number; height: number } | undefined>>();

/** Whether a reading's words are small enough to read again enlarged (module comment). */
function smallText(read: AnalyzedPage): boolean {
  const heights = read.sources.flatMap((s) => s.words.map((w) => w.y1 - w.y0)).sort((a, b) => a - b);
  return heights.length >= MIN_WORDS_TO_ENLARGE && heights[heights.length >> 1]! <= SMALL_WORD_HEIGHT;
}

/** The page enlarged `factor` times (Lanczos): a PDF page's grey pixels as PGM, any other image as PNG; undefined when it would be too large or cannot be decoded here. */
async function enlarged(page: PageInput, factor: number): Promise<PageInput | undefined> {
  const pgm = parsePgm(page.image);
  try {
    if (!pgm) {
      // Any other image is decoded and enlarged by the decoder's child process (platform/decoder), colours kept.
      const { png } = await decodeToPng(page.image, { scale: factor, maxOutputPixels: MAX_ENLARGED_PIXELS, compressionLevel: 1 });
      return { pageNumber: page.pageNumber, image: png, mimeType: "image/png" };
    }
    const width = Math.round(pgm.width * factor);
    const height = Math.round(pgm.height * factor);
    if (!width || !height || width * height > MAX_ENLARGED_PIXELS) return undefined;
    const { data, info } = await fromPixels(pgm.pixels, { width: pgm.width, height: pgm.height, channels: 1 })
      .resize(width, height, { kernel: "lanczos3" })
      .greyscale()
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { pageNumber: page.pageNumber, image: encodePgm({ width: info.width, height: info.height, pixels: new Uint8Array(data.buffer, data.byteOffset, data.length) }), mimeType: "image/x-portable-graymap" };
  } catch {
    // An image sharp does not decode (BMP), or one too large enlarged: read as it is.
    return undefined;
  }
}

/** A reading of a page enlarged `factor` times, its boxes brought back to the page as sent (whose layout is `sent`). */
function shrunk(read: AnalyzedPage, factor: number, sent: { width: number; height: number }): AnalyzedPage {
  const back = (v: number) => Math.round(v / factor);
  const box = (b: [number, number, number, number]): [number, number, number, number] => [back(b[0]), back(b[1]), back(b[2]), back(b[3])];
  // The sources' blocks are the layout's own objects: each is brought back once, through the layout.
  for (const block of read.layout.blocks) {
    block.bbox = box(block.bbox);
    if (block.words) block.words = block.words.map((w) => ({ ...w, bbox: box(w.bbox) }));
  }
  const sources = read.sources.map((s) => ({ ...s, words: s.words.map((w) => ({ ...w, x0: w.x0 / factor, y0: w.y0 / factor, x1: w.x1 / factor, y1: w.y1 / factor, ...(w.em !== undefined ? { em: w.em / factor } : {}) })) }));
  return { ...read, sources, layout: { ...read.layout, width: sent.width, height: sent.height }, lineHeight: read.lineHeight / factor };
}

export class TesseractEngine implements Engine {
  readonly id = "local/tesseract";
  readonly #command: string;
  readonly #timeoutMs: number;
  readonly #psm: number;
  readonly #threads: number;
  readonly #order: "evidence" | OrderChoice;
  readonly #resident: ResidentTesseract | null | undefined;

  constructor(opts: TesseractEngineOptions = {}) {
    this.#command = opts.command ?? TESSERACT_COMMAND;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#psm = opts.pageSegmentationMode ?? 3;
    this.#threads = opts.threads ?? 1;
    this.#order = opts.readingOrder ?? "evidence";
    this.#resident = opts.resident;
  }

  /**
   * OCRs one page. Rejects with a FolioError (`invalid_request` for an
   * unreadable image or a bad `options.language`, `timeout`,
   * `service_unavailable` when tesseract is missing, `internal_error`), or
   * with `signal.reason` when the signal aborts (the child is killed).
   */
  async extractPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageResult> {
    const { page: best } = await this.readPage(page, options, signal);
    return pageResult(page, best, options);
  }

  /**
   * Reads a page in the language `options.language` names, or the one it
   * finds (see "The language" in engines/tesseract-languages.ts); answers the
   * reading and the traineddata it used. Errors as {@link extractPage}.
   */
  async readPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<{ page: AnalyzedPage; language: string }> {
    signal.throwIfAborted();
    checkImage(page);
    const read = (lang: string) => this.read(page, lang, options, signal);
    if (options.language !== undefined && options.language.trim() !== "") {
      const language = await tesseractLanguage(options.language, this.#command);
      return { page: await read(language), language };
    }
    return readAnyLanguage(read, this.#command);
  }

  /**
   * One tesseract pass over a page in the given traineddata (and one more,
   * enlarged, when its text is small: see the module comment). When tables or
   * structure are asked for, the page's ruled tables (`layout/grid.ts`) are
   * read by their cells (and its blanks join the words beside them): found
   * on the page, or `rules` when the caller found them on the page before
   * changing it (auto's reading without rules).
   */
  async read(page: PageInput, lang: string, options: ExtractOptions, signal: AbortSignal, rules?: PageRules): Promise<AnalyzedPage> {
    checkImage(page);
    // Tesseract starts on the page at once (in its own process); the page's rules and the size of its letters
    // are measured here meanwhile, and only the reading's analysis waits for them. A page whose letters turn
    // out too small is read enlarged instead: that first reading is stopped.
    const stop = new AbortController();
    const firstTsv = this.#read(page, "tsv", lang, this.#psm, AbortSignal.any([signal, stop.signal]));
    firstTsv.catch(() => {});
    let ruled: PageRules | undefined;
    let tiny: Awaited<ReturnType<typeof tinyLetters>>;
    try {
      ruled = rules ?? (wantsGrids(options) ? await pageRules(page) : undefined);
      signal.throwIfAborted();
      tiny = await tinyLetters(page);
    } catch (err) {
      stop.abort(err);
      throw err;
    }
    if (tiny) stop.abort();
    const analyze = (tsv: string, g: PageRules | undefined) => {
      const r = analyzePage(tsv, {
        words: options.includeLayout === "words",
        order: this.#order,
        ...(g ? { rules: g } : {}),
      });
      signal.throwIfAborted();
      return r;
    };
    const pass = async (p: PageInput, g: PageRules | undefined) => analyze(await this.#read(p, "tsv", lang, this.#psm, signal), g);
    // Letters too small for tesseract are read enlarged at once; text it finds small, enlarged again.
    const first = tiny ? undefined : analyze(await firstTsv, ruled);
    if (first && !smallText(first)) return first;
    const big = await enlarged(page, ENLARGEMENT);
    signal.throwIfAborted();
    if (!big) return first ?? pass(page, ruled);
    return shrunk(await pass(big, ruled && scaleRules(ruled, ENLARGEMENT)), ENLARGEMENT, first?.layout ?? tiny!);
  }

  /**
   * A trial reading for the orientation check (engines/straighten.ts): the
   * image read in `language` (the request's, else the first installed) with
   * page segmentation mode 3, as hOCR, summed up by {@link parseTrial}. Errors
   * as {@link extractPage}.
   */
  async trial(page: PageInput, language: string | undefined, signal: AbortSignal): Promise<TrialReading> {
    checkImage(page);
    const lang = await tesseractLanguage(language, this.#command);
    signal.throwIfAborted();
    return parseTrial(await this.#read(page, "hocr", lang, 3, signal));
  }

  /**
   * One reading of the page: by a resident program when there is one (pixels
   * sent: a PGM's own, else decoded by the image decoder child), else by a
   * tesseract child of its own. An image the decoder child does not know
   * (BMP) is read by the CLI.
   */
  async #read(page: PageInput, output: "tsv" | "hocr", lang: string, psm: number, signal: AbortSignal): Promise<string> {
    const resident = this.#resident === undefined ? (this.#command === TESSERACT_COMMAND ? processResident() : null) : this.#resident;
    const raw = resident ? await rawPage(page, signal) : undefined;
    if (!resident || !raw) return this.#run(page, ["-l", lang, "--psm", String(psm), output], signal);
    return resident.read({ output, lang, psm, page: raw, pageNumber: page.pageNumber }, signal, this.#timeoutMs);
  }

  /** One tesseract child over the page on stdin: `args` after `stdin stdout`; its stdout. */
  #run(page: PageInput, args: readonly string[], signal: AbortSignal): Promise<string> {
    return new Promise((resolve, reject) => {
      // The image is hostile: tesseract runs in the process's parser jail (platform/jail; it needs no file: the
      // page on stdin, TSV on stdout, its models under /usr or TESSDATA_PREFIX) and gets none of this process's
      // secrets (the upstream API key), only its own settings.
      const jail = jailed(this.#command, ["stdin", "stdout", ...args], tessdataAccess());
      const child = spawn(jail.command, jail.args, {
        env: tesseractEnv({ ...jail.env, OMP_THREAD_LIMIT: String(this.#threads) }),
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
      });
      const out: Buffer[] = [];
      let outBytes = 0;
      let stderr = "";
      let failure: unknown;
      const kill = (why: unknown) => {
        failure ??= why;
        signalJailed(child, jail.detached, "SIGKILL");
      };
      const done = watchDeadline(
        signal,
        this.#timeoutMs,
        () => new FolioError("timeout", `tesseract took longer than ${Math.round(this.#timeoutMs / 1000)} s on page ${page.pageNumber}`),
        kill,
      );

      child.stdout.on("data", (chunk: Buffer) => {
        outBytes += chunk.length;
        if (outBytes > MAX_TSV_BYTES) kill(new FolioError("internal_error", `tesseract produced more than ${MAX_TSV_BYTES} bytes for page ${page.pageNumber}`));
        else out.push(chunk);
      });
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (s: string) => {
        if (stderr.length < MAX_STDERR_CHARS) stderr += s.slice(0, MAX_STDERR_CHARS - stderr.length);
      });
      // EPIPE when tesseract exits before reading all of stdin: 'close' reports why.
      child.stdin.on("error", () => {});
      child.on("error", (err: NodeJS.ErrnoException) => {
        done();
        reject(
          err.code === "ENOENT"
            ? new FolioError("service_unavailable", "tesseract is not installed on this service", { cause: err })
            : new FolioError("internal_error", "tesseract could not be started", { cause: err }),
        );
      });
      child.on("close", (code, sig) => {
        done();
        if (failure !== undefined) return reject(failure);
        if (code === 0) return resolve(Buffer.concat(out).toString("utf8"));
        const cause = new Error(`tesseract exited with ${sig ?? code}: ${stderr.trim()}`);
        // leptonica's decoders report an undecodable image as pixRead* errors.
        if (/pixRead|libpng|jpeg|tiff|gif|webp|cannot be read|no pix/i.test(stderr)) {
          return reject(
            new FolioError("invalid_request", `page ${page.pageNumber}: the image is damaged or truncated and could not be decoded`, {
              extra: { page_number: page.pageNumber },
              cause,
            }),
          );
        }
        reject(new FolioError("internal_error", `tesseract failed on page ${page.pageNumber}`, { cause }));
      });
      child.stdin.end(page.image);
    });
  }
}
