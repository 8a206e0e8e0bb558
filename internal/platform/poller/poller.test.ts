/**
 * The leased slot poller with a fake queue (an array and a claim function)
 * and fake timers: how slots fill, sleep, wake, back off after a failed
 * claim, leave failed work to its lease, and stop (draining, then giving back
 * what is still under way).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LeasedPoller, leaseHolderId, type LeasedPollerOptions, type PollerSlot } from "./index.ts";

interface Work {
  n: number;
}
interface Slot extends PollerSlot {
  name: string;
}

const POLL_MS = 100;
const IDLE_SLOT_MS = 1_000;

/** A queue of `due` work, the slots' claims in order, and a poller over them; `handle` is what each claimed work does. */
function fake(slots: Slot[], due: number[], handle: (w: Work, signal: AbortSignal) => Promise<unknown>, extra: Partial<LeasedPollerOptions<Work, Slot>> = {}) {
  const queue = due.map((n) => ({ n }));
  const claims: string[] = [];
  const errors: { err: unknown; work: Work | undefined }[] = [];
  const abandoned: Work[] = [];
  const released: Work[] = [];
  const poller: LeasedPoller<Work, Slot> = new LeasedPoller<Work, Slot>({
    slots,
    claim: async (slot) => (claims.push(slot.name), queue.shift()),
    handle: (w) => handle(w, poller.signal),
    release: async (w) => void released.push(w),
    onAbandoned: (w) => abandoned.push(w),
    onError: (err, work) => errors.push({ err, work }),
    pollMs: POLL_MS,
    idleSlotMs: IDLE_SLOT_MS,
    ...extra,
  });
  return { poller, queue, claims, errors, abandoned, released };
}

const three: Slot[] = [
  { name: "a", polls: true },
  { name: "b", polls: false },
  { name: "c", polls: false },
];

/** A handler that takes `ms` of (fake) time, or throws once the poller's signal aborts. */
const takes = (ms: number, done: number[]) => (w: Work, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => (done.push(w.n), resolve()), ms);
    signal.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("LeasedPoller", () => {
  it("fills every slot at once: a slot that claims work wakes the sleeping ones, which claim the rest", async () => {
    const done: number[] = [];
    let busy = 0;
    let most = 0;
    const f = fake(three, [], async (w, signal) => {
      most = Math.max(most, ++busy);
      await takes(500, done)(w, signal);
      busy--;
    });
    f.poller.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.claims, "each slot looked once and found nothing").toEqual(["a", "b", "c"]);
    f.queue.push({ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 });
    // Only the polling slot looks at its next poll; its claim wakes b and c.
    await vi.advanceTimersByTimeAsync(POLL_MS);
    expect(most, "slots busy at once").toBe(3);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(done.sort()).toEqual([1, 2, 3, 4]);
    await f.poller.stop();
    expect(f.errors).toEqual([]);
  });

  it("idle, the polling slot looks every pollMs and the others every idleSlotMs (never less than pollMs)", async () => {
    const f = fake(three, [], async () => undefined);
    f.poller.start();
    await vi.advanceTimersByTimeAsync(IDLE_SLOT_MS - 1);
    const count = (name: string) => f.claims.filter((c) => c === name).length;
    expect({ a: count("a"), b: count("b"), c: count("c") }).toEqual({ a: 10, b: 1, c: 1 });
    await vi.advanceTimersByTimeAsync(1);
    expect({ a: count("a"), b: count("b"), c: count("c") }).toEqual({ a: 11, b: 2, c: 2 });
    await f.poller.stop();

    const slow = fake(three, [], async () => undefined, { pollMs: 2_000 });
    slow.poller.start();
    await vi.advanceTimersByTimeAsync(1_999);
    expect(slow.claims, "no slot looks before pollMs").toEqual(["a", "b", "c"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(slow.claims.length).toBe(6);
    await slow.poller.stop();
  });

  it("a notification or wake() has every idle slot look now", async () => {
    let notify = () => {};
    let unlistened = false;
    const listen = (onNotify: () => void) => ((notify = onNotify), async () => void (unlistened = true));
    const f = fake(three, [], async () => undefined, { listen });
    f.poller.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.claims).toHaveLength(3);
    notify();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.claims).toHaveLength(6);
    f.poller.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.claims).toHaveLength(9);
    await f.poller.stop();
    expect(unlistened, "stop closes the subscription").toBe(true);
  });

  it("a claim that throws (the database away) is told with no work and backs off as when idle", async () => {
    const down = new Error("connection refused");
    let claims = 0;
    const f = fake([{ name: "a", polls: true }], [], async () => undefined, {
      claim: async () => {
        claims++;
        throw down;
      },
    });
    f.poller.start();
    await vi.advanceTimersByTimeAsync(POLL_MS - 1);
    expect(claims).toBe(1);
    expect(f.errors).toEqual([{ err: down, work: undefined }]);
    await vi.advanceTimersByTimeAsync(1);
    expect(claims).toBe(2);
    await f.poller.stop();
    expect(f.abandoned).toEqual([]);
  });

  it("work whose handling throws is left to its lease (told, counted, not given back) and the slot claims again at once", async () => {
    const boom = new Error("the page crashed");
    const handled: number[] = [];
    const f = fake([{ name: "a", polls: true }], [1, 2], async (w) => {
      handled.push(w.n);
      if (w.n === 1) throw boom;
    });
    f.poller.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(handled).toEqual([1, 2]);
    expect(f.errors).toEqual([{ err: boom, work: { n: 1 } }]);
    expect(f.abandoned).toEqual([{ n: 1 }]);
    expect(f.released).toEqual([]);
    await f.poller.stop();
  });

  it("stopping with drainMs lets work under way finish; what is still under way after it is aborted, given back and counted, not told", async () => {
    const done: number[] = [];
    const f = fake(three, [1, 2], async (w, signal) => takes(w.n === 1 ? 200 : 5_000, done)(w, signal));
    f.poller.start();
    await vi.advanceTimersByTimeAsync(0);
    let stopped = false;
    const stop = f.poller.stop(1_000).then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(999);
    expect({ done, stopped, aborted: f.poller.signal.aborted }).toEqual({ done: [1], stopped: false, aborted: false });
    await vi.advanceTimersByTimeAsync(1);
    await stop;
    expect({ done, aborted: f.poller.signal.aborted }).toEqual({ done: [1], aborted: true });
    expect(f.released).toEqual([{ n: 2 }]);
    expect(f.abandoned).toEqual([{ n: 2 }]);
    expect(f.errors, "a stop's aborts are not told as errors").toEqual([]);
    expect(f.claims, "no slot claims after the stop").toHaveLength(3);
  });

  it("stopped at once, idle slots end, work under way is aborted, and a give-back that fails is ignored", async () => {
    const f = fake(three, [7], async (w, signal) => takes(60_000, [])(w, signal), {
      release: async () => {
        throw new Error("database away");
      },
    });
    f.poller.start();
    await vi.advanceTimersByTimeAsync(0);
    await f.poller.stop();
    expect(f.abandoned).toEqual([{ n: 7 }]);
    expect(f.errors).toEqual([]);
  });

  it("starts its slots once however often started", async () => {
    const f = fake(three, [], async () => undefined);
    f.poller.start();
    f.poller.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.claims).toEqual(["a", "b", "c"]);
    await f.poller.stop();
  });

  it("names a lease holder by host, pid and a random part", () => {
    const [a, b] = [leaseHolderId(), leaseHolderId()];
    expect(a).toMatch(new RegExp(`-${process.pid}-[0-9a-f]{8}$`));
    expect(a).not.toBe(b);
  });
});
