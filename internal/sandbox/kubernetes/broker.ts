/**
 * The sandbox broker: how a `kubernetes` sandbox pod gets its document and
 * returns its pages (or, with output `pdf`, the PDF). Neither ever goes
 * through the Kubernetes API (a ConversionSandbox carries only a one-time
 * token): the pod calls this gRPC service (`folio.conversion.v1.SandboxBroker`)
 * on a port of its own.
 *
 * Tokens. {@link SandboxBroker.register} makes a token of 32 random bytes
 * (base64url) per document. It allows exactly one FetchJob and then one
 * SubmitResult, until its expiry. Only a SHA-256 hash of it is kept, and
 * registrations are looked up by that hash: a presented token is hashed and
 * the hash used as a map key, so nothing ever compares the secret itself byte
 * by byte (no timing leak), and a memory dump holds no usable token. An
 * unknown, expired, used or cancelled token is refused alike with
 * `permission_denied` and the same message, so a caller learns nothing about
 * which case it hit.
 *
 * What the sandbox sends back is as untrusted as the document that ran in
 * it: pages must arrive numbered 1..n in order, n ≤ maxPages, each a PNG,
 * together ≤ maxOutputBytes, and the final outcome's page count must equal
 * the pages received. A job that asked for output `pdf` (the header's
 * `output`) gets the PDF back in `pdf_chunk` messages instead, and no page:
 * together ≤ maxOutputBytes, starting with `%PDF-`, and an outcome that says
 * `pdf`, 0 pages rendered and 1..maxPages pages in the document. Pages for a
 * PDF job, or a PDF (chunks or outcome) for a pages job, are refused alike.
 * Anything else fails the job as `conversion_failed` ("the sandbox returned
 * ..."), and so does a result stream that ends without its outcome.
 *
 * Warm pods (docs/operator.md, "The warm pool"). A FetchJob whose token is
 * not a document's but a warm pool pod's (its hash is on a pool Job the
 * {@link PoolSeats} know) is a long poll: the call waits, holding no
 * document, until {@link SandboxBroker.offer} hands it one, then streams it
 * like any job and stays open until the result arrived. A seat is
 * single-use: once it got a document its token never gets another, whatever
 * the pod does. The open call is how a pod's death is noticed without the
 * API server: it is cancelled when the pod's connection goes, and a document
 * it held fails with a retryable error (the backend retries it once).
 *
 * Neither the token nor the document is ever logged.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { PAGE_DPI, hasPngSignature } from "../../formats/index.ts";
import { formatPages } from "../../formats/pages.ts";
import type { ProtoGrpcType } from "../../gen/proto/conversion.ts";
import type { JobChunk } from "../../gen/proto/folio/conversion/v1/JobChunk.ts";
import type { JobOutcome__Output } from "../../gen/proto/folio/conversion/v1/JobOutcome.ts";
import type { FetchJobRequest__Output } from "../../gen/proto/folio/conversion/v1/FetchJobRequest.ts";
import type { ResultChunk__Output } from "../../gen/proto/folio/conversion/v1/ResultChunk.ts";
import type { SandboxBrokerHandlers } from "../../gen/proto/folio/conversion/v1/SandboxBroker.ts";
import type { SubmitResultResponse } from "../../gen/proto/folio/conversion/v1/SubmitResultResponse.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { grpc, loadProto, toGrpcStatus } from "../../platform/grpc/index.ts";
import type { Logger } from "../../platform/log/index.ts";
import type { SandboxInput } from "../interface.ts";

/** The service name in the gRPC health service. */
export const BROKER_SERVICE_NAME = "folio.conversion.v1.SandboxBroker";
/** Random bytes in a token: 256 bits, beyond guessing. */
const TOKEN_BYTES = 32;
/**
 * Document bytes per FetchJob message. Far below MAX_MESSAGE_BYTES so a
 * large document streams under HTTP/2 flow control instead of sitting in one
 * message in both processes' memory.
 */
