/**
 * The sandbox broker over real gRPC on loopback: the one-time token (one
 * fetch, one submit, refused alike when unknown, expired, reused or out of
 * order), the checks on what a sandbox sends back (page order, PNG, size,
 * count, a missing outcome; with output pdf the PDF's chunks, header, size
 * and page count, and no mixing of pages and PDF), cancellation, and logs
 * that never carry the token or the document.
 */
import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { JobHeader__Output } from "../../gen/proto/folio/conversion/v1/JobHeader.ts";
import type { ResultChunk } from "../../gen/proto/folio/conversion/v1/ResultChunk.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { fromGrpcError, grpc } from "../../platform/grpc/index.ts";
import { serveBrokerForTests } from "../../../test/broker-server.ts";
import { folioFailure } from "../../../test/support.ts";
import { PNG_SIGNATURE } from "../../formats/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { SandboxBroker, type BrokerJobInput } from "./broker.ts";

const logLines: string[] = [];
const logSink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    logLines.push(chunk.toString("utf8"));
    cb();
  },
});
const broker = new SandboxBroker({ log: createLogger("debug", logSink), chunkBytes: 1000 });
const server = serveBrokerForTests(broker);

/** Enough of a PNG for the broker, which checks the signature only. */
const png = (n: number) => Buffer.concat([PNG_SIGNATURE, Buffer.from(`page ${n} `.repeat(20))]);

function job(overrides: Partial<BrokerJobInput> = {}): BrokerJobInput {
  return {
    document: randomBytes(4500),
    format: "DOCX",
    maxPages: 5,
    timeoutMs: 10_000,
    maxOutputBytes: 10_000,
    expiresAt: Date.now() + 60_000,
    ...overrides,
  };
}

/** FetchJob as a sandbox does it: the header, then the document's chunks. */
function fetchJob(token: string): Promise<{ header: JobHeader__Output | undefined; document: Buffer; chunks: number }> {
  return new Promise((resolve, reject) => {
    const call = server.client.FetchJob({ token }, { deadline: Date.now() + 10_000 });
    let header: JobHeader__Output | undefined;
    const data: Buffer[] = [];
    call.on("data", (chunk: { item?: string; header?: JobHeader__Output | null; data?: Buffer }) => {
      if (chunk.item === "header" && chunk.header) header = chunk.header;
      else if (chunk.item === "data" && chunk.data) data.push(chunk.data);
    });
    call.on("error", (err: grpc.ServiceError) => reject(fromGrpcError(err, "broker")));
    call.on("end", () => resolve({ header, document: Buffer.concat(data), chunks: data.length }));
  });
}

/** SubmitResult with the given messages (the first normally `start`). */
function submit(messages: ResultChunk[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const call = server.client.SubmitResult({ deadline: Date.now() + 10_000 }, (err) => (err ? reject(fromGrpcError(err, "broker")) : resolve()));
    for (const m of messages) call.write(m);
    call.end();
  });
}

const start = (token: string): ResultChunk => ({ start: { token } });
const page = (n: number, bytes = png(n)): ResultChunk => ({ page: { page_number: n, png: bytes, width: 10, height: 10 } });
const outcome = (pageCount: number, ok = true, extra: { error_code?: string; error_message?: string } = {}): ResultChunk => ({
  result: { ok, page_count: pageCount, timings: { soffice: 12, total: 34 }, ...extra },
});

/** A job whose sandbox submits `messages` after `start`: both the submitter and the waiting conversion get conversion_failed matching `message`, and nothing stays registered. */
async function expectRefused(input: BrokerJobInput, messages: readonly ResultChunk[], message: RegExp): Promise<void> {
  const reg = broker.register(input);
  await fetchJob(reg.token);
  const answered = await folioFailure(submit([start(reg.token), ...messages]));
  const failed = await folioFailure(reg.result);
  expect({ code: failed.code, message: failed.message }).toMatchObject({ code: "conversion_failed", message: expect.stringMatching(message) });
  expect(answered.code).toBe("conversion_failed");
  expect(broker.pending()).toBe(0);
}

