/**
 * Image bytes a client sent, decoded in a child process that holds no secret
 * (docs/sandbox-parsers.md "Image decoders in a child process", issue 25).
 *
 * sharp (libvips and the image libraries under it: libpng, libjpeg, libtiff,
 * libwebp, giflib…) is native code that has had exploitable bugs. Run in the
 * edge or the extraction service, an image that takes it over would hold
 * `DATABASE_URL` or the upstream API key and the service's network. So every
 * decode of client bytes goes to one long-lived child (`child.ts`), started
 * with the allow-listed environment of every parser (platform/childenv) and,
 * with FOLIO_PARSER_JAIL=bwrap, in the parser jail (platform/jail: no
 * network, a read-only system, limits). What comes back is pixels with a
 * size the child states, or a PNG the child wrote; the services then work on
 * raw pixels only ({@link fromPixels}), which parses no format.
 *
 * - One child a process, started at the first decode, kept while the
 *   process lives (a start costs ~60 ms and ~45 MB; a page ~4 ms of copying
 *   through the pipe).
 * - A child that dies (a crash in a decoder, the jail's limits, a kill) fails
 *   nobody at once: the decodes it was serving are sent again to a new child;
 *   a decode whose child dies twice is refused as an image that cannot be
 *   decoded ({@link ImageDecodeError}). A decode that runs past
 *   {@link DECODE_DEADLINE_MS} kills its child the same way.
 * - A caller's abort settles its decode at once; the child's answer is
 *   dropped when it comes.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import sharp, { type Sharp } from "sharp";

import { parserEnv } from "../childenv/index.ts";
import { jailed, parserJail, signalJailed, type ParserJailMode } from "../jail/index.ts";
import { encodeFrame, FrameReader } from "./frames.ts";

/** The frames of the child's pipe, also spoken by the resident tesseract (extraction/engines/tesseract-server.ts). */
export { encodeFrame, FrameReader };

/** A decode that takes longer than this kills its child (a hostile image spinning a decoder): twice the slowest 40 MP TIFF seen. */
export const DECODE_DEADLINE_MS = 60_000;
/**
 * The child's limits in the jail: no CPU limit (it lives as long as its
 * process; each decode has its deadline instead), and room for Node's own
 * reservations besides a few 40 MP images decoded at once (160 MB each as
 * RGBA, plus libvips' buffers).
 */
const DECODER_LIMITS = { cpuSeconds: null, addressSpaceBytes: 8 * 1024 ** 3 } as const;
/** A decode is tried on this many children before the image is blamed for their deaths. */
const ATTEMPTS = 2;

/** An image the decoder could not decode (sharp's reason, or the decoder's death on it); callers map it to their answer. */
export class ImageDecodeError extends Error {
  override readonly name = "ImageDecodeError";
}

export interface DecodeOptions {
  /** sharp's limitInputPixels: a larger image is refused ("Input image exceeds pixel limit"). */
  maxPixels?: number;
  /** A damaged image is an error (sharp's failOn "warning") rather than decoded as far as it goes. */
  strict?: boolean;
  signal?: AbortSignal;
}

/** Decoded pixels, row by row, `channels` bytes a pixel. */
export interface Pixels {
  width: number;
  height: number;
  channels: number;
  data: Buffer;
  /**
   * The resolution the image states (pixels per inch), as tesseract's own
   * image reader takes it (a PNG's pHYs, a JPEG's JFIF density in inches or
   * cm, a TIFF's); null when it states none (child.ts `statedDpi`).
   */
  density: number | null;
}

/**
 * The first page of an image as pixels: as stored (`{}`), grey (`grey`:
 * sharp keeps a grey image's alpha, so take the first of `channels`), or
 * three sRGB channels on white (`rgbOnWhite`).
 */
export function decodePixels(bytes: Uint8Array, options: DecodeOptions & { grey?: boolean; rgbOnWhite?: boolean } = {}): Promise<Pixels> {
  const { signal, ...rest } = options;
  return ask("pixels", rest, bytes, signal).then(({ info, body }) => ({
    width: Number(info.width),
    height: Number(info.height),
    channels: Number(info.channels),
    data: body,
    density: typeof info.density === "number" ? info.density : null,
  }));
}

