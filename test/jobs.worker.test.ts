/**
 * Durable jobs read by workers, with the real extraction service (tesseract
 * over gRPC), real pdftoppm and a private Postgres database: two workers
 * share one job's ranges; a worker that dies holding a range (it stops
 * renewing) costs that range one more reading after its lease, never a
 * page stored or a cent charged twice; the money equals the pricing rule on
 * the pages read; the events are numbered without a gap.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Decimal, chargeComponent } from "../internal/billing/index.ts";
import type { PageInput } from "../internal/contracts/index.ts";
import { ExtractionClient } from "../internal/extraction/client.ts";
import type { RunningExtraction } from "../internal/extraction/index.ts";
import { JobWorker, QUEUE_CHANNEL, cancelJob, claimRange, deleteExpiredJobs, eventsAfter, insertJob, jobRow, pagesAfter, type JobWorkerOptions, type PageReader } from "../internal/jobs/index.ts";
import { migrateToLatest, type DatabaseHandle } from "../internal/platform/db/index.ts";
import { newId } from "../internal/platform/ids/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { cer } from "./cer.ts";
import { privateDatabase, startTestExtraction } from "./harness.ts";
import { closeAll } from "./support.ts";

const FIXTURES = join(import.meta.dirname, "fixtures", "ocr");
const PDF = readFileSync(join(FIXTURES, "ten-pages.pdf"));
/** local/tesseract's default price: 0.1 cent a page before the fee (docs/billing.md). */
const PAGE_CENTS = new Decimal("0.1");
const HOLD_BASIS = { model: { source: "local" as const, pricing: { prompt: "0", completion: "0", page: "0.001" } }, pages: 10, maxCompletionTokens: 0, conversions: 0, conversionDeadlineMs: 0, parserPages: 0 };

let database: DatabaseHandle;
let extraction: RunningExtraction;
let client: ExtractionClient;

beforeAll(async () => {
  database = await privateDatabase("jobs_worker");
  await migrateToLatest(database.db);
  extraction = await startTestExtraction();
  client = new ExtractionClient(extraction.grpc.address, { catalogDeadlineMs: 5_000, workDeadlineMs: 30_000 });
}, 60_000);
afterAll(() => closeAll(extraction, database));

/** A reader that records which pages it read (to tell workers apart). */
function recording(read: number[]): PageReader {
  return { extractPage: (model, page: PageInput, options, signal) => (read.push(page.pageNumber), client.extractPage(model, page, options, signal)) };
}

/** A reader that records each page it starts (when it is called) and takes `ms` more over each. */
function slowRecording(read: number[], ms: number): PageReader {
  return {
    extractPage: async (model, page, options, signal) => {
      read.push(page.pageNumber);
      await new Promise((r) => setTimeout(r, ms));
      return client.extractPage(model, page, options, signal);
    },
  };
}

function worker(id: string, reader: PageReader, extra: Partial<JobWorkerOptions> = {}): JobWorker {
  return new JobWorker({
    db: database.db,
    extraction: reader,
    log: createLogger("silent"),
    concurrency: 1,
    leaseMs: 3_000,
    pollMs: 50,
    pdfTimeoutMs: 60_000,
    rangePages: 2,
    maxPages: 100,
    documents: { kind: "postgres" },
    maxAttempts: 5,
    store: { retentionMs: 86_400_000, progressIntervalMs: 0 },
    id,
    ...extra,
  } as JobWorkerOptions);
}

/** An account with `cents` of credit and a queued job of the ten-page PDF (ranges of `rangePages`), holding `holdCents`. */
async function tenPageJob(cents: number, holdCents: number, rangePages: number): Promise<{ accountId: string; jobId: string; holdId: string }> {
  const { db } = database;
  const accountId = newId("acc");
  await db.insertInto("accounts").values({ id: accountId, email: `${accountId}@test.invalid`, name: "jobs", plan: "test", requests_per_minute: 60, requests_per_day: 1000, balance_cents: cents }).execute();
  const jobId = await insertJob(db, {
    accountId,
    apiKeyId: null,
    model: "local/tesseract",
    request: { mime_type: "application/pdf", options: {}, extract: { extractTables: false, outputFormat: "text" }, kind: "pdf", holdBasis: HOLD_BASIS },
    metadata: { case: "ten pages" },
    document: PDF,
    pageCount: 10,
    hold: { cents: holdCents, ttlMs: 86_400_000 },
    store: { kind: "postgres" },
    rangePages,
  });
  return { accountId, jobId, holdId: (await jobRow(db, jobId))!.hold_id! };
}

async function finished(jobId: string): Promise<NonNullable<Awaited<ReturnType<typeof jobRow>>>> {
  await vi.waitFor(async () => expect((await jobRow(database.db, jobId))?.status).toBe("succeeded"), { timeout: 120_000, interval: 200 });
  return (await jobRow(database.db, jobId))!;
}