describe("SandboxBroker", () => {
  it("hands out the job once and takes the pages back once", async () => {
    const input = job({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
    const reg = broker.register(input);
    expect(reg.token).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    expect(broker.pending()).toBe(1);

    const fetched = await fetchJob(reg.token);
    expect(fetched.header).toMatchObject({ format: "DOCX", dpi: 200, max_pages: 5, timeout_ms: 10_000, max_output_bytes: 10_000, document_bytes: 4500, traceparent: input.traceparent, output: "" });
    expect(fetched.chunks).toBe(5);
    expect(fetched.document.equals(input.document)).toBe(true);

    await submit([start(reg.token), page(1), page(2), outcome(2)]);
    const result = await reg.result;
    expect(result.pageCount).toBe(2);
    expect(result.pages.map((p) => p.toString("latin1"))).toEqual([png(1).toString("latin1"), png(2).toString("latin1")]);
    expect(result.outcome).toEqual({ ok: true, timings: { soffice: 12, total: 34 } });
    expect(result.fetchedAtMs).toBeLessThanOrEqual(result.submittedAtMs);
    expect(broker.pending()).toBe(0);
  });

  it("refuses a second fetch and a second submit with permission_denied", async () => {
    const reg = broker.register(job());
    await fetchJob(reg.token);
    const again = await folioFailure(fetchJob(reg.token));
    expect(again.code).toBe("permission_denied");

    await submit([start(reg.token), page(1), outcome(1)]);
    await reg.result;
    const twice = await folioFailure(submit([start(reg.token), page(1), outcome(1)]));
    expect(twice.code).toBe("permission_denied");
  });

  it("refuses unknown, expired and not-yet-fetched tokens with the same message", async () => {
    const unknown = await folioFailure(fetchJob(randomBytes(32).toString("base64url")));
    const empty = await folioFailure(fetchJob(""));

    const expiring = broker.register(job({ expiresAt: Date.now() + 50 }));
    await expect.poll(() => broker.pending(), { timeout: 5000 }).toBe(0);
    const expired = await folioFailure(fetchJob(expiring.token));
    const expiredResult = await folioFailure(expiring.result);
    expect(expiredResult.code).toBe("timeout");

    const unfetched = broker.register(job());
    const early = await folioFailure(submit([start(unfetched.token), outcome(0, false)]));
    const noStart = await folioFailure(submit([page(1), outcome(1)]));

    const errors = { unknown, empty, expired, early, noStart };
    for (const [name, err] of Object.entries(errors)) {
      expect({ name, code: err.code, message: err.message }).toEqual({ name, code: "permission_denied", message: unknown.message });
    }
    // The refusal did not use up the unfetched token: its sandbox can still fetch and submit.
    await fetchJob(unfetched.token);
    await submit([start(unfetched.token), page(1), outcome(1)]);
    expect((await unfetched.result).pageCount).toBe(1);
  });

  it.each([
    ["a page out of order", [page(2), page(1), outcome(2)], /returned page 2 where page 1 was expected/],
    ["a page that is not a PNG", [page(1), page(2, Buffer.from("GIF89a not a png at all")), outcome(2)], /returned page 2 that is not a PNG/],
    ["more bytes than allowed", [page(1, Buffer.concat([PNG_SIGNATURE, Buffer.alloc(6000)])), page(2, Buffer.concat([PNG_SIGNATURE, Buffer.alloc(6000)])), outcome(2)], /larger than 10000 bytes/],
    ["more pages than allowed", [1, 2, 3, 4, 5, 6].map((n) => page(n)).concat(outcome(6)), /more than the 5 pages allowed/],
    ["a page count that does not match", [page(1), page(2), outcome(3)], /outcome of 3 pages after sending 2/],
    ["a stream without an outcome", [page(1), page(2)], /stream ended without an outcome/],
    ["success without pages", [outcome(0)], /no pages for a successful conversion/],
  ] as const)("fails the job as conversion_failed on %s", async (_name, messages, message) => {
    await expectRefused(job(), messages, message);
  });

  it("passes a failed conversion through as an outcome", async () => {
    const reg = broker.register(job());
    await fetchJob(reg.token);
    await submit([start(reg.token), outcome(0, false, { error_code: "timeout", error_message: "the conversion ran out of time" })]);
    const result = await reg.result;
    expect(result).toMatchObject({ pageCount: 0, pages: [], outcome: { ok: false, errorCode: "timeout", errorMessage: "the conversion ran out of time" } });
  });

  it("fails the job when the sandbox's result stream breaks off", async () => {
    const reg = broker.register(job());
    await fetchJob(reg.token);
    const call = server.client.SubmitResult({ deadline: Date.now() + 10_000 }, () => undefined);
    call.write(start(reg.token));
    call.write(page(1));
    // Wait until the broker has taken the start message, then cut the stream.
    await expect.poll(() => logLines.some((l) => l.includes(reg.id) && l.includes("started submitting")), { timeout: 5000 }).toBe(true);
    call.cancel();
    const failed = await folioFailure(reg.result);
    expect(failed.code).toBe("conversion_failed");
  });

  it("cancel kills the token and rejects the result with the reason", async () => {
    const reg = broker.register(job());
    const reason = new FolioError("timeout", "gave up");
    reg.cancel(reason);
    await expect(reg.result).rejects.toBe(reason);
    expect(broker.pending()).toBe(0);
    expect((await folioFailure(fetchJob(reg.token))).code).toBe("permission_denied");
    reg.cancel(new Error("twice is harmless"));
  });

  it("stops a running fetch when the registration is cancelled", async () => {
    const size = 8 * 1024 * 1024;
    const reg = broker.register(job({ document: randomBytes(size) }));
    const call = server.client.FetchJob({ token: reg.token }, { deadline: Date.now() + 10_000 });
    let received = 0;
    const ended = new Promise<unknown>((resolve) => {
      call.on("data", (chunk: { item?: string; data?: Buffer }) => {
        if (chunk.item === "header") {
          // Stop reading so the broker blocks on flow control, then cancel under it.
          call.pause();
          reg.cancel(new FolioError("timeout", "gave up"));
          setImmediate(() => call.resume());
        } else received += chunk.data?.length ?? 0;
      });
      call.on("error", (err: grpc.ServiceError) => resolve(fromGrpcError(err, "broker")));
      call.on("end", () => resolve("ended"));
    });
    const err = await ended;
    expect({ code: (err as FolioError).code, cutShort: received < size }).toEqual({ code: "permission_denied", cutShort: true });
  });

  it("never logs a token or the document", async () => {
    const input = job({ document: Buffer.from("SECRET-DOCUMENT-CONTENT ".repeat(50)) });
    const reg = broker.register(input);
    await folioFailure(fetchJob(`${reg.token}x`));
    await fetchJob(reg.token);
    await fetchJob(reg.token).catch(() => undefined);
    await submit([start(reg.token), page(1), outcome(1)]);
    await reg.result;
    const logs = logLines.join("");
    expect(logs).toContain("sandbox fetched its job");
    expect(logs).toContain("sandbox broker refused a token");
    expect(logs).not.toContain(reg.token);
    expect(logs).not.toContain(reg.token.slice(0, 16));
    expect(logs).not.toContain("SECRET-DOCUMENT");
    expect(logs).not.toContain(input.document.toString("base64").slice(0, 40));
  });
});

describe("SandboxBroker with output pdf", () => {
  /** Enough of a PDF for the broker, which checks the header only. */
  const pdfBytes = Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(2500)]);
  const pdfChunk = (bytes: Buffer): ResultChunk => ({ pdf_chunk: bytes });
  /** The PDF in chunks of 1000 bytes. */
  const pdfChunks = (bytes = pdfBytes) => Array.from({ length: Math.ceil(bytes.length / 1000) }, (_, i) => pdfChunk(bytes.subarray(i * 1000, (i + 1) * 1000)));
  const pdfOutcome = (documentPages: number, extra: { page_count?: number; pdf?: boolean } = {}): ResultChunk => ({
    result: { ok: true, page_count: 0, document_page_count: documentPages, pdf: true, timings: { pdfOut: 3 }, ...extra },
  });

  it("asks for the PDF in the header and settles with its bytes, put back together", async () => {
    const reg = broker.register(job({ output: "pdf" }));
    const fetched = await fetchJob(reg.token);
    expect(fetched.header).toMatchObject({ output: "pdf", pages: "", max_pages: 5 });
    // The header straddles the first two chunks.
    await submit([start(reg.token), pdfChunk(pdfBytes.subarray(0, 2)), ...pdfChunks(pdfBytes.subarray(2)), pdfOutcome(5)]);
    const result = await reg.result;
    expect({ pages: result.pages, pageCount: result.pageCount, documentPageCount: result.documentPageCount, outcome: result.outcome }).toEqual({
      pages: [],
      pageCount: 0,
      documentPageCount: 5,
      outcome: { ok: true, timings: { pdfOut: 3 } },
    });
    expect(result.pdf?.equals(pdfBytes)).toBe(true);
  });

  it("passes a failed conversion through without a PDF", async () => {
    const reg = broker.register(job({ output: "pdf" }));
    await fetchJob(reg.token);
    await submit([start(reg.token), outcome(0, false, { error_code: "conversion_failed", error_message: "the document has 9 pages; at most 5 are converted" })]);
    const result = await reg.result;
    expect(result).toMatchObject({ pageCount: 0, pages: [], outcome: { ok: false, errorCode: "conversion_failed" } });
    expect(result.pdf).toBeUndefined();
  });

  it.each([
    ["a page", [page(1), pdfOutcome(1)], /returned a page where the PDF was asked for/],
    ["a PDF that is not one", [...pdfChunks(Buffer.concat([PNG_SIGNATURE, randomBytes(500)])), pdfOutcome(1)], /returned a PDF that does not start like a PDF/],
    ["a PDF shorter than its header", [pdfChunk(Buffer.from("%PD")), pdfOutcome(1)], /returned a PDF that does not start like a PDF/],
    ["an empty PDF", [pdfOutcome(1)], /returned an empty PDF/],
    ["more bytes than allowed", [...pdfChunks(Buffer.concat([pdfBytes, randomBytes(8000)])), pdfOutcome(1)], /returned a PDF larger than 10000 bytes/],
    ["more pages than allowed", [...pdfChunks(), pdfOutcome(6)], /returned a PDF of 6 pages where 1 to 5 are allowed/],
    ["a document of no pages", [...pdfChunks(), pdfOutcome(0)], /returned a PDF of 0 pages where 1 to 5 are allowed/],
    ["rendered pages", [...pdfChunks(), pdfOutcome(2, { page_count: 2 })], /returned an outcome of 2 rendered pages where the PDF was asked for/],
    ["an outcome that does not say pdf", [...pdfChunks(), pdfOutcome(2, { pdf: false })], /returned a successful outcome without the PDF that was asked for/],
    ["a PDF for a failed conversion", [...pdfChunks(), outcome(0, false)], /returned a PDF for a failed conversion/],
    ["a stream without an outcome", pdfChunks(), /stream ended without an outcome/],
  ] as const)("fails a PDF job as conversion_failed on %s", async (_name, messages, message) => {
    await expectRefused(job({ output: "pdf" }), messages, message);
  });

  it.each([
    ["PDF chunks", [...pdfChunks(), pdfOutcome(1)], /returned a PDF where pages were asked for/],
    ["a PDF outcome", [page(1), pdfOutcome(1, { page_count: 1 })], /returned a PDF outcome where pages were asked for/],
  ] as const)("fails a pages job as conversion_failed on %s", async (_name, messages, message) => {
    const reg = broker.register(job());
    await fetchJob(reg.token);
    await folioFailure(submit([start(reg.token), ...messages]));
    const failed = await folioFailure(reg.result);
    expect({ code: failed.code, message: failed.message }).toMatchObject({ code: "conversion_failed", message: expect.stringMatching(message) });
  });
});