const DEFAULT_CHUNK_BYTES = 1024 * 1024;
/** The one message for every refused token (see the module comment). */
const REFUSED = "the sandbox token is not valid";
/** How a PDF starts (ISO 32000-1 7.5.2); LibreOffice writes nothing before it. */
const PDF_HEADER = Buffer.from("%PDF-");

/**
 * What a sandbox pod is handed: the backend's {@link SandboxInput} as it is
 * (its `timeoutMs` is the time the program may spend converting, the
 * header's `timeout_ms`), with the limit on what comes back and the token's
 * expiry.
 */
export interface BrokerJobInput extends SandboxInput {
  maxOutputBytes: number;
  /** epoch ms after which the token is dead */
  expiresAt: number;
}

export interface BrokerOutcome {
  ok: boolean;
  /** `conversion_failed` or `timeout` when not ok (as the sandbox said: check it before use). */
  errorCode?: string;
  errorMessage?: string;
  /** Milliseconds per step inside the sandbox (informational). */
  timings: Record<string, number>;
}

export interface BrokerResult {
  /** The pages, checked: numbered 1..pageCount in order, each a PNG, within the byte limit; none with output `pdf`. */
  pages: Buffer[];
  pageCount: number;
  /** With output `pdf` and an ok outcome: the PDF, checked to start with `%PDF-` and to fit the byte limit. */
  pdf?: Buffer;
  /** The document's pages as the sandbox counted them (the conversion service checks them against the selection). */
  documentPageCount: number;
  outcome: BrokerOutcome;
  /** Epoch ms when the sandbox fetched its job. */
  fetchedAtMs: number;
  /** Epoch ms when the sandbox's outcome arrived. */
  submittedAtMs: number;
}

export interface BrokerRegistration {
  /** The one-time token for the ConversionSandbox's `spec.broker.token`. */
  token: string;
  /** A non-secret id of this registration, for log lines on both sides. */
  id: string;
  /**
   * What the sandbox submits (an outcome that is not ok included). Rejects
   * with a FolioError when the sandbox broke the protocol (`conversion_failed`),
   * the token expired unused (`timeout`), or on {@link cancel}.
   */
  result: Promise<BrokerResult>;
  /** Ends the registration: the token is dead and `result` rejects with `reason` (no-op once settled). */
  cancel(reason: Error): void;
}

/** A warm pod's seat: its Job, as the pool's Job annotations describe it. */
export interface Seat {
  /** The Job's name (what the operator deletes when the pod is overdue). */
  job: string;
  /** Longest conversion (ms) the pod's deadline leaves room for. */
  maxDocumentMs: number;
}

/** Where the broker looks up warm pods' tokens (by SHA-256 hex): `pool-seats.ts` keeps them from the pool Jobs. */
export interface SeatLookup {
  get(hash: string): Seat | undefined;
  /** Resolves with the seat once known (the Job may not have reached the watch yet), or undefined after `ms`. */
  waitFor(hash: string, ms: number): Promise<Seat | undefined>;
}

/** How long a warm pod whose token is not known yet is held before it is refused (the watch of pool Jobs may lag its start). */
const SEAT_WAIT_MS = 5_000;

interface Waiter {
  hash: string;
  seat: Seat;
  call: grpc.ServerWritableStream<FetchJobRequest__Output, JobChunk>;
  since: number;
}

/** What {@link SandboxBroker.offer} hands back: a registration whose document is already on its way to a warm pod. */
export interface WarmRegistration extends Omit<BrokerRegistration, "token"> {
  /** The warm pod's Job. */
  seat: Seat;
  /** Epoch ms when the pod's wait ended with this document. */
  handedInAtMs: number;
}

/** The error of a warm pod that went away holding a document: retryable, the document never reached a result. */
export class WarmPodLostError extends FolioError {
  constructor(message: string) {
    super("internal_error", message, { retryable: true });
  }
}