/**
 * The first page of an image as a PNG the child wrote: turned clockwise by
 * `rotate` degrees (corners white), enlarged by `scale` (Lanczos; refused past
 * `maxOutputPixels`).
 */
export function decodeToPng(
  bytes: Uint8Array,
  options: DecodeOptions & { rotate?: number; scale?: number; maxOutputPixels?: number; compressionLevel?: number } = {},
): Promise<{ png: Buffer; width: number; height: number; density: number | null }> {
  const { signal, ...rest } = options;
  return ask("png", rest, bytes, signal).then(({ info, body }) => ({
    png: body,
    width: Number(info.width),
    height: Number(info.height),
    density: typeof info.density === "number" ? info.density : null,
  }));
}

/** An image's size and stated resolution, from its header, read by the child. */
export function imageMetadata(bytes: Uint8Array, options: DecodeOptions = {}): Promise<{ width: number; height: number; density: number | null }> {
  const { signal, ...rest } = options;
  return ask("metadata", rest, bytes, signal).then(({ info }) => ({
    width: Number(info.width),
    height: Number(info.height),
    density: typeof info.density === "number" ? info.density : null,
  }));
}

/**
 * sharp in this process, on pixels already decoded (by the child, or a PDF
 * page's PGM whose header `formats.parsePgm` read): raw input names its own
 * size and parses no format. The one way the services use sharp
 * (test/architecture.test.ts checks that nothing else imports it).
 */
export function fromPixels(data: Uint8Array, raw: { width: number; height: number; channels: 1 | 2 | 3 | 4 }): Sharp {
  return sharp(Buffer.from(data.buffer, data.byteOffset, data.length), { raw });
}

/** Stops the child (tests; a process that ends does not need it: the child ends with its stdin). */
export async function stopDecoder(): Promise<void> {
  const c = current;
  current = undefined;
  if (!c) return;
  await c.stop();
}

/** The child's pid while one runs (tests find it in /proc). */
export function decoderPid(): number | undefined {
  return current?.pid;
}

// ---------------------------------------------------------------- the child

interface Pending {
  id: number;
  op: string;
  options: Record<string, unknown>;
  bytes: Uint8Array;
  attempts: number;
  deadline: NodeJS.Timeout | undefined;
  resolve(answer: { info: Record<string, unknown>; body: Buffer }): void;
  reject(err: unknown): void;
  settled: boolean;
}

let nextId = 1;
let current: Child | undefined;

function ask(op: string, options: Record<string, unknown>, bytes: Uint8Array, signal: AbortSignal | undefined): Promise<{ info: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const p: Pending = { id: nextId++, op, options, bytes, attempts: 0, deadline: undefined, settled: false, resolve: () => {}, reject: () => {} };
    const onAbort = () => settle(p, () => reject(signal!.reason));
    signal?.addEventListener("abort", onAbort, { once: true });
    p.resolve = (a) => settle(p, () => resolve(a));
    p.reject = (e) => settle(p, () => reject(e));
    child().send(p);
    function settle(q: Pending, then: () => void) {
      if (q.settled) return;
      q.settled = true;
      clearTimeout(q.deadline);
      signal?.removeEventListener("abort", onAbort);
      current?.forget(q);
      then();
    }
  });
}

/** The process's child, started now if none runs, or started anew when the process's jail changed (tests start services of both kinds in one process). */
function child(): Child {
  if (current && !current.gone && current.jail !== parserJail()) {
    void current.stop();
    current = undefined;
  }
  if (!current || current.gone) current = new Child();
  return current;
}

/** Where the child's program is: .ts beside this file when run from source, .js when compiled. */
const CHILD_FILE = fileURLToPath(new URL(import.meta.url.endsWith(".ts") ? "./child.ts" : "./child.js", import.meta.url));

/** What the jail shows the child besides the system: its folder, node itself, the packages, the package's manifest (its module type). */
function jailReads(): string[] {
  const sharpEntry = createRequire(import.meta.url).resolve("sharp");
  const marker = `${sep}node_modules${sep}`;
  const nodeModules = sharpEntry.slice(0, sharpEntry.lastIndexOf(marker) + marker.length - 1);
  return [dirname(CHILD_FILE), realpathSync(process.execPath), nodeModules, join(dirname(nodeModules), "package.json")];
}

