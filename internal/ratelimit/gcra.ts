import type { Limit, LimitState } from "./interface.ts";

/**
 * GCRA over several limits at once (the in-process twin of the Lua script in
 * `gcra-lua.ts`; both must agree and `ratelimit.test.ts` runs one table of
 * cases on each).
 *
 * For `count` requests per `period`, the emission interval is T = period/count
 * and the theoretical arrival time (TAT) advances by T per request. A request
 * is allowed when the new TAT is at most `period` ahead of now, so a full
 * window's worth can arrive at once and then one more every T.
 *
 * Time is in whole microseconds and T is rounded down to a whole microsecond,
 * so a burst of exactly `count` is always admitted (no float drift); the rate
 * is at most 1 µs per request faster than nominal.
 */
export interface GcraOutcome {
  allowed: boolean;
  retryAfterMs: number;
  /** New TATs (µs) to store when allowed. */
  newTats: number[];
  limits: LimitState[];
}

export function intervalMicros(limit: Limit): number {
  return Math.max(1, Math.floor((limit.periodMs * 1000) / limit.count));
}

/**
 * @param nowMicros current time, µs
 * @param tats stored TATs (µs), undefined when none
 */
export function gcra(nowMicros: number, tats: readonly (number | undefined)[], limits: readonly Limit[]): GcraOutcome {
  let allowed = true;
  let retryMicros = 0;
  const current = limits.map((_, i) => Math.max(tats[i] ?? nowMicros, nowMicros));
  const newTats = limits.map((limit, i) => current[i]! + intervalMicros(limit));
  limits.forEach((limit, i) => {
    const over = newTats[i]! - nowMicros - limit.periodMs * 1000;
    if (over > 0) {
      allowed = false;
      retryMicros = Math.max(retryMicros, over);
    }
  });
  // When refused nothing is consumed, so every window reports its state without this request.
  const states: LimitState[] = limits.map((limit, i) => {
    const ahead = (allowed ? newTats[i]! : current[i]!) - nowMicros;
    return {
      name: limit.name,
      count: limit.count,
      periodMs: limit.periodMs,
      remaining: Math.max(0, Math.floor((limit.periodMs * 1000 - ahead) / intervalMicros(limit))),
      resetMs: Math.ceil(ahead / 1000),
    };
  });
  return { allowed, retryAfterMs: Math.ceil(retryMicros / 1000), newTats, limits: states };
}
