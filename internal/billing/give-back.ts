/**
 * Giving back, in the background, what a request reserved when the database
 * failed it: a hold or an Idempotency-Key it could not close, or one it took
 * without hearing so (a statement applied, its answer lost). docs/billing.md
 * "When the database is down".
 */

/** How long {@link giveBack} keeps trying, and how often. */
const GIVE_BACK = { everyMs: 2_000, forMs: 10 * 60_000 };

/**
 * Runs `fn` in the background until it succeeds (the database is back) or
 * GIVE_BACK.forMs passed (then the hold sweeper and the key's lease finish
 * the job). Each try is idempotent: a hold or key already closed is left as
 * it is.
 */
export function giveBack(fn: () => Promise<unknown>): void {
  const until = Date.now() + GIVE_BACK.forMs;
  const attempt = () => {
    fn().catch(() => {
      if (Date.now() < until) setTimeout(attempt, GIVE_BACK.everyMs).unref();
    });
  };
  setTimeout(attempt, GIVE_BACK.everyMs).unref();
}
