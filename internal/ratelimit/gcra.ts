import type { Limit, LimitState } from "./interface.ts";

/**
 * GCRA over several limits at once (the in-process twin of the Lua script in `gcra-lua.ts`; both
 * must agree and `ratelimit.test.ts` runs the same cases on each).
 *
 * For `count` requests per `period`, the emission interval is T = period/count
 * and the theoretical arrival time (TAT) advances by T per request. A request
 * is allowed when the new TAT is at most `period` ahead of now, so a full
 * window's worth can arrive at once and then one more every T.
 */
export interface GcraOutcome {
  allowed: boolean;
  retryAfterMs: number;
  newTats: number[];
  limits: LimitState[];
}

export function gcra(now: number, tats: readonly (number | undefined)[], limits: readonly Limit[]): GcraOutcome {
  let allowed = true;
  let retryAfterMs = 0;
  const newTats: number[] = [];
  const states: LimitState[] = [];
  limits.forEach((limit, i) => {
    const interval = limit.periodMs / limit.count;
    const tat = Math.max(tats[i] ?? now, now);
    const newTat = tat + interval;
    const over = newTat - now - limit.periodMs;
    if (over > 0) {
      allowed = false;
      retryAfterMs = Math.max(retryAfterMs, over);
    }
    newTats.push(newTat);
    const ahead = over > 0 ? tat - now : newTat - now;
    states.push({
      name: limit.name,
      count: limit.count,
      periodMs: limit.periodMs,
      remaining: Math.max(0, Math.floor((limit.periodMs - ahead) / interval)),
      resetMs: Math.ceil(ahead),
    });
  });
  return { allowed, retryAfterMs: Math.ceil(retryAfterMs), newTats, limits: states };
}
