/**
 * Resident tesseract: `native/tesseract-server.cc` (built by `make deps` as
 * `native/build/folio-tesseract`) keeps tesseract's models loaded and reads
 * page after page, where the CLI is a new process that loads its model for
 * every page (docs/adr/0009-resident-tesseract.md). `local/tesseract` sends
 * its readings here when the program is built and `FOLIO_TESSERACT_RESIDENT`
 * allows it, else it runs the CLI as before (engines/tesseract.ts).
 *
 * - **No image format reaches it**: a request carries raw pixels (a PDF page's
 *   PGM from pdftoppm, or what the image decoder child decoded), so the
 *   long-lived process runs tesseract's recognition on client data, never an
 *   image decoder. It runs in the parser jail (platform/jail) with the
 *   environment of every parser (no secret), as the CLI does.
 * - **A pool of programs**, one request each at a time: a reading takes an
 *   idle one or starts one (~0.1 s to load a language, done once); one left
 *   idle for {@link IDLE_MS} exits, so an idle service holds none.
 * - **A program that fails is not reused**: one that dies, runs past the
 *   deadline or is aborted is killed and the reading it served fails as the
 *   CLI's would (`internal_error`, or the abort's reason); the next reading
 *   starts a new one.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { parserEnv } from "../../platform/childenv/index.ts";
import { encodeFrame, FrameReader } from "../../platform/decoder/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { jailed, parserJail, signalJailed, type JailAccess, type ParserJailMode } from "../../platform/jail/index.ts";
import { settleAfter, watchDeadline } from "./deadline.ts";

/** A resident program left idle this long exits (started again by the next reading). */
export const IDLE_MS = 30_000;
/** The program's path under the project root (`make deps` builds it: scripts/build-native.sh). */
export const RESIDENT_PROGRAM = "native/build/folio-tesseract";

/** The tesseract CLI, from PATH: what `local/tesseract` runs where no command is configured, and lists the installed languages with. */
export const TESSERACT_COMMAND = "tesseract";

/**
 * tesseract's environment (platform/childenv): PATH, locale and where its
 * traineddata is; the same for the CLI (listing and reading) and the resident
 * program, so all see the same languages.
 */
export function tesseractEnv(set: Record<string, string> = {}): Record<string, string> {
  return parserEnv({ keep: ["TESSDATA_PREFIX"], set });
}

/** Raw pixels, row by row: grey, RGB or RGBA. */
export interface RawPage {
  width: number;
  height: number;
  channels: 1 | 3 | 4;
  data: Uint8Array;
  /** The image's stated resolution, when it states one (tesseract estimates it otherwise, as the CLI does for a PGM). */
  dpi: number | null;
}

export interface ResidentReading {
  /** `tsv`: the CLI's TSV, header line included; `hocr`: the page's hOCR (its `ocr_page` and what it holds). */
  output: "tsv" | "hocr";
  /** tesseract's `-l`. */
  lang: string;
  /** tesseract's `--psm`. */
  psm: number;
  page: RawPage;
  pageNumber: number;
}

export interface ResidentOptions {
  /** The program. */
  program: string;
  /** OMP_THREAD_LIMIT of each program. */
  threads: number;
  /** What the jail shows it besides the system (tesseract's models outside /usr). */
  access: JailAccess;
  /** Largest answer accepted (a runaway reading is killed). */
  maxOutputBytes: number;
  idleMs?: number;
}

/**
 * Where `make deps` puts the program, looked for under the project root when
 * run from source and beside `dist/` when compiled (the image copies it
 * there: deploy/docker/Dockerfile); undefined when it is not built.
 */
export function builtResidentProgram(here = dirname(fileURLToPath(import.meta.url))): string | undefined {
  const root = resolve(here, "..", "..", "..");
  return [resolve(root, RESIDENT_PROGRAM), resolve(root, "..", RESIDENT_PROGRAM)].find((p) => existsSync(p));
}

