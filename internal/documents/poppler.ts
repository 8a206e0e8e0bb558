/**
 * Running poppler's tools (`pdfinfo`, `pdftoppm`) for `pdf.ts`: a private
 * temporary folder, one deadline that joins the caller's signal and a time
 * limit (with a clock that can be paused), and a runner that turns the
 * tools' failures into {@link FolioError}s.
 */
import { execFile, type ChildProcess } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parserEnv } from "../platform/childenv/index.ts";
import { jailed, jailGone, signalJailed, type JailAccess } from "../platform/jail/index.ts";
import { FolioError } from "../platform/errors/index.ts";

/** pdfinfo's output is a few lines per page; anything near this is not poppler talking. */
const MAX_TOOL_OUTPUT_BYTES = 4 * 1024 * 1024;

export function privateDir(): Promise<string> {
  // mkdtemp creates the folder with mode 0700.
  return mkdtemp(join(tmpdir(), "folio-pdf-"));
}

/** The caller's signal plus a time limit, and what to throw when either fires. */
export interface Deadline {
  signal: AbortSignal;
  remainingMs(): number;
  /** Stops the clock: the time limit does not run while the work waits (or is done). */
  pauseClock(): void;
  resumeClock(): void;
  /** Turns a failure into the error the caller should see. */
  translate(err: unknown): unknown;
  dispose(): void;
}

class TimedOut extends Error {}

export function deadline(timeoutMs: number, caller: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  const fire = () => controller.abort(new TimedOut());
  // The clock: `left` ms remained at `since`; no timer while paused.
  let left = timeoutMs;
  let since = Date.now();
  let timer: NodeJS.Timeout | undefined = setTimeout(fire, timeoutMs);
  const onAbort = () => controller.abort(caller?.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener("abort", onAbort, { once: true });
  const pauseClock = () => {
    if (!timer) return;
    clearTimeout(timer);
    timer = undefined;
    left -= Date.now() - since;
  };
  return {
    signal: controller.signal,
    remainingMs: () => (timer ? left - (Date.now() - since) : left),
    pauseClock,
    resumeClock() {
      if (timer || controller.signal.aborted) return;
      since = Date.now();
      timer = setTimeout(fire, Math.max(0, left));
    },
    translate(err) {
      if (caller?.aborted) return caller.reason;
      if (err instanceof TimedOut || controller.signal.reason instanceof TimedOut) {
        return new FolioError("timeout", `rendering the PDF took longer than ${formatSeconds(timeoutMs)}`, { cause: err });
      }
      return err;
    },
    dispose() {
      pauseClock();
      caller?.removeEventListener("abort", onAbort);
    },
  };
}

function formatSeconds(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`;
}

interface ToolError extends Error {
  code?: string | number | null;
  killed?: boolean;
  signal?: NodeJS.Signals | null;
  stderr?: string;
}

/** A running poppler tool, for pausing it: {@link signalTool}. */
export interface ToolChild {
  child: ChildProcess;
  /** Started in the jail as a process group of its own (bwrap, its init and the tool). */
  jailed: boolean;
}

/** Sends SIGSTOP or SIGCONT to a running tool: to its jail's whole process group when jailed. */
export function signalTool(t: ToolChild, signal: "SIGSTOP" | "SIGCONT"): boolean {
  return signalJailed(t.child, t.jailed, signal);
}

/**
 * Runs a poppler tool (no shell), in the process's parser jail
 * (platform/jail) with `access` to the document and the output folder;
 * rejects with a FolioError, or with the signal's reason when aborted.
 * `onChild` gets the process (to pause it).
 */
export function tool(cmd: "pdfinfo" | "pdftoppm", args: string[], access: JailAccess, d: Deadline, onChild?: (child: ToolChild) => void): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    if (d.signal.aborted) return reject(d.signal.reason);
    const jail = jailed(cmd, args, access);
    const child = execFile(
      jail.command,
      jail.args,
      // The document is hostile: poppler gets none of this process's secrets (PATH, locale, fontconfig only).
      { env: parserEnv({ set: jail.env }), signal: d.signal, killSignal: "SIGKILL", maxBuffer: MAX_TOOL_OUTPUT_BYTES, encoding: "utf8", windowsHide: true },
      (err: ToolError | null, stdout, stderr) => {
        if (!err) return resolve({ stdout, stderr });
        if (d.signal.aborted) {
          // Node answers an abort at once, while the killed process may still be running: wait for it
          // to be gone, so that whoever awaits this (close(), a cleanup) never races a live pdftoppm.
          // Jailed, the abort killed bwrap only: the whole group is killed, and waited for, too.
          const pid = child.pid;
          if (jail.detached) signalJailed(child, true, "SIGKILL");
          const gone = () => void (jail.detached && pid !== undefined ? jailGone(pid) : Promise.resolve()).then(() => reject(d.signal.reason));
          if (child.exitCode === null && child.signalCode === null) return void child.once("exit", gone);
          return gone();
        }
        if (err.code === "ENOENT") {
          return reject(new FolioError("service_unavailable", `${cmd} (poppler-utils) is not installed on this service`, { cause: err }));
        }
        if (err.code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER") return reject(unreadable(`${cmd} produced too much output`, err));
        // bwrap's own failure (no user namespaces, a path to bind gone) exits 1 like a damaged PDF: it is ours, not the document's.
        if (jail.detached && /^bwrap: /m.test(stderr)) return reject(new FolioError("internal_error", `${cmd} could not start in its jail`, { cause: err }));
        // poppler exit codes: 1 error opening the PDF, 3 permissions; both are the document's fault.
        if (/incorrect password/i.test(stderr)) {
          return reject(new FolioError("invalid_request", "the PDF is protected by a password; send it without one", { cause: err }));
        }
        if (err.code === 1 || err.code === 3) return reject(unreadable(firstPopplerError(stderr), err));
        // 99 ("other error") after a syntax error in the file: a page tree claiming no pages (or more pages than
        // objects) leaves no page 1, which it then reports as a wrong page range. The document's fault too.
        if (err.code === 99 && /^Syntax Error/m.test(stderr) && /^Command Line Error: Wrong page range/m.test(stderr)) return reject(unreadable(firstPopplerError(stderr), err));
        // Its exit status or signal only: the error's own message repeats the command line (our temporary paths) and stderr, which stay in `cause`.
        return reject(new FolioError("internal_error", `${cmd} failed (${exitOf(err)})`, { cause: err }));
      },
    );
    onChild?.({ child, jailed: jail.detached });
  });
}

function exitOf(err: ToolError): string {
  if (typeof err.code === "number") return `exit ${err.code}`;
  if (err.signal) return err.signal;
  return typeof err.code === "string" ? err.code : "no exit status";
}

function firstPopplerError(stderr: string): string {
  return stderr.split("\n").find((l) => /error/i.test(l))?.trim() ?? "poppler could not open it";
}

/** The 400 for a PDF poppler cannot read (or a page it cannot render). */
export function unreadable(detail: string, cause?: unknown): FolioError {
  // The detail goes to `cause` (logs), not the message: it can name our temporary paths.
  return new FolioError("invalid_request", "the PDF is damaged or not a PDF and could not be read", { cause: new Error(detail, { cause }) });
}
