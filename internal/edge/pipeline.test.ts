/**
 * mapLimit, the pool that reads a document's pages: over arrays and over
 * streams of pages (a PDF rendered page by page), with the order of events
 * recorded rather than timed.
 */
import { describe, expect, it } from "vitest";
import { mapLimit } from "./pipeline.ts";

/** A promise with its resolve and reject at hand. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every queued callback run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("mapLimit", () => {
  it("keeps the results in source order however the work finishes, at most `limit` at a time", async () => {
    let running = 0;
    let most = 0;
    const out = await mapLimit([5, 1, 4, 2, 3], 2, async (n, i) => {
      running++;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, n * 3));
      running--;
      return `${i}:${n}`;
    });
    expect(out).toEqual(["0:5", "1:1", "2:4", "3:2", "4:3"]);
    expect(most).toBe(2);
  });

  it("takes an item from a stream only when a slot is free", async () => {
    const events: string[] = [];
    const work = [deferred(), deferred(), deferred()];
    async function* pages() {
      for (let n = 1; n <= 3; n++) {
        events.push(`produce ${n}`);
        yield n;
      }
      events.push("source done");
    }
    const result = mapLimit(pages(), 2, async (n) => {
      events.push(`start ${n}`);
      await work[n - 1]!.promise;
      events.push(`end ${n}`);
      return n * 10;
    });
    await settle();
    expect(events).toEqual(["produce 1", "start 1", "produce 2", "start 2"]);
    work[1]!.resolve();
    await settle();
    expect(events).toEqual(["produce 1", "start 1", "produce 2", "start 2", "end 2", "produce 3", "start 3"]);
    work[0]!.resolve();
    work[2]!.resolve();
    expect(await result).toEqual([10, 20, 30]);
    expect(events.at(-1)).toBe("source done");
  });

  it("rejects on the first failure while the stream is still producing, starts nothing more, and closes the stream", async () => {
    const events: string[] = [];
    const third = deferred<number>();
    async function* pages() {
      try {
        yield 1;
        yield 2;
        yield await third.promise;
        yield 4;
      } finally {
        events.push("source closed");
      }
    }
    const started: number[] = [];
    const failure = new Error("page 1 failed");
    const result = mapLimit(pages(), 2, async (n) => {
      started.push(n);
      if (n === 1) {
        await settle();
        throw failure;
      }
      return n;
    });
    // Page 2 is done and the stream waits for page 3 when page 1 fails: the caller hears at once.
    await expect(result).rejects.toBe(failure);
    expect(events).toEqual([]);
    third.resolve(3);
    await settle();
    expect(started).toEqual([1, 2]);
    expect(events).toEqual(["source closed"]);
  });

  it("closes an idle stream before it rejects", async () => {
    const events: string[] = [];
    async function* pages() {
      try {
        yield 1;
        yield 2;
      } finally {
        events.push("source closed");
      }
    }
    const failure = new Error("no");
    await expect(
      mapLimit(pages(), 1, async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(events).toEqual(["source closed"]);
  });

  it("rejects with the stream's own failure", async () => {
    const failure = new Error("pdftoppm failed");
    async function* pages() {
      yield 1;
      throw failure;
    }
    await expect(mapLimit(pages(), 2, async (n) => n)).rejects.toBe(failure);
  });
});
