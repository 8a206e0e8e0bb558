/**
 * GCRA admission: one table of cases run against the in-process limiter (with
 * an injected clock) and the Redis limiter (real Redis, server TIME, real
 * sleeps), so the TypeScript and Lua twins are held to the same behaviour.
 * Then Redis-failure behaviour and pure unit tests of gcra().
 */
import { once } from "node:events";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { redisUrl } from "../../test/harness.ts";
import { FolioError } from "../platform/errors/index.ts";
import { createLogger } from "../platform/log/index.ts";
import { gcra } from "./gcra.ts";
import { keyFence, type Admission, type Fence, type Limit, type RateLimiter } from "./interface.ts";
import { MemoryRateLimiter } from "./memory.ts";
import { RedisRateLimiter } from "./redis.ts";

const log = createLogger("silent");
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

type Decision = Extract<Admission, { kind: "decision" }>;

/** What a case sees: a limiter, a fresh subject, and a way to let time pass. */
interface World {
  limiter: RateLimiter;
  subject: string;
  /** A fence key that belongs to this test only. */
  fenceKey: string;
  advance(ms: number): Promise<void>;
  /**
   * How far (ms) a time the backend reports may fall short of the exact value:
   * 0 for the injected clock; Redis uses its own TIME and real time passes
   * between calls.
   */
  tol: number;
}

function show(x: unknown): string {
  return JSON.stringify(x);
}

async function decide(w: World, limits: readonly Limit[], fence?: Fence): Promise<Decision> {
  const a = await w.limiter.admit(w.subject, limits, fence);
  expect(a.kind, `expected a decision, got ${show(a)}`).toBe("decision");
  return a as Decision;
}

/** `actual` is `expected` minus at most the backend's tolerance (time only moves forward). */
function expectNear(actual: number, expected: number, tol: number, what: string): void {
  expect(actual, `${what}: got ${actual}, want ${expected} (-${tol})`).toBeLessThanOrEqual(expected);
  expect(actual, `${what}: got ${actual}, want ${expected} (-${tol})`).toBeGreaterThanOrEqual(expected - tol);
}

/** Short enough to wait out with real sleeps on Redis. */
const fivePerSecond: Limit[] = [{ name: "second", count: 5, periodMs: 1000 }];
/** For cases that never wait: a 2 s interval leaves room for a slow machine. */
const fivePer10s: Limit[] = [{ name: "ten", count: 5, periodMs: 10_000 }];
/** Room for 100 a minute but only 3 a day: the day window is the one that runs out. */
const minuteAndSmallDay: Limit[] = [
  { name: "minute", count: 100, periodMs: 60_000 },
  { name: "day", count: 3, periodMs: 86_400_000 },
];

interface Case {
  name: string;
  run(w: World): Promise<void>;
}

