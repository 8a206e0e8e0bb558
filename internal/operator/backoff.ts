/**
 * Exponential back-off with full jitter: attempt n waits a random time in
 * [delay/2, delay] where delay = min(max, base * factor^n). Half the delay is
 * kept so that a retry is never immediate; the random half spreads replicas
 * and keys that failed together (an API server restart) apart.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  factor?: number;
}

export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const delay = Math.min(options.maxMs, options.baseMs * (options.factor ?? 2) ** Math.max(0, attempt));
  return Math.round(delay / 2 + (random() * delay) / 2);
}

/** A back-off for one repeated operation (a watch, the lease). */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly options: BackoffOptions,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next try; each call grows the next one. */
  next(): number {
    return backoffDelay(this.attempt++, this.options, this.random);
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
