import type { LimitState } from "../ratelimit/index.ts";

/**
 * RateLimit headers (IETF httpapi draft, the widely deployed header-field
 * form): Limit/Remaining/Reset describe the limit closest to exhaustion,
 * Policy lists every window. Documented in docs/rate-limits.md.
 */
export function rateLimitHeaders(limits: readonly LimitState[]): Record<string, string> {
  if (limits.length === 0) return {};
  const tightest = limits.reduce((a, b) => (b.remaining < a.remaining ? b : a));
  return {
    "ratelimit-limit": String(tightest.count),
    "ratelimit-remaining": String(tightest.remaining),
    "ratelimit-reset": String(Math.ceil(tightest.resetMs / 1000)),
    "ratelimit-policy": limits.map((l) => `${l.count};w=${Math.round(l.periodMs / 1000)}`).join(", "),
  };
}
