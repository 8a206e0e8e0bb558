/**
 * Broker mode of the sandbox program: how a `kubernetes` sandbox pod gets
 * its document and returns its pages (or its PDF). The pod holds nothing but
 * the broker's address and a one-time token (env FOLIO_BROKER_ADDRESS,
 * FOLIO_BROKER_TOKEN):
 *
 * 1. FetchJob(token) → the job header, then the document in chunks;
 * 2. the document and `job.json` go into a private job folder under TMPDIR
 *    (the pod's tmpfs) and {@link runJob} converts it, exactly as in the
 *    job-folder mode the `runsc` backend uses;
 * 3. SubmitResult: `start{token}`, one `page` per PNG in order, `result`;
 *    with the header's output `pdf`, the finished job's PDF instead of the
 *    pages, in `pdf_chunk` messages of at most {@link PDF_CHUNK_BYTES} (one
 *    message would hold it all in both processes' memory), then `result`
 *    with `pdf` set. The finished job is read with `readOutput`, as the other
 *    backends read theirs;
 * 4. the {@link TerminationMessage} goes to FOLIO_TERMINATION_LOG
 *    (`/dev/termination-log`), where the operator reads it from the pod's
 *    status.
 *
 * Exit code 0 once the result was submitted, conversion failures included
 * (the failure travelled in the result); 1 when the exchange with the broker
 * failed. Every gRPC call has a deadline.
 *
 * Warm mode (a ConversionSandboxPool's pod: FOLIO_POOL set, docs/operator.md
 * "The warm pool"): LibreOffice is started first (the converter's pre-started
 * mode, in process), then FetchJob with the pod's own token is a long poll
 * of up to FOLIO_POOL_IDLE_SECONDS. The broker answers with exactly one
 * document and keeps the call open until the result is in; the program
 * converts through the running LibreOffice, submits, and exits. No document
 * within the idle time: exit 0 with `errorCode: "idle"` (the pool shrinks
 * that way). A pod never asks twice.
 *
 * This module is bundled into the sandbox program by esbuild, where the
 * `.proto` files are not at hand: the SandboxBroker service comes from the
 * protobufjs JSON descriptor that `make generate` writes from
 * `proto/folio/conversion/v1/conversion.proto`
 * (`internal/gen/proto/descriptors.ts`), loaded with proto-loader's
 * `fromJSON`. The program imports this module only in broker mode, so the
 * job-folder mode never loads gRPC.
 */
import { once } from "node:events";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { fromJSON } from "@grpc/proto-loader";
import type { JobHeader__Output } from "../../gen/proto/folio/conversion/v1/JobHeader.ts";
import type { ResultChunk } from "../../gen/proto/folio/conversion/v1/ResultChunk.ts";
import type { SandboxBrokerClient } from "../../gen/proto/folio/conversion/v1/SandboxBroker.ts";
// types.ts, not the operator's index.ts: the bundle must not pull in the Kubernetes client.
import { SANDBOX_ENV, type TerminationMessage } from "../../operator/types.ts";
import { FORMAT_EXTENSIONS, PAGE_DPI, pngSize } from "../../formats/index.ts";
import { parsePages, type PageSelection } from "../../formats/pages.ts";
import { conversionDescriptor } from "../../gen/proto/descriptors.ts";
import { MAX_MESSAGE_BYTES, PROTO_LOAD_OPTIONS } from "../../platform/grpc/load-options.ts";
import { PRESTART_FILE, runJob } from "../converter.ts";
import type { ConversionFormat, JobResult } from "../interface.ts";
import { readOutput, writeJob } from "../jobdir.ts";

/** FetchJob, connection included: the pod's network may take a moment to come up. */
const DEFAULT_FETCH_DEADLINE_MS = 60_000;
/** SubmitResult: up to FOLIO_CONVERSION_MAX_OUTPUT_BYTES of pages over the cluster network. */
const DEFAULT_SUBMIT_DEADLINE_MS = 120_000;
/** PDF bytes per SubmitResult message (the conversion service streams it on in the same size). */
const PDF_CHUNK_BYTES = 1024 * 1024;
/** The kubelet keeps at most 4096 bytes of a termination message; messages are cut well below. */
const MESSAGE_CHARS = 1000;

