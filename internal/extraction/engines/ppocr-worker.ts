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
 * Protocol (see the message types below): after start, one `ready` or
 * `init-error`; then for each `page` exactly one `done` or `failed`.
 * Cancellation is cooperative: the page carries a shared Int32 flag that the
 * main thread sets to 1; it is checked at every progress event of the
 * pipeline (before and after detection, after each recognised box), and a
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

export type WorkerReply =
  | { type: "ready"; loadMs: number }
  | { type: "init-error"; missing: string | null; message: string }
  | { type: "done"; id: number; boxes: WorkerBox[] }
  | { type: "failed"; id: number; aborted: boolean; message: string };

interface PaddleResult {
  text: string;
  confidence: number;
  box: { x: number; y: number; width: number; height: number };
}
interface PaddleService {
  recognize(input: { width: number; height: number; data: Uint8Array }, options: { onProgress: () => void }): Promise<PaddleResult[]>;
}
interface PaddleModule {
  PaddleOcrService: { createInstance(options: object): Promise<PaddleService> };
}
interface OrtModule {
  InferenceSession: { create(model: ArrayBuffer, options?: object): Promise<unknown> };
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

async function createService(data: PpOcrWorkerData): Promise<PaddleService> {
  const { PaddleOcrService } = (await load(data.packages.runtime)) as PaddleModule;
  const ort = (await load(data.packages.onnxruntime)) as OrtModule;
  const models = ((await load(data.packages.models)) as ModelsModule).default;
  // The runtime creates its sessions without options; this sets the thread pool.
  const sessionOptions = { intraOpNumThreads: data.threads, interOpNumThreads: 1, executionMode: "sequential" };
  const threaded = { ...ort, InferenceSession: { ...ort.InferenceSession, create: (model: ArrayBuffer, options?: object) => ort.InferenceSession.create(model, { ...sessionOptions, ...options }) } };
  // ppocr_keys_v1 plus the space the recognition model was trained with (PaddleOCR's use_space_char).
  const dictionary = [...(await readFile(models.dictionaryPath, "utf8")).trimEnd().split(/\r?\n/), " "];
  return PaddleOcrService.createInstance({
    ort: threaded,
    // PaddleOCR's default DB detection settings (long side 960, thresholds 0.3/0.6, unclip 1.5) and 48-pixel CTC recognition.
    modelPreset: "PP-OCRv5_mobile",
    detection: { modelBuffer: await bytes(models.detectionPath) },
    recognition: { modelBuffer: await bytes(models.recognitionPath), charactersDictionary: dictionary },
  });
}

async function main(): Promise<void> {
  const port = parentPort;
  // Imported on the main thread (only its types should be): nothing to do.
  if (!port) return;
  const post = (m: WorkerReply) => port.postMessage(m);
  const started = performance.now();
  let service: PaddleService;
  try {
    service = await createService(workerData as PpOcrWorkerData);
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
        const results = await service.recognize({ width: m.width, height: m.height, data: new Uint8Array(m.pixels) }, { onProgress: stopIfAborted });
        const boxes = results.map((r) => ({ text: r.text, score: r.confidence, left: r.box.x, top: r.box.y, right: r.box.x + r.box.width, bottom: r.box.y + r.box.height }));
        post({ type: "done", id: m.id, boxes });
      } catch (err) {
        post({ type: "failed", id: m.id, aborted: err instanceof Aborted, message: err instanceof Error ? err.message : String(err) });
      }
    });
  });
}

void main();