/** The job's pages, its ledger debits, its usage entry, the account: everything the money and results must agree on. */
async function accounted(jobId: string, accountId: string) {
  const { db } = database;
  const pages = await pagesAfter(db, jobId, 0, 100);
  const debited = await db.selectFrom("ledger_entries").select(sql<string>`coalesce(-sum(amount_cents), 0)`.as("n")).where("request_id", "=", jobId).executeTakeFirstOrThrow();
  const usage = await db.selectFrom("usage_logs").select(["status", "pages_processed", "cost_cents"]).where("id", "=", jobId).execute();
  const account = await db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", accountId).executeTakeFirstOrThrow();
  const chunks = await db.selectFrom("ocr_job_chunks").select(sql<string>`count(*)`.as("n")).where("job_id", "=", jobId).executeTakeFirstOrThrow();
  return { pages: pages.data as { page_number: number; text: string }[], debited: Number(debited.n), usage, account, chunks: Number(chunks.n) };
}

describe("durable jobs read by workers", () => {
  it("spreads one job over two workers, stores every page once in order, charges the rule on the pages read, and numbers its events", async () => {
    const { accountId, jobId } = await tenPageJob(100, 5, 2);
    const [readA, readB] = [[] as number[], [] as number[]];
    const workers = [worker("worker-a", recording(readA)), worker("worker-b", recording(readB))];
    workers.forEach((w) => w.start());
    try {
      const job = await finished(jobId);
      expect({ completed: job.pages_completed, failed: job.pages_failed }).toEqual({ completed: 10, failed: 0 });
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    expect(readA.length, "worker a read pages").toBeGreaterThan(0);
    expect(readB.length, "worker b read pages").toBeGreaterThan(0);
    expect([...readA, ...readB].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    const got = await accounted(jobId, accountId);
    expect(got.pages.map((p) => p.page_number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const p of got.pages) {
      const truth = readFileSync(join(FIXTURES, `ten-pages.page-${p.page_number}.txt`), "utf8");
      expect(cer(p.text, truth), `page ${p.page_number}: ${p.text.slice(0, 200)}`).toBeLessThan(0.05);
    }
    const rule = chargeComponent(PAGE_CENTS.mul(10)).chargedCents;
    expect({ debited: got.debited, usage: got.usage, account: got.account, chunks: got.chunks }).toEqual({
      debited: rule,
      usage: [{ status: "success", pages_processed: 10, cost_cents: String(rule) }],
      account: { balance_cents: 100 - rule, held_cents: 0 },
      chunks: 0,
    });

    const events = await eventsAfter(database.db, jobId, 0, 1000);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]?.type).toBe("ocr.job.started");
    expect(events.at(-1)?.type).toBe("ocr.job.succeeded");
    expect(events.slice(1, -1).every((e) => e.type === "ocr.job.progress")).toBe(true);
    expect(events.at(-1)?.data).toMatchObject({ id: jobId, object: "ocr.job", status: "succeeded", page_count: 10, pages_completed: 10, usage: { total_cost_cents: rule }, metadata: { case: "ten pages" } });
  }, 180_000);

  it("reads a long job's first page alone: the worker's other slots start on the job once page 1 is stored; a shorter job's pages are read side by side", async () => {
    /** Runs a ten-page job on one worker of two slots, the job counting as long from `minPages`; when each page's reading started and ended. */
    async function readings(minPages: number): Promise<Map<number, { start: number; end: number }>> {
      const { jobId } = await tenPageJob(100, 5, 2);
      const times = new Map<number, { start: number; end: number }>();
      const reader: PageReader = {
        async extractPage(model, page, options, signal) {
          const start = performance.now();
          // Page 1 takes a while longer, so that a slot not held back would surely start beside it.
          if (page.pageNumber === 1) await new Promise((r) => setTimeout(r, 1_000));
          const r = await client.extractPage(model, page, options, signal);
          times.set(page.pageNumber, { start, end: performance.now() });
          return r;
        },
      };
      const w = worker(`first-page-${minPages}`, reader, { concurrency: 2, firstPageAloneMinPages: minPages });
      w.start();
      try {
        await finished(jobId);
      } finally {
        await w.stop();
      }
      expect([...times.keys()].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      return times;
    }
    const long = await readings(10);
    const first = long.get(1)!;
    const startedBeside = (times: Map<number, { start: number; end: number }>) => [...times].filter(([n, t]) => n !== 1 && t.start < times.get(1)!.end).map(([n]) => n);
    expect(startedBeside(long), "pages started while page 1 was read").toEqual([]);
    expect(first.end - first.start).toBeGreaterThanOrEqual(1_000);
    const short = await readings(11);
    expect(startedBeside(short), "pages started while page 1 was read").not.toEqual([]);
  }, 240_000);

  it("reads a dead worker's range again once its lease runs out, and stores and charges each page once", async () => {
    const { accountId, jobId } = await tenPageJob(100, 5, 4);
    // A worker took page 1 (the first range is the first page alone) and died: it never renews nor finishes.
    const dead = await claimRange(database.db, "dead-worker", 1_500);
    expect(dead).toMatchObject({ jobId, firstPage: 1, lastPage: 1 });
    const read: number[] = [];
    const live = worker("survivor", recording(read));
    live.start();
    try {
      await finished(jobId);
    } finally {
      await live.stop();
    }
    expect([...read].sort((a, b) => a - b), "the survivor read the dead worker's pages too, once").toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const ranges = await database.db.selectFrom("ocr_job_ranges").select(["first_page", "attempts", "status"]).where("job_id", "=", jobId).orderBy("first_page").execute();
    expect(ranges).toEqual([
      { first_page: 1, attempts: 2, status: "done" },
      { first_page: 2, attempts: 1, status: "done" },
      { first_page: 6, attempts: 1, status: "done" },
      { first_page: 10, attempts: 1, status: "done" },
    ]);
    const got = await accounted(jobId, accountId);
    const rule = chargeComponent(PAGE_CENTS.mul(10)).chargedCents;
    expect({ pages: got.pages.length, debited: got.debited, account: got.account }).toEqual({ pages: 10, debited: rule, account: { balance_cents: 100 - rule, held_cents: 0 } });
  }, 180_000);

  it("stops reading a cancelled job within 2 s, keeps and bills the pages read, gives back the rest of the hold", async () => {
    const { accountId, jobId } = await tenPageJob(100, 5, 1);
    const read: number[] = [];
    // Slow pages, so the job is mid-way when it is cancelled.
    const slow = slowRecording(read, 400);
    const w = worker("to-cancel", slow, { leaseMs: 30_000 });
    w.start();
    try {
      await vi.waitFor(async () => expect((await jobRow(database.db, jobId))?.pages_completed).toBeGreaterThanOrEqual(2), { timeout: 60_000, interval: 50 });
      const cancelled = await cancelJob(database.db, accountId, jobId, { retentionMs: 86_400_000 });
      expect(cancelled?.status).toBe("cancelled");
      // A page claimed just before the cancel may still start; within 2 s the worker has stopped.
      await new Promise((r) => setTimeout(r, 2_000));
      const startedBy2s = read.length;
      await new Promise((r) => setTimeout(r, 1_500));
      expect(read.length, `pages started more than 2 s after the cancel (${read.join(", ")})`).toBe(startedBy2s);
      expect((await jobRow(database.db, jobId))?.pages_completed, "nothing stored after the cancel").toBe(cancelled?.pages_completed);
      expect(await cancelJob(database.db, accountId, jobId, { retentionMs: 86_400_000 }), "a second cancel answers the job as it is").toMatchObject({ status: "cancelled" });
    } finally {
      await w.stop();
    }
    const job = (await jobRow(database.db, jobId))!;
    const got = await accounted(jobId, accountId);
    const rule = chargeComponent(PAGE_CENTS.mul(job.pages_completed)).chargedCents;
    expect({ stored: got.pages.length, debited: got.debited, account: got.account, chunks: got.chunks, usage: got.usage }).toEqual({
      stored: job.pages_completed,
      debited: rule,
      account: { balance_cents: 100 - rule, held_cents: 0 },
      chunks: 0,
      usage: [{ status: "error", pages_processed: job.pages_completed, cost_cents: String(rule) }],
    });
    expect(job.pages_completed).toBeLessThan(10);
    expect((await eventsAfter(database.db, jobId, 0, 1000)).at(-1)?.type).toBe("ocr.job.cancelled");
    expect(await cancelJob(database.db, "acc_someoneelse", jobId, { retentionMs: 1 }), "another account's job is not found").toBeUndefined();
  }, 180_000);

  it("a stopping worker finishes its range within the drain time; stopped at once, it gives its range back for another worker to claim now, the claim not counted", async () => {
    const { jobId } = await tenPageJob(1000, 50, 10);
    const read: number[] = [];
    const slow = slowRecording(read, 300);
    // Ranges [1] and [2-10]; stopped while reading page 1, without a drain: given back at once.
    const ranges = () => database.db.selectFrom("ocr_job_ranges").select(["first_page", "status", "attempts", "lease_owner"]).where("job_id", "=", jobId).orderBy("first_page").execute();
    const first = worker("stops-at-once", slow, { leaseMs: 60_000 });
    first.start();
    await vi.waitFor(() => expect(read.length).toBeGreaterThanOrEqual(1), { timeout: 30_000, interval: 20 });
    await first.stop(0);
    expect(await ranges()).toEqual([
      { first_page: 1, status: "pending", attempts: 0, lease_owner: null },
      { first_page: 2, status: "pending", attempts: 0, lease_owner: null },
    ]);
    // A drained stop: the range being read (pages 2-10) is finished and stored before stop() returns, nothing more is claimed.
    const second = worker("drains", slow, { leaseMs: 60_000 });
    second.start();
    await vi.waitFor(async () => expect((await ranges())[1]?.status).toBe("leased"), { timeout: 30_000, interval: 20 });
    await second.stop(60_000);
    const job = (await jobRow(database.db, jobId))!;
    expect(job).toMatchObject({ status: "succeeded", pages_completed: 10 });
    expect((await ranges()).map((r) => [r.status, r.attempts])).toEqual([
      ["done", 1],
      ["done", 1],
    ]);
  }, 120_000);

  it("gives a range up after maxAttempts claims: its pages are stored as failed, not charged, and a job with nothing read fails", async () => {
    const { accountId, jobId } = await tenPageJob(1000, 50, 10);
    // Four workers died holding the range (attempts 4): the fifth claim is past maxAttempts 4.
    await database.db.updateTable("ocr_job_ranges").set({ attempts: 4 }).where("job_id", "=", jobId).execute();
    const read: number[] = [];
    const w = worker("w-give-up", recording(read), { maxAttempts: 4 });
    w.start();
    try {
      await vi.waitFor(async () => expect((await jobRow(database.db, jobId))?.status).toBe("failed"), { timeout: 30_000, interval: 100 });
    } finally {
      await w.stop();
    }
    expect(read).toEqual([]);
    const job = (await jobRow(database.db, jobId))!;
    expect(job).toMatchObject({ pages_completed: 0, pages_failed: 10, error_code: "page_failed" });
    const pages = await pagesAfter(database.db, jobId, 0, 100);
    expect((pages.data as { error?: { message: string } }[]).every((p) => /gave up after 4 attempts/.test(p.error?.message ?? ""))).toBe(true);
    const { debited, account } = await accounted(jobId, accountId);
    expect(debited).toBe(0);
    expect(account).toMatchObject({ balance_cents: 1000, held_cents: 0 });
  }, 60_000);

  it("idle workers are woken by the queue's notifications: a job queued, and a range given back, are claimed at once, not at the next poll", async () => {
    // Both workers look on their own once a minute, at start and then every 60 s: only a notification can make them claim within the waits below.
    const listen = (onNotify: () => void) => database.listen!(QUEUE_CHANNEL, onNotify);
    const [readA, readB] = [[] as number[], [] as number[]];
    const slow = slowRecording(readA, 300);
    const first = worker("woken-a", slow, { pollMs: 60_000, leaseMs: 60_000, listen });
    const second = worker("woken-b", recording(readB), { pollMs: 60_000, leaseMs: 60_000, listen });
    const ranges = (id: string) => database.db.selectFrom("ocr_job_ranges").select(["first_page", "status", "lease_owner"]).where("job_id", "=", id).orderBy("first_page").execute();
    first.start();
    try {
      // Its first look found nothing; it sleeps now. The job's ranges: [1], [2-10].
      await new Promise((r) => setTimeout(r, 1_000));
      const { jobId } = await tenPageJob(1000, 50, 9);
      await vi.waitFor(async () => expect((await ranges(jobId))[1]).toMatchObject({ status: "leased", lease_owner: "woken-a" }), { timeout: 20_000, interval: 20 });
      // The second worker's first look finds everything leased, so it sleeps; the first stops mid-range and gives its range back.
      second.start();
      await new Promise((r) => setTimeout(r, 1_000));
      await first.stop(0);
      await vi.waitFor(async () => expect((await jobRow(database.db, jobId))?.status).toBe("succeeded"), { timeout: 40_000, interval: 100 });
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
    expect(readA, "the first worker read page 1, then began the second range").toEqual(expect.arrayContaining([1, 2]));
    expect(readB, "the second worker was woken to read the range given back").toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
  }, 90_000);

  it("deletes a job with its pages and events once its retention has run out", async () => {
    const { jobId } = await tenPageJob(100, 5, 10);
    await database.db.updateTable("ocr_jobs").set({ status: "succeeded", expires_at: new Date(Date.now() - 1000) }).where("id", "=", jobId).execute();
    expect(await deleteExpiredJobs(database.db)).toBeGreaterThanOrEqual(1);
    expect(await jobRow(database.db, jobId)).toBeUndefined();
    expect((await pagesAfter(database.db, jobId, 0, 10)).data).toEqual([]);
    expect(await database.db.selectFrom("ocr_job_ranges").selectAll().where("job_id", "=", jobId).execute()).toEqual([]);
  });
});