/** A pool of resident programs (see the module comment). */
export class ResidentTesseract {
  readonly #opts: ResidentOptions;
  readonly #idle: Resident[] = [];
  readonly #all = new Set<Resident>();

  constructor(opts: ResidentOptions) {
    this.#opts = opts;
  }

  /** Programs running now (idle or reading): for tests and metrics. */
  get size(): number {
    return this.#all.size;
  }

  /**
   * Reads a page. Rejects with `signal.reason` when it aborts, a FolioError
   * `timeout` past `timeoutMs`, `service_unavailable` when the program cannot
   * start, `internal_error` when it fails on the page.
   */
  async read(req: ResidentReading, signal: AbortSignal, timeoutMs: number): Promise<string> {
    signal.throwIfAborted();
    const r = this.#take();
    try {
      return await r.read(req, signal, timeoutMs);
    } finally {
      this.#give(r);
    }
  }

  /** Ends every program (idle ones at once; a reading in flight fails). */
  async close(): Promise<void> {
    const all = [...this.#all];
    this.#idle.length = 0;
    this.#all.clear();
    await Promise.all(all.map((r) => r.stop()));
  }

  #take(): Resident {
    for (;;) {
      const r = this.#idle.pop();
      if (!r) break;
      if (r.usable(parserJail())) {
        r.busy();
        return r;
      }
      void r.stop();
    }
    const r = new Resident(this.#opts, () => this.#forget(r));
    this.#all.add(r);
    return r;
  }

  #give(r: Resident): void {
    if (!this.#all.has(r) || !r.usable(parserJail())) return;
    r.idle(this.#opts.idleMs ?? IDLE_MS);
    this.#idle.push(r);
  }

  #forget(r: Resident): void {
    this.#all.delete(r);
    const i = this.#idle.indexOf(r);
    if (i >= 0) this.#idle.splice(i, 1);
  }
}

/** The request header the program parses (native/tesseract-server.cc): its fields separated by spaces. */
function header(req: ResidentReading): string {
  if (!/^[A-Za-z0-9_+]{1,64}$/.test(req.lang)) throw new FolioError("invalid_request", `not a tesseract language: ${req.lang}`);
  const p = req.page;
  return [req.output, req.lang, req.psm, p.width, p.height, p.channels, Math.round(p.dpi ?? 0)].join(" ");
}

interface Waiting {
  resolve(text: string): void;
  reject(err: unknown): void;
  pageNumber: number;
}

/** One resident program. */
class Resident {
  readonly #proc: ChildProcessWithoutNullStreams;
  readonly #detached: boolean;
  readonly #jail: ParserJailMode;
  readonly #maxOutput: number;
  readonly #reader = new FrameReader();
  readonly #gone: Promise<void>;
  #waiting: Waiting | undefined;
  #received = 0;
  #stderr = "";
  #failure: unknown;
  #exited = false;
  /** Told to exit (its stdin closed): never given a reading again, though it has not exited yet. */
  #stopping = false;
  #idleTimer: NodeJS.Timeout | undefined;