class Child {
  readonly #proc: ChildProcessWithoutNullStreams;
  readonly #detached: boolean;
  readonly #pending = new Map<number, Pending>();
  readonly #reader = new FrameReader();
  #stderr = "";
  readonly jail: ParserJailMode = parserJail();
  gone = false;

  constructor() {
    const { command, args, env, detached } = jailed(process.execPath, [CHILD_FILE], { read: jailReads(), limits: DECODER_LIMITS }, this.jail);
    this.#detached = detached;
    // Not spawn's `detached`: jailed() starts the jail through setsid(1), which would fork (and its first process exit) in a group leader.
    this.#proc = spawn(command, args, { env: parserEnv({ set: env }), stdio: ["pipe", "pipe", "pipe"] });
    this.#proc.stdout.on("data", (chunk: Buffer) => this.#onData(chunk));
    this.#proc.stderr.on("data", (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString("utf8")).slice(-4096);
    });
    // A write to a child that just died: its exit handler sends the decodes again.
    this.#proc.stdin.on("error", () => {});
    this.#proc.on("error", (err) => this.#onGone(err));
    this.#proc.on("exit", (code, sig) => this.#onGone(new Error(`the image decoder exited (${sig ?? `code ${code}`}): ${this.#stderr.trim().split("\n").slice(-3).join(" | ")}`)));
    this.#idle();
  }

  get pid(): number | undefined {
    return this.#proc.pid;
  }

  send(p: Pending): void {
    p.attempts++;
    this.#pending.set(p.id, p);
    clearTimeout(p.deadline);
    p.deadline = setTimeout(() => this.#overdue(p), DECODE_DEADLINE_MS);
    p.deadline.unref();
    this.#busy();
    for (const part of encodeFrame({ id: p.id, op: p.op, options: p.options }, p.bytes)) this.#proc.stdin.write(part);
  }

  forget(p: Pending): void {
    this.#pending.delete(p.id);
    if (this.#pending.size === 0) this.#idle();
  }

  stop(): Promise<void> {
    if (this.gone) return Promise.resolve();
    return new Promise((resolve) => {
      this.#proc.once("exit", () => resolve());
      // Held until it has gone: an unreferenced child's exit would not keep this process waiting for it.
      this.#busy();
      this.#proc.stdin.end();
      setTimeout(() => signalJailed(this.#proc, this.#detached, "SIGKILL"), 2_000).unref();
    });
  }

  #onData(chunk: Buffer): void {
    let frames;
    try {
      frames = this.#reader.push(chunk);
    } catch (err) {
      signalJailed(this.#proc, this.#detached, "SIGKILL");
      this.#onGone(err);
      return;
    }
    for (const { header, body } of frames) {
      const h = header as { id: number; ok: boolean; info?: Record<string, unknown>; error?: string };
      const p = this.#pending.get(h.id);
      if (!p) continue; // its caller gave up (abort)
      if (h.ok) p.resolve({ info: h.info ?? {}, body });
      else p.reject(new ImageDecodeError(h.error ?? "the image could not be decoded"));
    }
  }

  /** A decode past its deadline: the child is killed, the others go to the next one. */
  #overdue(p: Pending): void {
    p.reject(new ImageDecodeError(`decoding the image took longer than ${DECODE_DEADLINE_MS / 1000} s`));
    signalJailed(this.#proc, this.#detached, "SIGKILL");
  }

  #onGone(cause: unknown): void {
    if (this.gone) return;
    this.gone = true;
    if (current === this) current = undefined;
    const orphans = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of orphans) {
      if (p.settled) continue;
      if (p.attempts >= ATTEMPTS) p.reject(new ImageDecodeError("the image decoder stopped while decoding this image", { cause }));
      else child().send(p);
    }
  }

  // The child and its pipes keep this process alive only while a decode waits on them.
  #busy(): void {
    this.#proc.ref();
    for (const pipe of this.#pipes()) pipe.ref();
  }

  #idle(): void {
    this.#proc.unref();
    for (const pipe of this.#pipes()) pipe.unref();
  }

  /** The child's pipes are sockets (net.Socket), which can be unreferenced; their stream types do not say so. */
  #pipes(): { ref(): void; unref(): void }[] {
    return [this.#proc.stdin, this.#proc.stdout, this.#proc.stderr] as unknown as { ref(): void; unref(): void }[];
  }
}
