/**
 * The broker's warm-pod side over real gRPC on loopback: the test plays the
 * warm pod (FetchJob with its pool token as a long poll, SubmitResult), and a
 * stub stands in for the seats the conversion replica learns from the pool
 * Jobs (pool.ts, tested end to end in backend.pool.test.ts).
 */
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { serveBrokerForTests } from "../../../test/broker-server.ts";
import { PNG_SIGNATURE } from "../../formats/index.ts";
import type { JobChunk__Output } from "../../gen/proto/folio/conversion/v1/JobChunk.ts";
import type { ResultChunk } from "../../gen/proto/folio/conversion/v1/ResultChunk.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { fromGrpcError, grpc } from "../../platform/grpc/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { SandboxBroker, WarmPodLostError, type BrokerJobInput, type Seat, type SeatLookup } from "./broker.ts";

const log = createLogger(process.env.FOLIO_TEST_LOG ?? "silent");
const broker = new SandboxBroker({ log, chunkBytes: 64 });
const server = serveBrokerForTests(broker);

/** Seats as the pool Jobs would give them: token → Job. */
class StubSeats implements SeatLookup {
  readonly seats = new Map<string, Seat>();
  add(token: string, job: string, maxDocumentMs = 60_000): void {
    this.seats.set(createHash("sha256").update(token).digest("hex"), { job, maxDocumentMs });
  }
  get(hash: string) {
    return this.seats.get(hash);
  }
  waitFor(hash: string) {
    return Promise.resolve(this.seats.get(hash));
  }
}
const seats = new StubSeats();
broker.usePool(seats);

const calls: grpc.ClientReadableStream<JobChunk__Output>[] = [];
afterEach(() => {
  for (const c of calls.splice(0)) c.cancel();
});

function job(overrides: Partial<BrokerJobInput> = {}): BrokerJobInput {
  return { document: Buffer.from("a document of some bytes, longer than one chunk of sixty-four bytes: " + "x".repeat(100)), format: "TXT", maxPages: 5, timeoutMs: 10_000, maxOutputBytes: 1 << 20, expiresAt: Date.now() + 15_000, ...overrides };
}

interface Waiting {
  call: grpc.ClientReadableStream<JobChunk__Output>;
  /** Resolves with the document once it is in (without waiting for the call's end). */
  document: Promise<Buffer>;
  /** Resolves when the call ends: its error, or null. */
  ended: Promise<FolioError | null>;
}

/** Acts as a warm pod: FetchJob with its token, a long poll. */
function waitAsPod(token: string): Waiting {
  const call = server.client.FetchJob({ token }, { deadline: Date.now() + 30_000 });
  calls.push(call);
  const parts: Buffer[] = [];
  let expected = -1;
  const document = Promise.withResolvers<Buffer>();
  const ended = new Promise<FolioError | null>((resolve) => {
    call.on("data", (chunk: JobChunk__Output) => {
      if (chunk.header) expected = Number(chunk.header.document_bytes);
      if (chunk.data) parts.push(chunk.data);
      const have = parts.reduce((n, p) => n + p.length, 0);
      if (expected >= 0 && have === expected) document.resolve(Buffer.concat(parts));
    });
    call.on("error", (err: grpc.ServiceError) => resolve(fromGrpcError(err, "broker")));
    call.on("end", () => resolve(null));
  });
  ended.then((e) => document.reject(e ?? new Error("ended without a document")), () => undefined);
  document.promise.catch(() => undefined);
  return { call, document: document.promise, ended };
}

async function submit(token: string, pages: number): Promise<void> {
  const messages: ResultChunk[] = [{ start: { token } }];
  for (let n = 1; n <= pages; n++) messages.push({ page: { page_number: n, png: Buffer.concat([PNG_SIGNATURE, Buffer.from(`page ${n}`)]) } });
  messages.push({ result: { ok: true, page_count: pages, timings: {} } });
  await new Promise<void>((resolve, reject) => {
    const call = server.client.SubmitResult({ deadline: Date.now() + 10_000 }, (err) => (err ? reject(fromGrpcError(err, "broker")) : resolve()));
    for (const m of messages) call.write(m);
    call.end();
  });
}

/** Waits until the broker counts `n` idle warm pods. */
async function idle(n: number): Promise<void> {
  await expect.poll(() => broker.warmStats().idle, { timeout: 5000 }).toBe(n);
}