interface Registration {
  id: string;
  /** Set for a document handed to a warm pod: its seat and its open call. */
  warm?: { seat: Seat; call: grpc.ServerWritableStream<FetchJobRequest__Output, JobChunk> };
  job: BrokerJobInput;
  fetchedAtMs: number | undefined;
  submitStarted: boolean;
  settled: boolean;
  /** Aborted when the registration ends, so streams still running for it stop. */
  ended: AbortController;
  expiry: NodeJS.Timeout;
  resolve(result: BrokerResult): void;
  reject(err: Error): void;
}

export class SandboxBroker {
  private readonly log: Logger;
  private readonly chunkBytes: number;
  /** Open registrations by the SHA-256 (hex) of their token. */
  private readonly byHash = new Map<string, Registration>();
  private seats: SeatLookup | undefined;
  /** Warm pods waiting for a document, oldest first. */
  private readonly waiters: Waiter[] = [];
  /** Seats that got their document: never another (hashes; forgotten with their Job via {@link forgetSeat}). */
  private readonly spent = new Set<string>();
  /** Warm pods still connected after their document's registration ended unanswered (timeout, cancel): Job names. */
  private readonly overdueJobs = new Set<string>();
  private handIns = 0;

  constructor(opts: { log: Logger; chunkBytes?: number }) {
    this.log = opts.log;
    this.chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (!(this.chunkBytes >= 1)) throw new FolioError("internal_error", "the broker's chunkBytes must be at least 1");
  }

  /** A fresh one-time token (>= 32 random bytes, base64url) and the promise of what the sandbox submits. */
  register(job: BrokerJobInput): BrokerRegistration {
    const token = randomBytes(TOKEN_BYTES).toString("base64url");
    const hash = hashToken(token);
    const { promise, resolve, reject } = Promise.withResolvers<BrokerResult>();
    // The caller may never await `result` (it cancels after a failure seen
    // elsewhere); a rejection nobody listens to must not crash the process.
    promise.catch(() => undefined);
    const reg: Registration = {
      id: randomUUID(),
      job,
      fetchedAtMs: undefined,
      submitStarted: false,
      settled: false,
      ended: new AbortController(),
      expiry: setTimeout(
        () => this.settle(hash, reg, new FolioError("timeout", "the sandbox did not return a result before its token expired")),
        Math.max(0, job.expiresAt - Date.now()),
      ),
      resolve,
      reject,
    };
    // A pending expiry must not keep a process alive that is otherwise done.
    reg.expiry.unref();
    this.byHash.set(hash, reg);
    return { token, id: reg.id, result: promise, cancel: (reason: Error) => this.settle(hash, reg, reason) };
  }

  /** Registrations whose result is still open. */
  pending(): number {
    return this.byHash.size;
  }

  /** Accept warm pool pods whose tokens `seats` knows (see the module comment). */
  usePool(seats: SeatLookup): void {
    this.seats = seats;
  }

  /** The seat's Job is gone: its hash need not be remembered any more. */
  forgetSeat(hash: string): void {
    this.spent.delete(hash);
  }

  /** Warm pods waiting now, busy with a document, Jobs overdue, and documents handed to warm pods so far. */
  warmStats(): { idle: number; busy: number; busyJobs: string[]; overdue: string[]; handIns: number } {
    const busyJobs: string[] = [];
    for (const r of this.byHash.values()) if (r.warm) busyJobs.push(r.warm.seat.job);
    return { idle: this.waiters.length, busy: busyJobs.length, busyJobs: busyJobs.slice(0, 1000), overdue: [...this.overdueJobs].slice(0, 100), handIns: this.handIns };
  }

