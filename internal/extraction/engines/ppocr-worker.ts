/**
 * The worker thread of `local/ppocr` (ppocr.ts): loads the PP-OCR models
 * once, then turns decoded pages (RGB pixels) into recognised text boxes,
 * one page at a time. It runs in a worker because onnxruntime-node's
 * `session.run` is synchronous: on the main thread a page (seconds of CPU)
 * would stall the event loop.
 *
 * Self-contained on purpose: Node loads this file directly (type stripping
 * of a .ts file, or the compiled .js in dist/), outside vitest's or tsx's
 * transforms, so it imports nothing from the project and uses only erasable
 * TypeScript syntax. The packages are imported by name at run time (they are
 * optional for the rest of Folio).
 *
 * What it does to a page, on top of the `paddleocr` runtime's detector:
 * - a white margin around the image before detection ({@link marginFor}):
 *   DB detection finds no box, or fragments, for text that touches the
 *   image's edge (a single text line cut tight, a snippet); boxes are
 *   mapped back to the page's own pixels;
 * - detection at up to {@link DETECTION_LONG_SIDE} pixels on the long side
 *   (PaddleOCR's default, 960, makes 10-point text on a 200-DPI page about
 *   12 pixels tall, and loses lines);
 * - a box score of {@link BOX_SCORE} instead of 0.6;
 * - when detection finds nothing on a short, wide image (a text line), the
 *   whole image is recognised as one line;
 * - recognition box by box at the box's own width (the runtime pads every
 *   box of a page to its widest box, which costs ~10x the time on pages and
 *   reads worse), and CTC decoding that writes a space where the model's
 *   space probability passes {@link SPACE_PROBABILITY} between two
 *   characters although "blank" wins ({@link decodeCtc}): the Chinese model
 *   rarely makes the space its best guess, so tightly set Latin text (a
 *   receipt) came out as "ABCHOTRADING".
 *
 * Protocol (see the message types below): after start, one `ready` or
 * `init-error`; then for each `page` exactly one `done` or `failed`.
 * Cancellation is cooperative: the page carries a shared Int32 flag that the
 * main thread sets to 1; it is checked at every progress event of the
 * pipeline (before and after detection, before each box is recognised), and a
 * set flag ends the page with `failed` + `aborted`.
 */
import { readFile } from "node:fs/promises";
import { parentPort, workerData } from "node:worker_threads";

/** Package names, overridable for tests (a missing package → service_unavailable). */
export interface PpOcrPackages {
  /** The PaddleOCR pipeline runtime (pre/post-processing). */
  runtime: string;
  onnxruntime: string;
  /** A module whose default export is `{ detectionPath, recognitionPath, dictionaryPath }`. */
  models: string;
}

export interface PpOcrWorkerData {
  packages: PpOcrPackages;
  /** onnxruntime intra-op threads per session. */
  threads: number;
}

export interface PageMessage {
  type: "page";
  id: number;
  width: number;
  height: number;
  /** 3 (RGB) */
  channels: number;
  pixels: ArrayBuffer;
  /** Int32Array over a SharedArrayBuffer; 1 = stop. */
  abort: Int32Array;
}

