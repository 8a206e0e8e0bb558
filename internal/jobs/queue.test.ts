/**
 * The jobs queue on both databases Folio runs on: a private Postgres
 * database of the test server (so no other test's jobs are in the queue)
 * and embedded PGlite, as `folio dev` runs it. Ranges are handed out
 * fairly across accounts, a lease that runs out makes its range claimable
 * again, a range is finished once, and a job's events are numbered without
 * a gap.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { DatabaseHandle, DB } from "../platform/db/index.ts";
import { newId } from "../platform/ids/index.ts";
import { onBothDatabases } from "./databases.testkit.ts";
import { EVENTS_CHANNEL, JobEventWaits, appendEvent, eventsAfter } from "./events.ts";
import { addRanges, claimRange, cutRanges, finishRange, openRanges, queuedPages, renewLease } from "./queue.ts";

describe("cutRanges", () => {
  it("cuts the first page alone, then ranges of at most the given size, in order, covering every page once", () => {
    expect(cutRanges(10, 4)).toEqual([
      [1, 1],
      [2, 5],
      [6, 9],
      [10, 10],
    ]);
    expect(cutRanges(1, 4)).toEqual([[1, 1]]);
    expect(cutRanges(2, 4)).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(cutRanges(9, 4)).toEqual([
      [1, 1],
      [2, 5],
      [6, 9],
    ]);
    for (const [pages, size] of [[1000, 2], [7, 1], [5, 10]] as const) {
      const covered = cutRanges(pages, size).flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i));
      expect(covered).toEqual(Array.from({ length: pages }, (_, i) => i + 1));
    }
  });

  it("refuses a job of no pages and ranges of no pages", () => {
    expect(() => cutRanges(0, 4)).toThrow(/at least one page/);
    expect(() => cutRanges(5, 0)).toThrow(/at least one page/);
  });
});

onBothDatabases("the jobs queue on %s", "jobs_queue", (_name, opened) => {
  let handle: DatabaseHandle;
  let db: DB;
  beforeAll(() => {
    ({ handle, db } = opened);
  });

  /** A new account with one job of `pages` pages queued in ranges of `rangePages`; the job is `createdAt` old. */
  async function queuedJob(pages: number, rangePages: number, createdAt = new Date()): Promise<{ accountId: string; jobId: string }> {
    const accountId = newId("acc");
    await db.insertInto("accounts").values({ id: accountId, email: `${accountId}@test.invalid`, name: "queue test", plan: "test", requests_per_minute: 60, requests_per_day: 1000 }).execute();
    const jobId = newId("job");
    await db
      .insertInto("ocr_jobs")
      .values({ id: jobId, account_id: accountId, api_key_id: null, status: "running", model: "local/tesseract", request: "{}", metadata: "{}", page_count: pages, hold_id: null, error_code: null, error_message: null, started_at: createdAt, finished_at: null, expires_at: null, created_at: createdAt })
      .execute();
    await addRanges(db, { id: jobId, accountId }, pages, rangePages);
    return { accountId, jobId };
  }

  /** Every range still open, done so that one test's leftovers are not the next one's queue. */
  async function drain(): Promise<void> {
    await db.updateTable("ocr_job_ranges").set({ status: "done", lease_owner: null, lease_expires_at: null }).where("status", "<>", "done").execute();
  }

  it("hands a waiting one-page job of another account to the next free worker, ahead of a long job's remaining ranges", async () => {
    await drain();
    const long = await queuedJob(40, 4, new Date(Date.now() - 60_000));
    const short = await queuedJob(1, 4);
    const first = await claimRange(db, "w1", 30_000);
    expect(first, "the oldest job goes first while nobody holds a lease").toMatchObject({ jobId: long.jobId, firstPage: 1, lastPage: 1, attempts: 1 });
    const second = await claimRange(db, "w2", 30_000);
    expect(second, "the account with no live lease goes next").toMatchObject({ jobId: short.jobId, accountId: short.accountId, firstPage: 1, lastPage: 1 });
    const third = await claimRange(db, "w3", 30_000);
    expect(third).toMatchObject({ jobId: long.jobId, firstPage: 2, lastPage: 5 });
    expect(await queuedPages(db)).toBe(41);
  });

  it("gives an express slot only ranges of accounts nothing of which is being read", async () => {
    await drain();
    const long = await queuedJob(40, 2, new Date(Date.now() - 60_000));
    expect(await claimRange(db, "w1", 30_000, { unservedOnly: true }), "nobody holds a lease: the long job's first range").toMatchObject({ jobId: long.jobId, firstPage: 1 });
    expect(await claimRange(db, "w2", 30_000, { unservedOnly: true }), "the long job's account is being read").toBeUndefined();
    const short = await queuedJob(1, 2);
    expect(await claimRange(db, "w2", 30_000, { unservedOnly: true })).toMatchObject({ jobId: short.jobId, firstPage: 1 });
    expect(await claimRange(db, "w3", 30_000, { unservedOnly: true })).toBeUndefined();
    // An ordinary slot still takes the long job's next range.
    expect(await claimRange(db, "w3", 30_000)).toMatchObject({ jobId: long.jobId, firstPage: 2 });
  });

  it("alternates between two accounts' long jobs instead of draining the older first", async () => {
    await drain();
    const a = await queuedJob(20, 2, new Date(Date.now() - 60_000));
    const b = await queuedJob(20, 2);
    const owners: string[] = [];
    for (let i = 0; i < 6; i++) owners.push((await claimRange(db, `w${i}`, 30_000))!.jobId);
    expect(owners).toEqual([a.jobId, b.jobId, a.jobId, b.jobId, a.jobId, b.jobId]);
  });

  it("makes a range claimable again once its lease runs out; the first holder's renewal then fails", async () => {
    await drain();
    const { jobId } = await queuedJob(2, 1);
    const held = await claimRange(db, "dying", 200);
    expect(held).toMatchObject({ jobId, firstPage: 1, attempts: 1 });
    expect(await renewLease(db, held!, "dying", 200), "its holder renews while the lease lasts").toBe(true);
    const other = await claimRange(db, "other", 30_000);
    expect(other, "a live lease is not claimed: the next range is").toMatchObject({ jobId, firstPage: 2 });
    await new Promise((r) => setTimeout(r, 400));
    const again = await claimRange(db, "taker", 30_000);
    expect(again, "the expired range, on its second attempt").toMatchObject({ jobId, firstPage: 1, attempts: 2 });
    expect(await renewLease(db, held!, "dying", 30_000), "the first holder lost it").toBe(false);
    expect(await claimRange(db, "idle", 30_000), "nothing else waits").toBeUndefined();
  });

  it("finishes a range once: the second finisher (a worker that lost its lease) learns it was done", async () => {
    await drain();
    const { jobId } = await queuedJob(3, 2);
    const range = (await claimRange(db, "w", 30_000))!;
    expect(await openRanges(db, jobId)).toBe(2);
    expect(await db.transaction().execute((trx) => finishRange(trx, range))).toBe(true);
    expect(await db.transaction().execute((trx) => finishRange(trx, range))).toBe(false);
    expect(await openRanges(db, jobId)).toBe(1);
    // A finish that rolls back leaves the range open.
    const last = (await claimRange(db, "w", 30_000))!;
    await expect(
      db.transaction().execute(async (trx) => {
        await finishRange(trx, last);
        throw new Error("the pages could not be stored");
      }),
    ).rejects.toThrow(/could not be stored/);
    expect(await openRanges(db, jobId)).toBe(1);
  });

  it("never hands one range to two workers claiming at once", async () => {
    await drain();
    const { jobId } = await queuedJob(10, 1);
    const claims = await Promise.all(Array.from({ length: 14 }, (_, i) => claimRange(db, `w${i}`, 30_000)));
    const got = claims.filter((c) => c !== undefined).map((c) => `${c.jobId}:${c.firstPage}`);
    expect(got.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `${jobId}:${i + 1}`).sort());
  });

  it("numbers a job's events 1, 2, 3 … without a gap, under concurrent appends and a rolled-back one", async () => {
    const { jobId } = await queuedJob(1, 1);
    await expect(
      db.transaction().execute(async (trx) => {
        await appendEvent(trx, jobId, "ocr.job.started", { n: 0 });
        throw new Error("rolled back");
      }),
    ).rejects.toThrow(/rolled back/);
    await Promise.all(Array.from({ length: 12 }, (_, i) => db.transaction().execute((trx) => appendEvent(trx, jobId, "ocr.job.progress", { n: i + 1 }))));
    const events = await eventsAfter(db, jobId, 0);
    expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(new Set(events.map((e) => e.id)).size).toBe(12);
    expect((await eventsAfter(db, jobId, 10)).map((e) => e.sequence)).toEqual([11, 12]);
  });

  /** Appends an event to `jobId` in a transaction that rolls back, then gives a notification time to arrive (none should). */
  async function rolledBackEvent(jobId: string): Promise<void> {
    await db
      .transaction()
      .execute(async (trx) => {
        await appendEvent(trx, jobId, "ocr.job.started", {});
        throw new Error("rolled back");
      })
      .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
  }

  it("wakes a job's event streams at its event's commit, not another job's, and not for a rolled-back event", async () => {
    const [{ jobId }, other] = [await queuedJob(1, 1), await queuedJob(1, 1)];
    const waits = new JobEventWaits((onNotify) => handle.listen!(EVENTS_CHANNEL, onNotify));
    try {
      // The first wait starts listening; a notification without a payload (the listener connecting) ends every wait.
      const wait = async (id: string, ms: number) => {
        const follower = waits.follow(id);
        await follower.wait(ms).finally(() => follower.close());
      };
      await wait(jobId, 2_000);
      const ended: string[] = [];
      const minute = (id: string, name: string) => wait(id, 60_000).then(() => ended.push(name));
      const [mine, theirs] = [minute(jobId, "mine"), minute(other.jobId, "theirs")];
      await rolledBackEvent(jobId);
      expect(ended, "nothing ends for a rolled-back event").toEqual([]);
      await db.transaction().execute((trx) => appendEvent(trx, jobId, "ocr.job.started", {}));
      await mine;
      expect(ended).toEqual(["mine"]);
      waits.wake(other.jobId);
      await theirs;
    } finally {
      await waits.close();
    }
  }, 30_000);

  it("keeps a notification that comes while a stream reads rather than waits: its next wait ends at once", async () => {
    const { jobId } = await queuedJob(1, 1);
    const waits = new JobEventWaits((onNotify) => handle.listen!(EVENTS_CHANNEL, onNotify));
    const follower = waits.follow(jobId);
    try {
      // Listening from now on (on Postgres the connection's arrival is itself a notification): nothing kept after.
      await follower.wait(2_000);
      while (follower.pending) await follower.wait(1);
      await rolledBackEvent(jobId);
      expect(follower.pending, "nothing kept for a rolled-back event").toBe(false);
      // The event commits while nobody waits (the stream is between a read and its wait).
      await db.transaction().execute((trx) => appendEvent(trx, jobId, "ocr.job.started", {}));
      await vi.waitFor(() => expect(follower.pending).toBe(true), { timeout: 10_000, interval: 20 });
      const ended = await Promise.race([follower.wait(60_000).then(() => "at once"), new Promise((r) => setTimeout(() => r("a minute's wait"), 5_000))]);
      expect(ended).toBe("at once");
      expect(follower.pending).toBe(false);
    } finally {
      follower.close();
      await waits.close();
    }
  }, 30_000);
});