  /**
   * Hands `job` to the oldest waiting warm pod whose deadline leaves room
   * for `job.timeoutMs` (and that is not in `exclude`, Job names); undefined
   * when there is none. No API call: the document goes down the pod's open
   * FetchJob call at once.
   */
  offer(job: BrokerJobInput, exclude: ReadonlySet<string> = new Set()): WarmRegistration | undefined {
    const index = this.waiters.findIndex((w) => w.seat.maxDocumentMs >= job.timeoutMs && !exclude.has(w.seat.job) && !w.call.cancelled);
    if (index < 0) return undefined;
    const [waiter] = this.waiters.splice(index, 1);
    const { hash, seat, call } = waiter!;
    this.spent.add(hash);
    this.handIns++;
    const handedInAtMs = Date.now();
    const { promise, resolve, reject } = Promise.withResolvers<BrokerResult>();
    promise.catch(() => undefined);
    const reg: Registration = {
      id: randomUUID(),
      warm: { seat, call },
      job,
      fetchedAtMs: handedInAtMs,
      submitStarted: false,
      settled: false,
      ended: new AbortController(),
      expiry: setTimeout(
        () => this.settle(hash, reg, new FolioError("timeout", "the warm sandbox did not return a result before its deadline")),
        Math.max(0, job.expiresAt - handedInAtMs),
      ),
      resolve,
      reject,
    };
    reg.expiry.unref();
    this.byHash.set(hash, reg);
    call.on("cancelled", () => this.settle(hash, reg, new WarmPodLostError("the warm sandbox went away before returning a result")));
    void this.streamJob(call, reg).catch((err: unknown) => {
      this.log.warn({ job: reg.id, err }, "could not hand the document to a warm sandbox");
      this.settle(hash, reg, new WarmPodLostError("the document could not be handed to the warm sandbox"));
    });
    this.log.debug({ job: reg.id, seat: seat.job, waitedMs: handedInAtMs - waiter!.since }, "document handed to a warm sandbox");
    return { id: reg.id, seat, handedInAtMs, result: promise, cancel: (reason: Error) => this.settle(hash, reg, reason) };
  }

  /** The gRPC handlers; {@link registerBroker} adds them to a server. */
  handlers(): SandboxBrokerHandlers {
    // Both handle their own errors; these catches are for the unforeseen, so
    // a bug ends one call with INTERNAL instead of the process.
    return {
      FetchJob: (call) => {
        this.fetchJob(call).catch((err: unknown) => {
          this.log.error({ err }, "sandbox broker FetchJob failed");
          if (!call.cancelled && !call.writableEnded) call.emit("error", toGrpcStatus(new FolioError("internal_error", "internal error")));
        });
      },
      SubmitResult: (call, callback) => {
        this.submitResult(call, callback).catch((err: unknown) => {
          this.log.error({ err }, "sandbox broker SubmitResult failed");
        });
      },
    };
  }

  /**
   * Claims one use of a token. Every refusal throws the same error: which of
   * unknown, expired, used or out of order it was is only logged (without
   * the token).
   */
  private claim(token: unknown, use: "fetch" | "submit", peer: string): { hash: string; reg: Registration } {
    const hash = typeof token === "string" && token.length > 0 ? hashToken(token) : "";
    const reg = hash ? this.byHash.get(hash) : undefined;
    let why: string | undefined;
    if (!reg) why = "unknown";
    else if (Date.now() >= reg.job.expiresAt) why = "expired";
    else if (use === "fetch" && reg.fetchedAtMs !== undefined) why = "fetched twice";
    else if (use === "submit" && reg.fetchedAtMs === undefined) why = "submitted before fetching";
    else if (use === "submit" && reg.submitStarted) why = "submitted twice";
    if (why !== undefined || !reg) {
      this.log.warn({ job: reg?.id, use, why, peer }, "sandbox broker refused a token");
      throw new FolioError("permission_denied", REFUSED);
    }
    if (use === "fetch") reg.fetchedAtMs = Date.now();
    else reg.submitStarted = true;
    return { hash, reg };
  }