/** A recognised box, axis-aligned, in page pixels. */
export interface WorkerBox {
  text: string;
  score: number;
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** White margin around the image before detection, in image pixels: half the short side, within 32–96. */
export function marginFor(width: number, height: number): number {
  return Math.min(96, Math.max(32, Math.round(Math.min(width, height) / 2)));
}

/** The detector's input is scaled so that its long side is at most this (PaddleOCR's default: 960). */
export const DETECTION_LONG_SIDE = 1280;
/**
 * DB box score a detected box needs (PaddleOCR's default for PP-OCRv4/v5: 0.6;
 * its PP-OCRv6 presets: 0.45): at 0.6 a lone digit in a table cell ("2",
 * "5" in a quantity column) is dropped now and then; recognition's own score
 * (0.5, ppocr.ts) still drops boxes that hold no text.
 */
export const BOX_SCORE = 0.5;
/** Between two characters, a space is written where its probability passes this although "blank" wins. */
export const SPACE_PROBABILITY = 0.05;
/** An image at least this many times wider than high is a text line (read whole when nothing is detected). */
const LINE_ASPECT = 4;
/** PP-OCR recognition input: 48 pixels high, at least 320 wide. */
const REC_HEIGHT = 48;
const REC_MIN_WIDTH = 320;

/**
 * Greedy CTC decoding of one line: per time step the most likely class
 * (0 = blank; class i = dictionary[i - 1]), repeats collapsed, blanks
 * dropped; where blank wins but the space class (the last one) has a
 * probability over `spaceProbability`, a space, once, between characters.
 * Confidence: the mean probability of the characters written (spaces
 * excluded); 0 when none was.
 */
export function decodeCtc(probs: Float32Array, steps: number, classes: number, dictionary: readonly string[], spaceProbability: number): { text: string; score: number } {
  const space = classes - 1;
  let text = "";
  let last = -1;
  let sum = 0;
  let count = 0;
  for (let t = 0; t < steps; t++) {
    const row = t * classes;
    let best = 0;
    for (let c = 1; c < classes; c++) if (probs[row + c]! > probs[row + best]!) best = c;
    if (best === 0 && probs[row + space]! > spaceProbability) best = space;
    if (best === last) continue;
    last = best;
    if (best === 0) continue;
    const ch = dictionary[best - 1] ?? "";
    if (ch === " ") {
      if (text !== "" && !text.endsWith(" ")) text += " ";
      continue;
    }
    text += ch;
    sum += probs[row + best]!;
    count++;
  }
  return { text: text.trimEnd(), score: count ? sum / count : 0 };
}

export type WorkerReply =
  | { type: "ready"; loadMs: number }
  | { type: "init-error"; missing: string | null; message: string }
  | { type: "done"; id: number; boxes: WorkerBox[] }
  | { type: "failed"; id: number; aborted: boolean; message: string };

interface Point {
  x: number;
  y: number;
}
/** A detected box in the runtime's terms: axis-aligned bounds and, for quadrilaterals, the corners. */
interface PaddleBox {
  x: number;
  y: number;
  width: number;
  height: number;
  points?: [Point, Point, Point, Point];
}
interface PaddleImage {
  width: number;
  height: number;
  padding(options: { padding: number; color: number[] }): PaddleImage;
  crop(box: { x: number; y: number; width: number; height: number }): PaddleImage;
  cropRotated(points: [Point, Point, Point, Point]): PaddleImage;
  resize(size: { width: number; height: number }): PaddleImage;
  tensor(options: { mean_values: number[]; norm_values: number[]; channel_order: "bgr" | "rgb" }): Float32Array;
}
interface OrtTensor {
  data: unknown;
  dims: readonly number[];
}
interface OrtSession {
  inputNames: readonly string[];
  outputNames: readonly string[];
  run(feeds: Record<string, unknown>): Promise<Record<string, OrtTensor>>;
}
interface PaddleService {
  detectionService: { run(image: PaddleImage, options: { onProgress: () => void }): Promise<PaddleBox[]> };
  recognitionSession: OrtSession;
}
interface PaddleModule {
  PaddleOcrService: { createInstance(options: object): Promise<PaddleService> };
  Image: new (width: number, height: number, channels: number, data: Uint8Array) => PaddleImage;
}
interface OrtModule {
  InferenceSession: { create(model: ArrayBuffer, options?: object): Promise<unknown> };
  Tensor: new (type: "float32", data: Float32Array, dims: number[]) => unknown;
}

/** What a loaded worker reads pages with. */
interface Reader {
  service: PaddleService;
  Image: PaddleModule["Image"];
  ort: OrtModule;
  dictionary: string[];
}
interface ModelsModule {
  default: { detectionPath: string; recognitionPath: string; dictionaryPath: string };
}

class Missing extends Error {
  readonly spec: string;
  constructor(spec: string, cause: unknown) {
    super(`npm package '${spec}' is not installed`, { cause });
    this.spec = spec;
  }
}

class Aborted extends Error {}

async function load(spec: string): Promise<unknown> {
  try {
    return (await import(spec)) as unknown;
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_MODULE_NOT_FOUND") throw new Missing(spec, err);
    throw err;
  }
}

async function bytes(path: string): Promise<ArrayBuffer> {
  const b = await readFile(path);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

async function createReader(data: PpOcrWorkerData): Promise<Reader> {
  const { PaddleOcrService, Image } = (await load(data.packages.runtime)) as PaddleModule;
  const ort = (await load(data.packages.onnxruntime)) as OrtModule;
  const models = ((await load(data.packages.models)) as ModelsModule).default;
  // The runtime creates its sessions without options; this sets the thread pool.
  const sessionOptions = { intraOpNumThreads: data.threads, interOpNumThreads: 1, executionMode: "sequential" };
  const threaded = { ...ort, InferenceSession: { ...ort.InferenceSession, create: (model: ArrayBuffer, options?: object) => ort.InferenceSession.create(model, { ...sessionOptions, ...options }) } };
  // ppocr_keys_v1 plus the space the recognition model was trained with (PaddleOCR's use_space_char).
  const dictionary = [...(await readFile(models.dictionaryPath, "utf8")).trimEnd().split(/\r?\n/), " "];
  const service = await PaddleOcrService.createInstance({
    ort: threaded,
    // PaddleOCR's DB detection settings (pixel threshold 0.3, unclip 1.5) but a larger input and a lower box score (see above).
    modelPreset: "PP-OCRv5_mobile",
    detection: { modelBuffer: await bytes(models.detectionPath), maxSideLength: DETECTION_LONG_SIDE, boxScoreThreshold: BOX_SCORE },
    recognition: { modelBuffer: await bytes(models.recognitionPath), charactersDictionary: dictionary },
  });
  return { service, Image, ort, dictionary };
}

/** One box's text: cropped (straightened when it is a tilted quadrilateral), 48 pixels high at its own width, CTC-decoded. */
async function recogniseBox(reader: Reader, image: PaddleImage, box: PaddleBox): Promise<{ text: string; score: number }> {
  const crop = box.points ? image.cropRotated(box.points) : image.crop(box);
  const width = Math.max(1, Math.ceil((REC_HEIGHT * crop.width) / crop.height));
  const inputWidth = Math.max(REC_MIN_WIDTH, width);
  // PP-OCR's normalisation to [-1, 1], BGR; the right of a narrow line stays 0 (PaddleOCR pads the same way).
  const pixels = crop.resize({ width, height: REC_HEIGHT }).tensor({ mean_values: [127.5, 127.5, 127.5], norm_values: [1 / 127.5, 1 / 127.5, 1 / 127.5], channel_order: "bgr" });
  const input = new Float32Array(3 * REC_HEIGHT * inputWidth);
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < REC_HEIGHT; y++) input.set(pixels.subarray((c * REC_HEIGHT + y) * width, (c * REC_HEIGHT + y + 1) * width), (c * REC_HEIGHT + y) * inputWidth);
  }
  const session = reader.service.recognitionSession;
  const out = await session.run({ [session.inputNames[0] ?? "x"]: new reader.ort.Tensor("float32", input, [1, 3, REC_HEIGHT, inputWidth]) });
  const probs = out[session.outputNames[0] ?? ""] ?? Object.values(out)[0];
  if (!probs || !(probs.data instanceof Float32Array) || probs.dims.length !== 3) throw new Error("the recognition model gave no [1, steps, classes] output");
  return decodeCtc(probs.data, probs.dims[1]!, probs.dims[2]!, reader.dictionary, SPACE_PROBABILITY);
}