export interface BrokerModeOptions {
  /** host:port of the broker. */
  address: string;
  token: string;
  /** The prepared LibreOffice profile (read only; each job uses a copy). */
  profileDir: string;
  terminationLog: string;
  /** Where the private job folder goes (the pod's tmpfs). */
  scratchDir: string;
  /** Used when the job header carries none. */
  traceparent?: string;
  fetchDeadlineMs?: number;
  submitDeadlineMs?: number;
  /** One structured line per step; never given the token or the document. */
  log?: (fields: Record<string, unknown>) => void;
  /** Warm mode: the pool's name and how long to wait for a document (FOLIO_POOL, FOLIO_POOL_IDLE_SECONDS). */
  pool?: { name: string; idleMs: number };
}

/** Warm mode: how long LibreOffice may take to start before the pod asks for work anyway (it then starts one per document). */
const OFFICE_READY_WAIT_MS = 30_000;
/** Warm mode's default idle time when FOLIO_POOL_IDLE_SECONDS is missing or unusable. */
const DEFAULT_POOL_IDLE_MS = 600_000;

/** Reads the broker mode's settings from the environment (see `cmd/sandbox`). */
export function brokerModeOptions(env: Record<string, string | undefined>): BrokerModeOptions {
  const traceparent = env[SANDBOX_ENV.traceparent];
  return {
    address: env[SANDBOX_ENV.brokerAddress] ?? "",
    token: env[SANDBOX_ENV.brokerToken] ?? "",
    profileDir: env.FOLIO_PROFILE_DIR || "/opt/folio/profile",
    terminationLog: env.FOLIO_TERMINATION_LOG || "/dev/termination-log",
    scratchDir: env.TMPDIR || "/tmp",
    ...(traceparent ? { traceparent } : {}),
    ...(env[SANDBOX_ENV.pool] ? { pool: { name: env[SANDBOX_ENV.pool]!, idleMs: idleMs(env[SANDBOX_ENV.poolIdleSeconds]) } } : {}),
  };
}

function idleMs(value: string | undefined): number {
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_POOL_IDLE_MS;
}

/** A failure of the exchange with the broker (as opposed to a conversion failure, which is a result). */
class BrokerExchangeError extends Error {}

/**
 * Fetches, converts, submits and writes the termination message. Never
 * throws: every failure ends in the returned exit code and message.
 */
export async function runBrokerMode(options: BrokerModeOptions): Promise<ExchangeOutcome> {
  const started = performance.now();
  const log = options.log ?? (() => undefined);
  const { exitCode, message } = options.pool ? await runWarmMode(options, options.pool, log, started) : await runColdMode(options, log);
  return terminate(options, log, started, exitCode, message);
}

/** How the exchange with the broker ended: the process's exit code and its termination message. */
type ExchangeOutcome = { exitCode: 0 | 1; message: TerminationMessage };