  private async fetchJob(call: grpc.ServerWritableStream<FetchJobRequest__Output, JobChunk>): Promise<void> {
    const token = call.request.token;
    const tokenHash = typeof token === "string" && token.length > 0 ? hashToken(token) : "";
    if (this.seats && tokenHash && !this.byHash.has(tokenHash)) {
      const seat = this.seats.get(tokenHash) ?? (await this.seats.waitFor(tokenHash, SEAT_WAIT_MS));
      if (seat) return this.wait(call, tokenHash, seat);
    }
    let claimed: { hash: string; reg: Registration };
    try {
      claimed = this.claim(call.request.token, "fetch", call.getPeer());
    } catch (err) {
      call.emit("error", toGrpcStatus(err));
      return;
    }
    const { hash, reg } = claimed;
    const { job } = reg;
    const stopped = () => call.cancelled || reg.ended.signal.aborted;
    const onCancel = () => {
      // The token is spent: a sandbox that lost its document cannot ask again,
      // so waiting for its result would only run into the timeout.
      this.settle(hash, reg, new FolioError("internal_error", "the sandbox stopped fetching its document", { retryable: true }));
    };
    call.on("cancelled", onCancel);
    try {
      await this.streamJob(call, reg);
      if (stopped()) {
        if (!call.cancelled) call.emit("error", toGrpcStatus(new FolioError("permission_denied", REFUSED)));
        return;
      }
      call.end();
      this.log.info({ job: reg.id, format: job.format, bytes: job.document.length }, "sandbox fetched its job");
    } finally {
      call.off("cancelled", onCancel);
    }
  }

  /** A warm pod's long poll: queued until {@link offer} hands it a document (or the pod gives up). */
  private wait(call: grpc.ServerWritableStream<FetchJobRequest__Output, JobChunk>, hash: string, seat: Seat): void {
    let why: string | undefined;
    if (this.spent.has(hash)) why = "seat already used";
    else if (this.waiters.some((w) => w.hash === hash)) why = "seat already waiting";
    else if (call.cancelled) why = "gone before waiting";
    if (why) {
      // A pod never gets a second document, nor two waits at once.
      this.log.warn({ seat: seat.job, why, peer: call.getPeer() }, "sandbox broker refused a warm pod");
      call.emit("error", toGrpcStatus(new FolioError("permission_denied", REFUSED)));
      return;
    }
    const waiter: Waiter = { hash, seat, call, since: Date.now() };
    this.waiters.push(waiter);
    call.once("cancelled", () => {
      const i = this.waiters.indexOf(waiter);
      if (i >= 0) this.waiters.splice(i, 1);
    });
    // The pod is gone: it is no longer overdue.
    call.once("cancelled", () => this.overdueJobs.delete(seat.job));
  }

  /**
   * The header and the document down a FetchJob call, stopping early when the
   * call or the registration ends. A cold sandbox's call ends after it; a warm
   * pod's call stays open until the registration ends.
   */
  private async streamJob(call: grpc.ServerWritableStream<FetchJobRequest__Output, JobChunk>, reg: Registration): Promise<void> {
    const { job } = reg;
    call.write({
      header: {
        format: job.format,
        dpi: PAGE_DPI,
        max_pages: job.maxPages,
        timeout_ms: job.timeoutMs,
        max_output_bytes: job.maxOutputBytes,
        document_bytes: job.document.length,
        traceparent: job.traceparent ?? "",
        pages: job.pages ? formatPages(job.pages) : "",
        output: job.output === "pdf" ? "pdf" : "",
      },
    });
    for (let offset = 0; offset < job.document.length; offset += this.chunkBytes) {
      if (call.cancelled || reg.ended.signal.aborted) return;
      const more = call.write({ data: job.document.subarray(offset, offset + this.chunkBytes) });
      if (!more) await drained(call, reg.ended.signal);
    }
  }