const cases: Case[] = [
  {
    name: "allows N requests in a burst, then denies the N+1th with retryAfterMs = period/N",
    async run(w) {
      for (let i = 1; i <= 5; i++) {
        const d = await decide(w, fivePer10s);
        expect(d.allowed, `request ${i}: ${show(d)}`).toBe(true);
        expect(d.retryAfterMs, `request ${i}: ${show(d)}`).toBe(0);
        expect(d.fenceChecked, show(d)).toBe(true);
      }
      const denied = await decide(w, fivePer10s);
      expect(denied.allowed, show(denied)).toBe(false);
      expectNear(denied.retryAfterMs, 2000, w.tol, "retryAfterMs");
      expect(denied.retryAfterMs, show(denied)).toBeGreaterThan(0);
    },
  },
  // Three admitted, then the fourth waits period/3 in whole milliseconds.
  ...[
    { name: "a minute window: the N+1th waits period/N", limit: { name: "minute", count: 3, periodMs: 60_000 }, retryAfterMs: 20_000 },
    // ceil(333.33…)
    { name: "a fractional interval (3 per second): retryAfterMs is a whole number, rounded up", limit: { name: "s", count: 3, periodMs: 1000 }, retryAfterMs: 334 },
  ].map(
    ({ name, limit, retryAfterMs }): Case => ({
      name,
      async run(w) {
        const limits: Limit[] = [limit];
        for (let i = 1; i <= 3; i++) expect((await decide(w, limits)).allowed, `request ${i}`).toBe(true);
        const denied = await decide(w, limits);
        expect(denied.allowed, show(denied)).toBe(false);
        expect(Number.isInteger(denied.retryAfterMs), show(denied)).toBe(true);
        expectNear(denied.retryAfterMs, retryAfterMs, w.tol, "retryAfterMs");
      },
    }),
  ),
  {
    name: "a same-instant burst of N is fully admitted when period/N is fractional (6 and 7 per second)",
    async run(w) {
      // Concurrent calls: the in-memory limiter sees one clock value, Redis runs
      // the scripts back to back (usually within one millisecond of TIME).
      for (const count of [6, 7]) {
        const limits: Limit[] = [{ name: "s", count, periodMs: 1000 }];
        for (let round = 0; round < 20; round++) {
          const subject = `${w.subject}-${count}-${round}`;
          const got = await Promise.all(Array.from({ length: count }, () => w.limiter.admit(subject, limits)));
          const allowed = got.filter((a) => a.kind === "decision" && a.allowed).length;
          expect(allowed, `${count} per second, round ${round}: admitted ${allowed} of ${count}: ${show(got)}`).toBe(count);
        }
      }
    },
  },
  {
    name: "two windows: the day window denies while the minute window still has room",
    async run(w) {
      for (let i = 1; i <= 3; i++) {
        const d = await decide(w, minuteAndSmallDay);
        expect(d.allowed, `request ${i}: ${show(d)}`).toBe(true);
        expect(d.limits.map((l) => l.name)).toEqual(["minute", "day"]);
        expect(d.limits[1]!.remaining, show(d)).toBe(3 - i);
      }
      const denied = await decide(w, minuteAndSmallDay);
      expect(denied.allowed, show(denied)).toBe(false);
      expectNear(denied.retryAfterMs, 28_800_000, w.tol, "retryAfterMs (day interval)");
      const day = denied.limits[1]!;
      expect(day, show(denied)).toMatchObject({ name: "day", count: 3, periodMs: 86_400_000, remaining: 0 });
      expectNear(day.resetMs, 86_400_000, w.tol, "day resetMs");
      const minute = denied.limits[0]!;
      expect(minute.remaining, show(denied)).toBeGreaterThan(90);
      // A later minute-window request is still refused by the day window.
      await w.advance(1000);
      const still = await decide(w, minuteAndSmallDay);
      expect(still.allowed, show(still)).toBe(false);
      expectNear(still.retryAfterMs, 28_800_000 - 1000, w.tol, "retryAfterMs after 1 s");
    },
  },
  {
    name: "on a denial, the windows that did not deny report their state unchanged (nothing consumed)",
    async run(w) {
      let last: Decision | undefined;
      for (let i = 1; i <= 3; i++) last = await decide(w, minuteAndSmallDay);
      expect(last!.limits[0]!.remaining, show(last)).toBe(97);
      const denied = await decide(w, minuteAndSmallDay);
      expect(denied.allowed, show(denied)).toBe(false);
      // Three requests consumed of 100 per minute: 97 remain, reset 3 × 600 ms away.
      expect(denied.limits[0]!.remaining, `minute window after a day denial: ${show(denied)}`).toBe(97);
      expectNear(denied.limits[0]!.resetMs, 1800, w.tol, "minute resetMs");
    },
  },
  {
    name: "reports remaining and resetMs per window after every request",
    async run(w) {
      const limits: Limit[] = [
        { name: "ten", count: 5, periodMs: 10_000 },
        { name: "minute", count: 60, periodMs: 60_000 },
      ];
      for (let k = 1; k <= 5; k++) {
        const d = await decide(w, limits);
        expect(d.allowed, show(d)).toBe(true);
        const [s, m] = d.limits;
        expect(s, show(d)).toMatchObject({ name: "ten", count: 5, periodMs: 10_000, remaining: 5 - k });
        expectNear(s!.resetMs, 2000 * k, w.tol, `ten-second resetMs after ${k}`);
        expect(m, show(d)).toMatchObject({ name: "minute", count: 60, periodMs: 60_000, remaining: 60 - k });
        expectNear(m!.resetMs, 1000 * k, w.tol, `minute resetMs after ${k}`);
      }
      const denied = await decide(w, limits);
      expect(denied.allowed).toBe(false);
      expect(denied.limits[0]!.remaining, show(denied)).toBe(0);
      expectNear(denied.limits[0]!.resetMs, 10_000, w.tol, "ten-second resetMs when denied");
    },
  },
  {
    name: "a denial consumes nothing: retryAfter does not grow, and after waiting it a request is allowed",
    async run(w) {
      for (let i = 0; i < 5; i++) expect((await decide(w, fivePerSecond)).allowed).toBe(true);
      const first = await decide(w, fivePerSecond);
      expect(first.allowed, show(first)).toBe(false);
      for (let i = 0; i < 5; i++) {
        const again = await decide(w, fivePerSecond);
        expect(again.allowed, show(again)).toBe(false);
        expect(again.retryAfterMs, `denial ${i} grew the wait: ${show(again)} after ${show(first)}`).toBeLessThanOrEqual(first.retryAfterMs);
      }
      await w.advance(first.retryAfterMs + (w.tol ? 20 : 0));
      const ok = await decide(w, fivePerSecond);
      expect(ok.allowed, `after waiting ${first.retryAfterMs} ms: ${show(ok)}`).toBe(true);
      // Exactly one slot came free (Redis: unless the machine stalled for another interval).
      expect(ok.limits[0]!.remaining, show(ok)).toBeLessThanOrEqual(w.tol ? 1 : 0);
      const next = await decide(w, fivePerSecond);
      expect(next.allowed, show(next)).toBe(false);
      expectNear(next.retryAfterMs, 200, w.tol + 20, "retryAfterMs for the next slot");
    },
  },
  {
    name: "idle for longer than the period: the full burst is available again",
    async run(w) {
      for (let i = 0; i < 5; i++) expect((await decide(w, fivePerSecond)).allowed).toBe(true);
      expect((await decide(w, fivePerSecond)).allowed).toBe(false);
      await w.advance(1500);
      for (let k = 1; k <= 5; k++) {
        const d = await decide(w, fivePerSecond);
        expect(d.allowed, `request ${k} after idling: ${show(d)}`).toBe(true);
        expect(d.limits[0]!.remaining).toBe(5 - k);
      }
      expect((await decide(w, fivePerSecond)).allowed).toBe(false);
    },
  },
  {
    name: "subjects are independent",
    async run(w) {
      for (let i = 0; i < 5; i++) expect((await decide(w, fivePer10s)).allowed).toBe(true);
      expect((await decide(w, fivePer10s)).allowed).toBe(false);
      const other = await w.limiter.admit(`${w.subject}-other`, fivePer10s);
      expect(other, show(other)).toMatchObject({ kind: "decision", allowed: true });
      expect((other as Decision).limits[0]!.remaining).toBe(4);
    },
  },
  {
    name: "generation() of an unknown fence key is 0",
    async run(w) {
      expect(await w.limiter.generation(w.fenceKey)).toBe(0);
    },
  },
  {
    name: "fence: a matching generation is admitted; after bumpGeneration the old one is stale and consumes nothing",
    async run(w) {
      const limits: Limit[] = [{ name: "minute", count: 2, periodMs: 60_000 }];
      const d1 = await decide(w, limits, { key: w.fenceKey, generation: 0 });
      expect(d1, show(d1)).toMatchObject({ allowed: true, fenceChecked: true });
      expect(d1.limits[0]!.remaining).toBe(1);

      await w.limiter.bumpGeneration(w.fenceKey);
      const g1 = await w.limiter.generation(w.fenceKey);
      expect(g1).toBeGreaterThan(0);

      for (const generation of [0, 0, 7]) {
        const stale = await w.limiter.admit(w.subject, limits, { key: w.fenceKey, generation });
        expect(stale, `fence at generation ${generation}: ${show(stale)}`).toEqual({ kind: "stale", generation: g1 });
      }
      // Three stale answers consumed nothing: one request is still left.
      const d2 = await decide(w, limits, { key: w.fenceKey, generation: g1 });
      expect(d2, show(d2)).toMatchObject({ allowed: true, fenceChecked: true });
      expect(d2.limits[0]!.remaining, show(d2)).toBe(0);
      const d3 = await decide(w, limits, { key: w.fenceKey, generation: g1 });
      expect(d3.allowed, show(d3)).toBe(false);

      await w.limiter.bumpGeneration(w.fenceKey);
      const g2 = await w.limiter.generation(w.fenceKey);
      expect(g2, "a bump never lands on the generation before it").not.toBe(g1);
      expect(await w.limiter.admit(w.subject, limits, { key: w.fenceKey, generation: g1 })).toEqual({ kind: "stale", generation: g2 });
    },
  },
  {
    name: "a fence is checked before the limits: a stale fence on an exhausted subject says stale, not denied",
    async run(w) {
      const limits: Limit[] = [{ name: "minute", count: 1, periodMs: 60_000 }];
      expect((await decide(w, limits)).allowed).toBe(true);
      expect((await decide(w, limits)).allowed).toBe(false);
      await w.limiter.bumpGeneration(w.fenceKey);
      expect(await w.limiter.admit(w.subject, limits, { key: w.fenceKey, generation: 0 })).toEqual({ kind: "stale", generation: await w.limiter.generation(w.fenceKey) });
    },
  },
];

