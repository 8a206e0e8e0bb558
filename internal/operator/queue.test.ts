// The keyed work queue: deduplication, one key at a time, re-run after a requeue during processing, back-off on errors.
import { afterEach, describe, expect, it } from "vitest";
import { Backoff, backoffDelay } from "./backoff.ts";
import { WorkQueue, type WorkOutcome } from "./queue.ts";

const queues: WorkQueue[] = [];
function queue(baseMs = 10): WorkQueue {
  const q = new WorkQueue({ baseMs, maxMs: 1000 });
  queues.push(q);
  return q;
}
afterEach(async () => {
  await Promise.all(queues.splice(0).map((q) => q.close()));
});

async function until(check: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Wraps a handler to count how many of its calls overlap; `most()` is the highest count seen. */
function overlapCounted(body: (key: string) => Promise<void>): { handle: (key: string) => Promise<void>; most: () => number } {
  let running = 0;
  let most = 0;
  return {
    handle: async (key) => {
      running++;
      most = Math.max(most, running);
      await body(key);
      running--;
    },
    most: () => most,
  };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("WorkQueue", () => {
  it("handles a key added many times before it runs once", async () => {
    const q = queue();
    const seen: string[] = [];
    q.add("a");
    q.add("a");
    q.add("b");
    q.add("a");
    q.start(async (key) => {
      seen.push(key);
    });
    await until(() => seen.length >= 2);
    await new Promise((r) => setTimeout(r, 30));
    expect(seen).toEqual(["a", "b"]);
  });

  it("processes one key at a time, and a key added while it is processed runs again afterwards", async () => {
    const q = queue();
    const gate = deferred();
    const log: string[] = [];
    const counted = overlapCounted(async (key) => {
      log.push(`start ${key}`);
      if (log.length === 1) await gate.promise;
      log.push(`end ${key}`);
    });
    q.start(counted.handle);
    q.add("a");
    await until(() => log.length === 1);
    q.add("a");
    q.add("b");
    expect(q.isProcessing("a")).toBe(true);
    gate.resolve();
    await until(() => log.length === 6);
    expect(log).toEqual(["start a", "end a", "start b", "end b", "start a", "end a"]);
    expect(counted.most()).toBe(1);
  });

  it("retries a failing key with growing back-off and reports each failure", async () => {
    const q = queue(20);
    const times: number[] = [];
    const outcomes: WorkOutcome[] = [];
    q.start(
      async () => {
        times.push(Date.now());
        if (times.length < 4) throw new Error("boom");
      },
      (o) => outcomes.push(o),
    );
    q.add("k");
    await until(() => times.length === 4);
    expect(outcomes.filter((o) => o.error).map((o) => o.retryInMs)).toEqual([expect.any(Number), expect.any(Number), expect.any(Number)]);
    const delays = outcomes.filter((o) => o.error).map((o) => o.retryInMs!);
    // Attempt n waits within [base*2^n/2, base*2^n].
    delays.forEach((d, n) => {
      expect(d).toBeGreaterThanOrEqual((20 * 2 ** n) / 2);
      expect(d).toBeLessThanOrEqual(20 * 2 ** n);
    });
    expect(times[3]! - times[2]!).toBeGreaterThanOrEqual(delays[2]! - 5);
  });

  it("runs a key again after requeueAfterMs", async () => {
    const q = queue();
    let runs = 0;
    q.start(async () => {
      runs++;
      return runs === 1 ? { requeueAfterMs: 30 } : undefined;
    });
    q.add("k");
    await until(() => runs === 2);
  });

  it("keeps keys while stopped and handles them once started again, never two at a time across a restart", async () => {
    const q = queue();
    const gate = deferred();
    const log: string[] = [];
    const { handle, most } = overlapCounted(async (key) => {
      log.push(key);
      if (key === "slow") await gate.promise;
    });
    q.start(handle);
    q.add("slow");
    await until(() => log.length === 1);
    const stopped = q.stop();
    q.add("next");
    q.start(handle);
    expect(log).toEqual(["slow"]);
    gate.resolve();
    await stopped;
    await until(() => log.length === 2);
    expect(log).toEqual(["slow", "next"]);
    expect(most()).toBe(1);
  });

  it("does not run while stopped", async () => {
    const q = queue();
    const log: string[] = [];
    q.start(async (k) => {
      log.push(k);
    });
    await q.stop();
    q.add("k");
    await new Promise((r) => setTimeout(r, 30));
    expect(log).toEqual([]);
    expect(q.length).toBe(1);
  });
});

describe("back-off", () => {
  it("grows exponentially up to the maximum, with jitter in the upper half", () => {
    const opts = { baseMs: 100, maxMs: 1000 };
    expect([0, 1, 2, 3, 4, 10].map((n) => backoffDelay(n, opts, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect([0, 1, 2].map((n) => backoffDelay(n, opts, () => 0))).toEqual([50, 100, 200]);
    const b = new Backoff(opts, () => 1);
    expect([b.next(), b.next(), b.next()]).toEqual([100, 200, 400]);
    b.reset();
    expect(b.next()).toBe(100);
  });
});