  private async submitResult(
    call: grpc.ServerReadableStream<ResultChunk__Output, SubmitResultResponse>,
    callback: grpc.sendUnaryData<SubmitResultResponse>,
  ): Promise<void> {
    let answered = false;
    const answer = (err: FolioError | null) => {
      if (answered) return;
      answered = true;
      if (err) callback(toGrpcStatus(err) as grpc.ServiceError);
      else callback(null, {});
    };
    let claimed: { hash: string; reg: Registration } | undefined;
    const pages: Buffer[] = [];
    const pdfParts: Buffer[] = [];
    let bytes = 0;
    let outcome: BrokerOutcome | undefined;
    let pageCount = 0;
    let documentPageCount = 0;
    let submittedAtMs = 0;
    try {
      for await (const chunk of call as AsyncIterable<ResultChunk__Output>) {
        if (!claimed) {
          // The first message must carry the token; anything else is refused like a bad token.
          claimed = this.claim(chunk.item === "start" ? chunk.start?.token : undefined, "submit", call.getPeer());
          this.log.debug({ job: claimed.reg.id }, "sandbox started submitting its result");
          continue;
        }
        const { job } = claimed.reg;
        if (claimed.reg.settled) throw new FolioError("permission_denied", REFUSED);
        if (outcome) throw returned("more messages after its result");
        const asksPdf = job.output === "pdf";
        if (chunk.item === "page" && chunk.page) {
          if (asksPdf) throw returned("a page where the PDF was asked for");
          const expected = pages.length + 1;
          const png = chunk.page.png ?? Buffer.alloc(0);
          if (chunk.page.page_number !== expected) throw returned(`page ${chunk.page.page_number} where page ${expected} was expected`);
          if (expected > job.maxPages) throw returned(`more than the ${job.maxPages} pages allowed`);
          if (!hasPngSignature(png)) {
            throw returned(`page ${expected} that is not a PNG`);
          }
          bytes += png.length;
          if (bytes > job.maxOutputBytes) throw returned(`pages larger than ${job.maxOutputBytes} bytes in total`);
          pages.push(png);
        } else if (chunk.item === "pdf_chunk") {
          if (!asksPdf) throw returned("a PDF where pages were asked for");
          const part = chunk.pdf_chunk ?? Buffer.alloc(0);
          bytes += part.length;
          if (bytes > job.maxOutputBytes) throw returned(`a PDF larger than ${job.maxOutputBytes} bytes`);
          pdfParts.push(part);
        } else if (chunk.item === "result" && chunk.result) {
          const r = chunk.result;
          if (asksPdf) checkPdfOutcome(r, bytes, pdfParts, job.maxPages);
          else {
            if (r.pdf) throw returned("a PDF outcome where pages were asked for");
            if (r.page_count !== pages.length) throw returned(`an outcome of ${r.page_count} pages after sending ${pages.length}`);
            if (r.ok && pages.length === 0) throw returned("no pages for a successful conversion");
            if (!r.ok && pages.length > 0) throw returned("pages for a failed conversion");
          }
          submittedAtMs = Date.now();
          pageCount = r.page_count;
          // Older sandbox programs do not say: then every page was converted (a PDF outcome always says).
          documentPageCount = r.document_page_count || r.page_count;
          outcome = {
            ok: r.ok,
            ...(r.ok ? {} : { errorCode: r.error_code || "conversion_failed", errorMessage: (r.error_message || "the conversion failed").slice(0, 1000) }),
            timings: Object.fromEntries(Object.entries(r.timings ?? {}).map(([k, v]) => [k, Number(v)])),
          };
        } else {
          throw returned(`a message of an unknown kind (${String(chunk.item)})`);
        }
      }
      if (!claimed) throw new FolioError("permission_denied", REFUSED);
      if (claimed.reg.settled) throw new FolioError("permission_denied", REFUSED);
      if (!outcome) throw returned("no result: its stream ended without an outcome");
      const { reg, hash } = claimed;
      const pdf = reg.job.output === "pdf" && outcome.ok ? { pdf: Buffer.concat(pdfParts, bytes) } : {};
      this.log.info({ job: reg.id, ok: outcome.ok, pageCount, documentPageCount, bytes, pdf: reg.job.output === "pdf", errorCode: outcome.errorCode }, "sandbox submitted its result");
      this.settle(hash, reg, { pages, pageCount, documentPageCount, ...pdf, outcome, fetchedAtMs: reg.fetchedAtMs ?? submittedAtMs, submittedAtMs });
      answer(null);
    } catch (err) {
      // A cancelled or broken stream is a stream without an outcome.
      const error = err instanceof FolioError ? err : returned("no result: its stream broke off without an outcome");
      if (claimed && error.code !== "permission_denied") {
        this.log.warn({ job: claimed.reg.id, error: error.message, pagesReceived: pages.length, pdfChunksReceived: pdfParts.length }, "sandbox result refused");
        this.settle(claimed.hash, claimed.reg, error);
      }
      answer(error);
    }
  }