interface Backend {
  name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  world(): Promise<World & { cleanup(): Promise<void> }>;
}

const unique = () => randomUUID().replace(/-/g, "").slice(0, 16);

function memoryBackend(): Backend {
  return {
    name: "MemoryRateLimiter (injected clock)",
    setup: async () => {},
    teardown: async () => {},
    world: async () => {
      let now = 1_700_000_000_000;
      const limiter = new MemoryRateLimiter(() => now);
      return {
        limiter,
        subject: `acct_${unique()}`,
        fenceKey: keyFence(`acct_${unique()}`, `apk_${unique()}`),
        advance: async (ms) => {
          now += ms;
        },
        tol: 0,
        cleanup: () => limiter.close(),
      };
    },
  };
}

function redisBackend(): Backend {
  let limiter: RedisRateLimiter;
  return {
    name: "RedisRateLimiter (real Redis)",
    setup: async () => {
      // "deny": a Redis failure must fail the test, never fall back silently to memory.
      limiter = new RedisRateLimiter(redisUrl(), { onError: "deny", log });
      if (limiter.redis.status !== "ready") await once(limiter.redis, "ready");
    },
    teardown: async () => {
      await limiter?.close();
    },
    world: async () => {
      const subject = `acct_t${unique()}`;
      const fenceKey = keyFence(subject, `apk_${unique()}`);
      return {
        limiter,
        subject,
        fenceKey,
        advance: (ms) => sleep(ms),
        tol: 250,
        cleanup: async () => {
          await limiter.redis.del(fenceKey);
        },
      };
    },
  };
}