describe("SandboxBroker, warm pods", () => {
  it("hands a waiting pod exactly one document, and never a second one on the same token", async () => {
    seats.add("tok-single-use-0123456789", "pool-a1");
    const pod = waitAsPod("tok-single-use-0123456789");
    await idle(1);
    const input = job();
    const warm = broker.offer(input);
    expect(warm?.seat.job).toBe("pool-a1");
    expect(await pod.document).toEqual(input.document);
    expect(broker.warmStats()).toMatchObject({ idle: 0, busy: 1 });

    // While it converts, and after: the same token waits again in vain.
    const again = waitAsPod("tok-single-use-0123456789");
    expect((await again.ended)?.code).toBe("permission_denied");

    await submit("tok-single-use-0123456789", 2);
    const result = await warm!.result;
    expect(result.pageCount).toBe(2);
    // The broker ends the open call once the result is in.
    expect(await pod.ended).toBeNull();
    const after = waitAsPod("tok-single-use-0123456789");
    expect((await after.ended)?.code).toBe("permission_denied");
    expect(broker.offer(job())).toBeUndefined();
  });

  it("refuses a token that is neither a document's nor a warm pod's, with the same answer as a spent one", async () => {
    const stranger = waitAsPod("tok-nobody-knows-0123456789");
    const err = await stranger.ended;
    expect(err?.code).toBe("permission_denied");
    expect(err?.message).toMatch(/not valid/);
    expect(broker.warmStats().idle).toBe(0);
  });

  it("offers nothing when no pod waits, or when the waiting pod's deadline leaves no room for the document's time limit", async () => {
    expect(broker.offer(job())).toBeUndefined();
    seats.add("tok-short-deadline-0123456789", "pool-short", 5_000);
    waitAsPod("tok-short-deadline-0123456789");
    await idle(1);
    expect(broker.offer(job({ timeoutMs: 10_000 }))).toBeUndefined();
    const fits = broker.offer(job({ timeoutMs: 5_000 }));
    expect(fits?.seat.job).toBe("pool-short");
    fits?.cancel(new FolioError("internal_error", "test over"));
  });

  it("fails the document with a retryable WarmPodLostError when the pod goes away holding it", async () => {
    seats.add("tok-pod-dies-0123456789", "pool-dies");
    const pod = waitAsPod("tok-pod-dies-0123456789");
    await idle(1);
    const warm = broker.offer(job())!;
    await pod.document;
    pod.call.cancel(); // the pod's connection goes, as when it is killed
    const err = await warm.result.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WarmPodLostError);
    expect((err as FolioError).retryable).toBe(true);
    expect(broker.warmStats().busy).toBe(0);
  });

  it("reports a pod still connected after its document's deadline as overdue, until it is gone", async () => {
    seats.add("tok-hangs-0123456789", "pool-hangs");
    const pod = waitAsPod("tok-hangs-0123456789");
    await idle(1);
    const warm = broker.offer(job({ timeoutMs: 100, expiresAt: Date.now() + 300 }))!;
    await pod.document;
    const err = await warm.result.then(
      () => undefined,
      (e: unknown) => e as FolioError,
    );
    expect(err?.code).toBe("timeout");
    expect(broker.warmStats().overdue).toEqual(["pool-hangs"]);
    // A late result is refused.
    await expect(submit("tok-hangs-0123456789", 1)).rejects.toMatchObject({ code: "permission_denied" });
    pod.call.cancel(); // the operator deleted its Job: the pod is killed
    await expect.poll(() => broker.warmStats().overdue, { timeout: 5000 }).toEqual([]);
  });

  it("hands documents to the pods that waited longest first", async () => {
    seats.add("tok-first-0123456789", "pool-first");
    seats.add("tok-second-0123456789", "pool-second");
    const first = waitAsPod("tok-first-0123456789");
    await idle(1);
    const second = waitAsPod("tok-second-0123456789");
    await idle(2);
    const a = broker.offer(job())!;
    const b = broker.offer(job(), new Set())!;
    expect([a.seat.job, b.seat.job]).toEqual(["pool-first", "pool-second"]);
    await Promise.all([first.document, second.document]);
    a.cancel(new FolioError("internal_error", "test over"));
    b.cancel(new FolioError("internal_error", "test over"));
  });
});