  /** Ends a registration once: resolves or rejects its result and forgets its token. */
  private settle(hash: string, reg: Registration, outcome: BrokerResult | Error): void {
    if (reg.settled) return;
    reg.settled = true;
    clearTimeout(reg.expiry);
    reg.ended.abort();
    if (this.byHash.get(hash) === reg) this.byHash.delete(hash);
    if (reg.warm && !reg.warm.call.cancelled && !reg.warm.call.writableEnded) {
      if (outcome instanceof Error && !(outcome instanceof WarmPodLostError) && !reg.submitStarted) {
        // Still connected, holding a document that ended without a result: the conversion
        // replica reports its Job as overdue and the operator deletes it. The call stays
        // open so the broker sees when the pod is gone.
        this.overdueJobs.add(reg.warm.seat.job);
        this.log.warn({ job: reg.id, seat: reg.warm.seat.job, error: outcome.message }, "warm sandbox overdue: reported for deletion");
      } else {
        reg.warm.call.end();
      }
    }
    if (outcome instanceof Error) reg.reject(outcome);
    else reg.resolve(outcome);
  }
}

/** Adds the SandboxBroker service to `server`. */
export function registerBroker(server: grpc.Server, broker: SandboxBroker): void {
  const proto = loadProto<ProtoGrpcType>("folio/conversion/v1/conversion.proto");
  server.addService(proto.folio.conversion.v1.SandboxBroker.service, broker.handlers());
}

function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/**
 * The outcome of a job that asked for output `pdf`, against the `bytes` of
 * PDF received in `parts` (see the module comment): a success is a PDF of
 * 1..maxPages pages with none rendered, a failure comes without a PDF.
 */
function checkPdfOutcome(r: JobOutcome__Output, bytes: number, parts: readonly Buffer[], maxPages: number): void {
  if (!r.ok) {
    if (bytes > 0 || r.pdf) throw returned("a PDF for a failed conversion");
    return;
  }
  if (!r.pdf) throw returned("a successful outcome without the PDF that was asked for");
  if (r.page_count !== 0) throw returned(`an outcome of ${r.page_count} rendered pages where the PDF was asked for`);
  const of = r.document_page_count;
  if (of < 1 || of > maxPages) throw returned(`a PDF of ${of} pages where 1 to ${maxPages} are allowed`);
  if (bytes === 0) throw returned("an empty PDF");
  // The header may straddle chunks: only its first bytes are joined.
  if (!Buffer.concat(parts, Math.min(bytes, PDF_HEADER.length)).equals(PDF_HEADER)) throw returned("a PDF that does not start like a PDF");
}

/** The error for a result that breaks the protocol: the sandbox's output is untrusted. */
function returned(what: string): FolioError {
  return new FolioError("conversion_failed", `the sandbox returned ${what}`);
}

/** Resolves when `stream` can take more, is cancelled, or `signal` aborts. */
function drained(stream: grpc.ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("cancelled", done);
      stream.off("close", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    stream.once("drain", done);
    stream.once("cancelled", done);
    stream.once("close", done);
    signal.addEventListener("abort", done, { once: true });
  });
}
