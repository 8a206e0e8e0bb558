/**
 * The warm office: in pre-started mode (`converter.ts`) LibreOffice is
 * started before its document exists (headless, with an empty Writer
 * document so that it outlives a conversion), and the conversion is then
 * sent to the running LibreOffice over its own single-instance pipe
 * ({@link officeRequest}) instead of starting it. Here are its start, the
 * pipe's protocol, the warm-up conversions of the sandbox that is
 * checkpointed ({@link warmUpOffice}) and the conversion to PDF through it
 * ({@link toPdfWarm}, which falls back to `office.ts`).
 *
 * Bundled into the sandbox program with `converter.ts`, under its rule on
 * imports.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import { createConnection, type Socket } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { ConverterOptions } from "./converter.ts";
import { JobError } from "./job-error.ts";
import { OFFICE_FLAGS, checkInput, conversionArgs, madePdf, toPdf, type PdfJob } from "./office.ts";
import { SOFFICE_BIN, fileUrl } from "./profile.ts";
import { MESSAGE_BYTES, toolEnv } from "./tools.ts";
import { WARM_UP_STEPS, warmUpSources } from "./warmup.ts";

/**
 * How long a pre-started LibreOffice may take to start (0.5 s on the host,
 * about 1.5 s under gVisor). Past it the document gets a LibreOffice of its
 * own.
 */
export const OFFICE_START_MS = 60_000;
/** Poll interval while waiting for LibreOffice's pipe to appear. */
const OFFICE_POLL_MS = 25;

/** A LibreOffice started ahead of its document (pre-started mode). */
export interface WarmOffice {
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
export function startOffice(profile: string, home: string, options: ConverterOptions): WarmOffice {
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
export function holdOffice(socketPath: string, until: number): Promise<Socket | undefined> {
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
export async function warmUpOffice(office: WarmOffice, socket: string, scratch: string, options: ConverterOptions): Promise<number | undefined> {
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

/**
 * Converts through the pre-started LibreOffice. When it cannot be reached
 * (it died, or never opened its pipe), LibreOffice is started for the
 * document as in the normal mode: slower, same result.
 */
export async function toPdfWarm(office: WarmOffice, job: PdfJob): Promise<{ pdf: string; warm: boolean }> {
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
