import { describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { Slots } from "./slots.ts";

describe("Slots", () => {
  it("runs at most `size` at once and hands slots to waiters in order", async () => {
    const slots = new Slots(2, 10);
    const a = await slots.acquire();
    const b = await slots.acquire();
    const order: string[] = [];
    const c = slots.acquire().then((r) => (order.push("c"), r));
    const d = slots.acquire().then((r) => (order.push("d"), r));
    expect({ running: slots.running, waiting: slots.waiting }).toEqual({ running: 2, waiting: 2 });
    a();
    a(); // releasing twice frees one slot only
    const rc = await c;
    expect(order).toEqual(["c"]);
    expect(slots.running).toBe(2);
    b();
    const rd = await d;
    expect(order).toEqual(["c", "d"]);
    rc();
    rd();
    expect({ running: slots.running, waiting: slots.waiting }).toEqual({ running: 0, waiting: 0 });
  });

  it("refuses at once with a retryable service_unavailable when the queue is full", async () => {
    const slots = new Slots(1, 1);
    await slots.acquire();
    void slots.acquire();
    const err = await slots.acquire().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FolioError);
    expect((err as FolioError).code).toBe("service_unavailable");
    expect((err as FolioError).retryable).toBe(true);
    expect((err as FolioError).headers["retry-after"]).toBe("5");
  });

  it("drops a waiter whose caller gave up", async () => {
    const slots = new Slots(1, 5);
    const first = await slots.acquire();
    const ac = new AbortController();
    const waiting = slots.acquire(ac.signal);
    ac.abort(new Error("gone"));
    await expect(waiting).rejects.toThrow("gone");
    expect(slots.waiting).toBe(0);
    first();
    expect(slots.running).toBe(0);
  });
});