  constructor(opts: ResidentOptions, onGone: () => void) {
    this.#jail = parserJail();
    this.#maxOutput = opts.maxOutputBytes;
    // Long-lived: no CPU limit (each reading has its deadline), as the image decoder child.
    const jail = jailed(opts.program, [], { ...opts.access, read: [...(opts.access.read ?? []), opts.program], limits: { cpuSeconds: null } });
    this.#detached = jail.detached;
    this.#proc = spawn(jail.command, jail.args, {
      env: tesseractEnv({ ...jail.env, OMP_THREAD_LIMIT: String(opts.threads) }),
      stdio: ["pipe", "pipe", "pipe"],
      windowsHide: true,
    });
    this.#gone = new Promise((done) => {
      this.#proc.on("error", (err: NodeJS.ErrnoException) => {
        this.#fail(
          err.code === "ENOENT"
            ? new FolioError("service_unavailable", "the resident tesseract program is missing", { cause: err })
            : new FolioError("internal_error", "the resident tesseract program could not be started", { cause: err }),
        );
      });
      this.#proc.on("close", (code, sig) => {
        this.#exited = true;
        clearTimeout(this.#idleTimer);
        const page = this.#waiting?.pageNumber;
        this.#fail(new FolioError("internal_error", `tesseract failed on page ${page}`, { cause: new Error(`the resident tesseract program exited with ${sig ?? code}: ${this.#stderr.trim()}`) }));
        onGone();
        done();
      });
    });
    this.#proc.stdin.on("error", () => {});
    this.#proc.stderr.setEncoding("utf8");
    this.#proc.stderr.on("data", (s: string) => {
      // tesseract's warnings of the last pages, for an error's cause.
      this.#stderr = (this.#stderr + s).slice(-4096);
    });
    this.#proc.stdout.on("data", (chunk: Buffer) => this.#data(chunk));
  }

  usable(jail: ParserJailMode): boolean {
    return !this.#exited && !this.#stopping && this.#failure === undefined && this.#jail === jail;
  }

  busy(): void {
    clearTimeout(this.#idleTimer);
  }

  idle(ms: number): void {
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => void this.stop(), ms);
    this.#idleTimer.unref();
  }

  read(req: ResidentReading, signal: AbortSignal, timeoutMs: number): Promise<string> {
    return new Promise((resolveRead, rejectRead) => {
      const unwatch = watchDeadline(
        signal,
        timeoutMs,
        () => new FolioError("timeout", `tesseract took longer than ${Math.round(timeoutMs / 1000)} s on page ${req.pageNumber}`),
        (why) => this.#kill(why),
      );
      const done = () => {
        unwatch();
        this.#waiting = undefined;
      };
      this.#waiting = { pageNumber: req.pageNumber, ...settleAfter(done, resolveRead, rejectRead) };
      if (this.#failure !== undefined) return this.#waiting.reject(this.#failure);
      this.#received = 0;
      try {
        for (const b of encodeFrame(header(req), req.page.data)) this.#proc.stdin.write(b);
      } catch (err) {
        this.#waiting.reject(err);
      }
    });
  }

  /** Closes its stdin (it exits at the end of its input) and waits; killed if it lingers. */
  async stop(): Promise<void> {
    clearTimeout(this.#idleTimer);
    // A reading asked for between this and its exit would be written to a closed stdin and fail with the exit.
    this.#stopping = true;
    if (!this.#exited) {
      this.#proc.stdin.end();
      const t = setTimeout(() => this.#kill(new Error("stopped")), 2_000);
      t.unref();
      await this.#gone;
      clearTimeout(t);
    }
  }

  #data(chunk: Buffer): void {
    this.#received += chunk.length;
    if (this.#received > this.#maxOutput) return this.#kill(new FolioError("internal_error", `tesseract produced more than ${this.#maxOutput} bytes for page ${this.#waiting?.pageNumber}`));
    let frames;
    try {
      frames = this.#reader.push(chunk);
    } catch (err) {
      return this.#kill(new FolioError("internal_error", "the resident tesseract program answered outside its protocol", { cause: err }));
    }
    for (const f of frames) {
      const w = this.#waiting;
      if (!w) return this.#kill(new FolioError("internal_error", "the resident tesseract program answered unasked"));
      const h = f.header as { ok?: boolean; error?: string; message?: string };
      if (h.ok) w.resolve(f.body.toString("utf8"));
      else w.reject(new FolioError("internal_error", `tesseract failed on page ${w.pageNumber}`, { cause: new Error(`${h.error}: ${h.message}`) }));
    }
  }

  /** Kills the program; the reading in flight fails with `why`. */
  #kill(why: unknown): void {
    this.#fail(why);
    if (!this.#exited) signalJailed(this.#proc, this.#detached, "SIGKILL");
  }

  #fail(why: unknown): void {
    this.#failure ??= why;
    this.#waiting?.reject(why);
  }
}