for (const backend of [memoryBackend(), redisBackend()]) {
  describe(backend.name, () => {
    beforeAll(() => backend.setup());
    afterAll(() => backend.teardown());
    for (const c of cases) {
      it(c.name, async () => {
        const w = await backend.world();
        try {
          await c.run(w);
        } finally {
          await w.cleanup();
        }
      });
    }
  });
}

describe("RedisRateLimiter.bumpGeneration", () => {
  it("reaches Redis from a limiter created a moment ago (folio admin revokes right after connecting)", async () => {
    const key = `folio:test:gen:${randomUUID()}`;
    const fresh = new RedisRateLimiter(redisUrl(), { onError: "deny", log: createLogger("silent") });
    try {
      await fresh.bumpGeneration(key);
      const first = await fresh.redis.get(key);
      await fresh.bumpGeneration(key);
      const second = await fresh.redis.get(key);
      expect(first).toMatch(/^[1-9]\d*$/);
      expect(second).toMatch(/^[1-9]\d*$/);
      expect(second).not.toBe(first);
      await fresh.redis.del(key);
    } finally {
      await fresh.close();
    }
  });
});

describe("RedisRateLimiter when Redis is unreachable", () => {
  const dead = "redis://127.0.0.1:1";
  const limiters: RedisRateLimiter[] = [];
  afterAll(async () => {
    for (const l of limiters) await l.close();
  });
  const make = (onError: "local" | "deny", onBackendError?: (op: string) => void) => {
    const l = new RedisRateLimiter(dead, { onError, log, onBackendError });
    limiters.push(l);
    return l;
  };

  it('onError "local": decisions say fenceChecked false, the limit is still enforced in memory, onBackendError is called', async () => {
    const onBackendError = vi.fn();
    const l = make("local", onBackendError);
    const limits: Limit[] = [{ name: "minute", count: 3, periodMs: 60_000 }];
    const fence = { key: keyFence("acct_dead", "apk_dead"), generation: 4 };
    const got: Admission[] = [];
    for (let i = 0; i < 4; i++) got.push(await l.admit("acct_dead", limits, fence));
    for (const [i, a] of got.entries()) {
      expect(a.kind, `admission ${i}: ${show(a)}`).toBe("decision");
      expect((a as Decision).fenceChecked, `admission ${i}: ${show(a)}`).toBe(false);
    }
    expect(got.map((a) => (a as Decision).allowed), show(got)).toEqual([true, true, true, false]);
    expect(got.map((a) => (a as Decision).limits[0]!.remaining), show(got)).toEqual([2, 1, 0, 0]);
    const denied = got[3] as Decision;
    expect(denied.retryAfterMs, show(denied)).toBeGreaterThan(19_000);
    expect(denied.retryAfterMs, show(denied)).toBeLessThanOrEqual(20_000);
    expect(onBackendError.mock.calls, "onBackendError calls").toEqual([["admit"], ["admit"], ["admit"], ["admit"]]);

    // Another subject has its own in-memory limit.
    const other = await l.admit("acct_dead_other", limits);
    expect(other, show(other)).toMatchObject({ kind: "decision", allowed: true, fenceChecked: false });

    expect(await l.generation(fence.key), "generation() when Redis is down").toBe(-1);
    expect(onBackendError).toHaveBeenLastCalledWith("generation");
    await expect(l.ping()).rejects.toThrow();
    await expect(l.bumpGeneration(fence.key)).rejects.toThrow();
  });

  it('onError "deny": admit throws FolioError service_unavailable (retryable, Retry-After 1)', async () => {
    const onBackendError = vi.fn();
    const l = make("deny", onBackendError);
    const err = await l.admit("acct_dead_deny", [{ name: "minute", count: 3, periodMs: 60_000 }]).then(
      (a) => a,
      (e: unknown) => e,
    );
    expect(err, `admit returned ${show(err)}`).toBeInstanceOf(FolioError);
    const fe = err as FolioError;
    expect(fe.code).toBe("service_unavailable");
    expect(fe.retryable).toBe(true);
    expect(fe.headers).toEqual({ "retry-after": "1" });
    expect(onBackendError.mock.calls).toEqual([["admit"]]);

    const gen = await l.generation("folio:gen:{x}:y").then(
      (g) => g,
      (e: unknown) => e,
    );
    expect(gen, `generation returned ${show(gen)}`).toBeInstanceOf(FolioError);
    expect((gen as FolioError).code).toBe("service_unavailable");
  });
});