/** The normal mode (see the module comment): one FetchJob with the pod's own token. Never throws. */
async function runColdMode(options: BrokerModeOptions, log: SandboxLog): Promise<ExchangeOutcome> {
  let client: SandboxBrokerClient | undefined;
  let work: string | undefined;
  try {
    const { address, token } = brokerSeat(options);
    client = brokerClient(address);
    const { header, document } = await fetchJob(client, token, options.fetchDeadlineMs ?? DEFAULT_FETCH_DEADLINE_MS);
    const format = header.format as ConversionFormat;
    log({ msg: "sandbox fetched its job", format, bytes: document.length, maxPages: header.max_pages });

    work = await mkdtemp(join(options.scratchDir, "folio-broker-"));
    const converted = await convert(work, document, header, options);

    return { exitCode: 0, message: await submitConverted(client, token, converted, options, log) };
  } catch (err) {
    return { exitCode: 1, message: exchangeFailed(err, log) };
  } finally {
    client?.close();
    if (work) await rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Warm mode (see the module comment), from `started` on. Never throws. */
async function runWarmMode(options: BrokerModeOptions, pool: { name: string; idleMs: number }, log: SandboxLog, started: number): Promise<ExchangeOutcome> {
  let client: SandboxBrokerClient | undefined;
  let work: string | undefined;
  let call: grpc.ClientReadableStream<unknown> | undefined;
  const handIn = Promise.withResolvers<boolean>();
  const ready = Promise.withResolvers<void>();
  let converting: Promise<JobResult> | undefined;
  try {
    const { address, token } = brokerSeat(options);
    work = await mkdtemp(join(options.scratchDir, "folio-warm-"));
    const jobDir = join(work, "job");
    await mkdir(jobDir, { recursive: true });
    await writeFile(join(jobDir, PRESTART_FILE), JSON.stringify({ profileDir: options.profileDir }));
    // LibreOffice starts now; the converter waits for `handIn` before it reads job.json.
    converting = runJob(jobDir, { scratchDir: work, handIn: () => handIn.promise, onReady: () => ready.resolve() }).catch(
      (err: unknown): JobResult => ({ ok: false, pageCount: 0, error: { code: "conversion_failed", message: `the sandbox could not run the job: ${(err as Error).message}` } }),
    );
    const readyTimer = setTimeout(() => ready.resolve(), OFFICE_READY_WAIT_MS);
    await ready.promise;
    clearTimeout(readyTimer);
    log({ msg: "warm sandbox ready", pool: pool.name, startMs: Math.round(performance.now() - started) });

    client = brokerClient(address);
    const waited = await waitForJob(client, token, pool.idleMs);
    if (!waited) {
      handIn.resolve(false);
      await converting;
      log({ msg: "warm sandbox got no document", idleMs: pool.idleMs });
      return { exitCode: 0, message: { ok: false, pageCount: 0, errorCode: "idle", message: `no document within ${Math.round(pool.idleMs / 1000)} s` } };
    }
    call = waited.call;
    const { header, document } = waited;
    // Epoch ms, for the benchmark's hand-in latency (the host's clock, as the broker's).
    log({ msg: "sandbox received its document", receivedAt: Date.now(), format: header.format, bytes: document.length });
    const maxOutputBytes = await writeHeaderJob(jobDir, document, header, options);
    handIn.resolve(true);
    const converted = await readConverted(jobDir, await converting, header, maxOutputBytes);
    return { exitCode: 0, message: await submitConverted(client, token, converted, options, log) };
  } catch (err) {
    const message = exchangeFailed(err, log);
    handIn.resolve(false);
    await converting;
    return { exitCode: 1, message };
  } finally {
    call?.cancel();
    client?.close();
    if (work) await rm(work, { recursive: true, force: true }).catch(() => undefined);
  }
}

type SandboxLog = NonNullable<BrokerModeOptions["log"]>;

/** The broker's address and the pod's token, which both modes need. */
function brokerSeat(options: BrokerModeOptions): { address: string; token: string } {
  if (!options.address || !options.token) {
    throw new BrokerExchangeError(`${SANDBOX_ENV.brokerAddress} and ${SANDBOX_ENV.brokerToken} must both be set`);
  }
  return { address: options.address, token: options.token };
}

/** Hands a conversion's result to the broker; the termination message that reports it. */
async function submitConverted(
  client: SandboxBrokerClient,
  token: string,
  converted: Converted,
  options: BrokerModeOptions,
  log: SandboxLog,
): Promise<TerminationMessage> {
  const { result, pdf } = converted;
  log({ msg: "sandbox converted", ok: result.ok, pageCount: result.pageCount, ...(pdf ? { pdfBytes: pdf.length, documentPageCount: result.documentPageCount } : {}), error: result.error?.code, timings: result.timings });
  await submitResult(client, token, converted, options.submitDeadlineMs ?? DEFAULT_SUBMIT_DEADLINE_MS);
  log({ msg: "sandbox submitted its result" });
  return {
    ok: result.ok,
    pageCount: result.ok ? result.pageCount : 0,
    ...(result.error ? { errorCode: result.error.code, message: result.error.message.slice(0, MESSAGE_CHARS) } : {}),
  };
}

/** The termination message of an exchange with the broker that failed (logged). */
function exchangeFailed(err: unknown, log: SandboxLog): TerminationMessage {
  const text = err instanceof Error ? err.message : String(err);
  log({ msg: "sandbox broker exchange failed", error: text });
  return { ok: false, pageCount: 0, errorCode: "broker_error", message: text.slice(0, MESSAGE_CHARS) };
}

/** Writes the termination message, with the time since `started`, to FOLIO_TERMINATION_LOG. */
async function terminate(
  options: BrokerModeOptions,
  log: SandboxLog,
  started: number,
  exitCode: 0 | 1,
  message: TerminationMessage,
): Promise<ExchangeOutcome> {
  message.computeMillis = Math.round(performance.now() - started);
  await writeFile(options.terminationLog, JSON.stringify(message)).catch((err: unknown) => {
    // The operator then falls back on the exit code; the result is already with the broker.
    log({ msg: "could not write the termination message", path: options.terminationLog, error: (err as Error).message });
  });
  return { exitCode, message };
}

/**
 * The long poll: FetchJob with the pod's token, waiting up to `idleMs` for
 * the header. Returns once the whole document is in, without waiting for
 * the call to end (the broker keeps it open until the result arrived: it is
 * how the broker notices the pod going away). Undefined when the wait ended
 * without a document (deadline, or the broker ended the call empty).
 */
async function waitForJob(
  client: SandboxBrokerClient,
  token: string,
  idleMs: number,
): Promise<{ header: JobHeader__Output; document: Buffer; call: grpc.ClientReadableStream<unknown> } | undefined> {
  const metadata = new grpc.Metadata();
  metadata.setOptions({ waitForReady: true });
  // The deadline covers the wait and the document's transfer; the call is cancelled once the result is in.
  const call = client.FetchJob({ token }, metadata, { deadline: Date.now() + idleMs + DEFAULT_FETCH_DEADLINE_MS });
  const job = new JobAssembler();
  const idle = setTimeout(() => {
    if (!job.header) call.cancel();
  }, idleMs);
  try {
    for await (const chunk of call as AsyncIterable<JobChunkOutput>) {
      if (job.add(chunk) && job.header) {
        clearTimeout(idle);
        return { header: job.header, document: job.document(), call };
      }
    }
  } catch (err) {
    clearTimeout(idle);
    call.cancel();
    const e = err as Partial<grpc.ServiceError>;
    // Our own idle cancel, or the deadline, before any document: no work came.
    if (!job.header && (e.code === grpc.status.CANCELLED || e.code === grpc.status.DEADLINE_EXCEEDED)) return undefined;
    throw err instanceof BrokerExchangeError ? err : callError("FetchJob", err);
  }
  clearTimeout(idle);
  if (!job.header) return undefined;
  throw new BrokerExchangeError(`the broker sent ${job.bytes} of ${job.header.document_bytes} document bytes`);
}

/** A FetchJob stream's message as grpc-js decodes it. */
type JobChunkOutput = { item?: string; header?: JobHeader__Output | null; data?: Buffer };

/** Puts a job together from the broker's FetchJob stream: one checked header, then no more document bytes than it announced. */
class JobAssembler {
  header: JobHeader__Output | undefined;
  bytes = 0;
  private readonly parts: Buffer[] = [];

  /** Takes the next chunk; true once the whole announced document is in. */
  add(chunk: JobChunkOutput): boolean {
    if (chunk.item === "header" && chunk.header && !this.header) {
      this.header = chunk.header;
      checkHeader(this.header);
    } else if (chunk.item === "data" && chunk.data && this.header) {
      this.bytes += chunk.data.length;
      if (this.bytes > this.header.document_bytes) throw new BrokerExchangeError(`the broker sent more than the ${this.header.document_bytes} bytes it announced`);
      this.parts.push(chunk.data);
    } else {
      throw new BrokerExchangeError("the broker's job stream is out of order");
    }
    return this.header !== undefined && this.bytes === this.header.document_bytes;
  }

  document(): Buffer {
    return Buffer.concat(this.parts, this.bytes);
  }
}

function brokerClient(address: string): SandboxBrokerClient {
  // protobufjs's declared JSON types are stricter than what it reads (they
  // demand method comments, and know no map fields); pod.test.ts checks the
  // descriptor against the real .proto instead.
  const json = conversionDescriptor as unknown as Parameters<typeof fromJSON>[0];
  const loaded = grpc.loadPackageDefinition(fromJSON(json, PROTO_LOAD_OPTIONS)) as unknown as {
    folio: { conversion: { v1: { SandboxBroker: new (address: string, credentials: grpc.ChannelCredentials, options: grpc.ChannelOptions) => SandboxBrokerClient } } };
  };
  // Plain HTTP/2 inside the cluster: the NetworkPolicy lets sandbox pods reach
  // the conversion pods' broker port and nothing else, and the token is one-time.
  return new loaded.folio.conversion.v1.SandboxBroker(address, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
  });
}

/** What went wrong in a call, without the token (grpc-js messages never carry request fields). */
function callError(what: string, err: unknown): BrokerExchangeError {
  const e = err as Partial<grpc.ServiceError>;
  const status = e.code !== undefined ? grpc.status[e.code] : undefined;
  return new BrokerExchangeError(`${what} failed${status ? ` (${status})` : ""}: ${e.details || e.message || String(err)}`);
}

async function fetchJob(client: SandboxBrokerClient, token: string, deadlineMs: number): Promise<{ header: JobHeader__Output; document: Buffer }> {
  const metadata = new grpc.Metadata();
  // Wait for the connection up to the deadline instead of failing at once
  // while the pod's network is still being set up. Safe: the token is spent
  // only when the broker receives the call.
  metadata.setOptions({ waitForReady: true });
  const call = client.FetchJob({ token }, metadata, { deadline: Date.now() + deadlineMs });
  const job = new JobAssembler();
  try {
    for await (const chunk of call as AsyncIterable<JobChunkOutput>) job.add(chunk);
  } catch (err) {
    call.cancel();
    throw err instanceof BrokerExchangeError ? err : callError("FetchJob", err);
  }
  const { header, bytes } = job;
  if (!header) throw new BrokerExchangeError("the broker sent no job");
  if (bytes !== header.document_bytes) throw new BrokerExchangeError(`the broker sent ${bytes} of ${header.document_bytes} document bytes`);
  return { header, document: job.document() };
}

function checkHeader(header: JobHeader__Output): void {
  if (!Object.hasOwn(FORMAT_EXTENSIONS, header.format)) throw new BrokerExchangeError(`the broker asked for an unknown format ${JSON.stringify(header.format)}`);
  if (header.dpi !== PAGE_DPI) throw new BrokerExchangeError(`the broker asked for ${header.dpi} DPI; this program renders ${PAGE_DPI}`);
  if (!(header.max_pages >= 1)) throw new BrokerExchangeError("the broker's job has no page limit");
  if (!(header.document_bytes >= 1)) throw new BrokerExchangeError("the broker's job has an empty document");
  if (headerOutput(header).output === "pdf" && header.pages) throw new BrokerExchangeError("the broker's job asks for a page selection and output pdf");
  headerSelection(header);
}

/** Runs the converter on a job folder in `work`; conversion problems come back in the result. */
async function convert(work: string, document: Buffer, header: JobHeader__Output, options: BrokerModeOptions): Promise<Converted> {
  const jobDir = join(work, "job");
  const maxOutputBytes = await writeHeaderJob(jobDir, document, header, options);
  let result: JobResult;
  try {
    result = await runJob(jobDir, { scratchDir: work });
  } catch (err) {
    result = { ok: false, pageCount: 0, error: { code: "conversion_failed", message: `the sandbox could not run the job: ${(err as Error).message}` } };
  }
  return readConverted(jobDir, result, header, maxOutputBytes);
}

/** Writes the broker's job into `jobDir` for the converter; the output limit it set, if any. */
async function writeHeaderJob(
  jobDir: string,
  document: Buffer,
  header: JobHeader__Output,
  options: BrokerModeOptions,
): Promise<number | undefined> {
  const format = header.format as ConversionFormat;
  const traceparent = header.traceparent || options.traceparent;
  const maxOutputBytes = header.max_output_bytes || undefined;
  await writeJob(
    jobDir,
    {
      document,
      format,
      maxPages: header.max_pages,
      ...headerSelection(header),
      ...headerOutput(header),
      timeoutMs: header.timeout_ms,
      ...(traceparent ? { traceparent } : {}),
    },
    { profileDir: options.profileDir, ...(header.timeout_ms ? { timeoutMs: header.timeout_ms } : {}), ...(maxOutputBytes ? { maxOutputBytes } : {}) },
    { chownOutput: false },
  );
  return maxOutputBytes;
}

/** The header's page selection as the job's input takes it (none: every page). */
function headerSelection(header: JobHeader__Output): { pages?: PageSelection } {
  if (!header.pages) return {};
  const parsed = parsePages(header.pages);
  if (!parsed.ok) throw new BrokerExchangeError(`the broker's job has no usable page selection: ${parsed.problem}`);
  return { pages: parsed.selection };
}

/** What the header asks back: "" or `pages` the pages, `pdf` the PDF; anything else is not a job this program knows. */
function headerOutput(header: JobHeader__Output): { output?: "pdf" } {
  if (header.output === "pdf") return { output: "pdf" };
  if (!header.output || header.output === "pages") return {};
  throw new BrokerExchangeError(`the broker asked for an unknown output ${JSON.stringify(header.output)}`);
}

/** A finished job as it is submitted: the result, and its pages or (output `pdf`) its PDF. */
interface Converted {
  result: JobResult;
  pages: Buffer[];
  pdf?: Buffer;
}

/**
 * The pages or the PDF of a finished job, read and checked against the
 * header as every backend reads its jobs; output that cannot be read (or
 * is not what was asked) turns the result into a failure.
 */
async function readConverted(jobDir: string, result: JobResult, header: JobHeader__Output, maxOutputBytes: number | undefined): Promise<Converted> {
  if (!result.ok) return { result, pages: [] };
  try {
    const { pages, pageCount, documentPageCount, pdf } = await readOutput(jobDir, result, { ...headerOutput(header), maxPages: header.max_pages }, maxOutputBytes);
    return { result: { ...result, pageCount, documentPageCount }, pages, ...(pdf ? { pdf } : {}) };
  } catch (err) {
    return { result: { ok: false, pageCount: 0, error: { code: "conversion_failed", message: (err as Error).message }, ...(result.timings ? { timings: result.timings } : {}) }, pages: [] };
  }
}

async function submitResult(client: SandboxBrokerClient, token: string, converted: Converted, deadlineMs: number): Promise<void> {
  const { result, pages, pdf } = converted;
  let finished = false;
  let call: grpc.ClientWritableStream<ResultChunk> | undefined;
  const answered = new Promise<void>((resolve, reject) => {
    call = client.SubmitResult({ deadline: Date.now() + deadlineMs }, (err) => {
      finished = true;
      if (err) reject(callError("SubmitResult", err));
      else resolve();
    });
  });
  // The broker may refuse before everything is written; that rejection is
  // awaited at the end, and must not count as unhandled in between.
  answered.catch(() => undefined);
  const stream = call as grpc.ClientWritableStream<ResultChunk>;
  /** Writes one message, waiting while the stream's buffer is full (a page, or a PDF's chunk, can be megabytes). */
  const send = async (message: ResultChunk) => {
    if (finished) return;
    if (!stream.write(message)) await Promise.race([once(stream, "drain"), answered.catch(() => undefined)]);
  };
  await send({ start: { token } });
  for (const [i, png] of pages.entries()) {
    // 0 × 0 when it is no PNG: the broker checks every page anyway.
    const { width, height } = pngSize(png) ?? { width: 0, height: 0 };
    await send({ page: { page_number: i + 1, png, width, height } });
  }
  if (pdf) {
    for (let offset = 0; offset < pdf.length; offset += PDF_CHUNK_BYTES) await send({ pdf_chunk: pdf.subarray(offset, offset + PDF_CHUNK_BYTES) });
  }
  const timings = Object.fromEntries(Object.entries(result.timings ?? {}).map(([k, v]) => [k, Math.max(0, Math.round(v))]));
  await send({
    result: {
      ok: result.ok,
      page_count: result.ok ? pages.length : 0,
      document_page_count: result.ok ? (result.documentPageCount ?? pages.length) : 0,
      pdf: pdf !== undefined,
      error_code: result.error?.code ?? "",
      error_message: result.error?.message.slice(0, MESSAGE_CHARS) ?? "",
      timings,
    },
  });
  if (!finished) stream.end();
  await answered;
}