/** Every text box of a page, in page pixels (see the module comment); `check` runs between steps and throws to stop. */
async function readPage(reader: Reader, m: PageMessage, check: () => void): Promise<WorkerBox[]> {
  const margin = marginFor(m.width, m.height);
  const image = new reader.Image(m.width, m.height, m.channels, new Uint8Array(m.pixels)).padding({ padding: margin, color: [255, 255, 255] });
  let boxes = await reader.service.detectionService.run(image, { onProgress: check });
  if (boxes.length === 0 && m.width >= LINE_ASPECT * m.height) boxes = [{ x: margin, y: margin, width: m.width, height: m.height }];
  const out: WorkerBox[] = [];
  for (const box of boxes) {
    if (box.width <= 0 || box.height <= 0) continue;
    check();
    const { text, score } = await recogniseBox(reader, image, box);
    const clamp = (v: number, max: number) => Math.min(max, Math.max(0, v));
    out.push({
      text,
      score,
      left: clamp(box.x - margin, m.width),
      top: clamp(box.y - margin, m.height),
      right: clamp(box.x + box.width - margin, m.width),
      bottom: clamp(box.y + box.height - margin, m.height),
    });
  }
  return out;
}

async function main(): Promise<void> {
  const port = parentPort;
  // Imported rather than started as ppocr.ts starts it (the main thread, a test's own worker): nothing to do.
  if (!port || !(workerData as Partial<PpOcrWorkerData> | null)?.packages) return;
  const post = (m: WorkerReply) => port.postMessage(m);
  const started = performance.now();
  let reader: Reader;
  try {
    reader = await createReader(workerData as PpOcrWorkerData);
  } catch (err) {
    post({ type: "init-error", missing: err instanceof Missing ? err.spec : null, message: err instanceof Error ? err.message : String(err) });
    return;
  }
  post({ type: "ready", loadMs: performance.now() - started });

  // The pool sends one page at a time; a queue keeps the order if it ever sends more.
  let chain = Promise.resolve();
  port.on("message", (m: PageMessage) => {
    chain = chain.then(async () => {
      const stopIfAborted = () => {
        if (Atomics.load(m.abort, 0) !== 0) throw new Aborted("aborted");
      };
      try {
        stopIfAborted();
        const boxes = await readPage(reader, m, stopIfAborted);
        post({ type: "done", id: m.id, boxes });
      } catch (err) {
        post({ type: "failed", id: m.id, aborted: err instanceof Aborted, message: err instanceof Error ? err.message : String(err) });
      }
    });
  });
}

void main();