describe("gcra()", () => {
  /** gcra() works in microseconds; these cases are written in milliseconds. */
  const gcraMs = (nowMs: number, tatsMs: readonly (number | undefined)[], limits: readonly Limit[]) => {
    const o = gcra(nowMs * 1000, tatsMs.map((t) => (t === undefined ? undefined : t * 1000)), limits);
    return { ...o, newTats: o.newTats.map((t) => t / 1000) };
  };
  const now = 1_000_000;
  const five: Limit = { name: "s", count: 5, periodMs: 1000 };

  it("a fresh subject: allowed, TAT one interval ahead, remaining count-1", () => {
    const o = gcraMs(now, [undefined], [five]);
    expect(o).toEqual({
      allowed: true,
      retryAfterMs: 0,
      newTats: [now + 200],
      limits: [{ name: "s", count: 5, periodMs: 1000, remaining: 4, resetMs: 200 }],
    });
  });

  it("a TAT in the past counts as now", () => {
    expect(gcraMs(now, [now - 5000], [five])).toEqual(gcraMs(now, [undefined], [five]));
  });

  it("the last request of a full burst is allowed with remaining 0", () => {
    const o = gcraMs(now, [now + 800], [five]);
    expect(o.allowed).toBe(true);
    expect(o.newTats).toEqual([now + 1000]);
    expect(o.limits[0]).toMatchObject({ remaining: 0, resetMs: 1000 });
  });

  it("one past the burst: denied, retry after one interval, state reported unchanged", () => {
    const o = gcraMs(now, [now + 1000], [five]);
    expect(o.allowed).toBe(false);
    expect(o.retryAfterMs).toBe(200);
    expect(o.limits[0]).toMatchObject({ remaining: 0, resetMs: 1000 });
  });

  it("exactly at the boundary (over = 0) the request is allowed", () => {
    // TAT 800 ahead: new TAT is exactly one period ahead.
    expect(gcraMs(now, [now + 800], [five]).allowed).toBe(true);
    // 1 ms later than that would be over.
    expect(gcraMs(now, [now + 801], [five])).toMatchObject({ allowed: false, retryAfterMs: 1 });
  });

  it("retryAfterMs is rounded up to whole milliseconds", () => {
    const seven: Limit = { name: "s", count: 7, periodMs: 1000 };
    const o = gcraMs(now, [now + 1000], [seven]);
    expect(o.allowed).toBe(false);
    expect(o.retryAfterMs).toBe(143);
  });

  it("several windows: allowed only when every window allows; retryAfter is the longest wait", () => {
    const a: Limit = { name: "a", count: 5, periodMs: 1000 }; // 200 ms interval
    const b: Limit = { name: "b", count: 2, periodMs: 10_000 }; // 5 000 ms interval
    const both = gcraMs(now, [now + 1000, now + 10_000], [a, b]);
    expect(both.allowed).toBe(false);
    expect(both.retryAfterMs).toBe(5000);
    const onlyA = gcraMs(now, [now + 1000, undefined], [a, b]);
    expect(onlyA).toMatchObject({ allowed: false, retryAfterMs: 200 });
    const none = gcraMs(now, [undefined, undefined], [a, b]);
    expect(none.allowed).toBe(true);
    expect(none.limits.map((l) => [l.name, l.remaining, l.resetMs])).toEqual([
      ["a", 4, 200],
      ["b", 1, 5000],
    ]);
  });

  it("no limits: allowed with no states", () => {
    expect(gcraMs(now, [], [])).toEqual({ allowed: true, retryAfterMs: 0, newTats: [], limits: [] });
  });

  it("count 1: one request per period", () => {
    const one: Limit = { name: "one", count: 1, periodMs: 60_000 };
    const first = gcraMs(now, [undefined], [one]);
    expect(first).toMatchObject({ allowed: true, newTats: [now + 60_000] });
    expect(first.limits[0]).toMatchObject({ remaining: 0, resetMs: 60_000 });
    const second = gcraMs(now + 30_000, first.newTats, [one]);
    expect(second).toMatchObject({ allowed: false, retryAfterMs: 30_000 });
    expect(gcraMs(now + 60_000, first.newTats, [one]).allowed).toBe(true);
  });

  it("simulated: over a long run the admitted rate converges to count/period", () => {
    const lim: Limit = { name: "m", count: 10, periodMs: 1000 };
    let tat: number | undefined;
    let admitted = 0;
    // One attempt every 10 ms for 10 s.
    for (let t = 0; t < 10_000; t += 10) {
      const o = gcraMs(now + t, [tat], [lim]);
      if (o.allowed) {
        tat = o.newTats[0];
        admitted++;
      }
    }
    // Burst of 10 at the start, then 1 per 100 ms.
    expect(admitted).toBeGreaterThanOrEqual(108);
    expect(admitted).toBeLessThanOrEqual(110);
  });
});
