/**
 * A keyed work queue in the manner of client-go's workqueue (and pepr's
 * `queue.ts`): a key is queued at most once however many events name it; a
 * key added while it is being processed is processed again afterwards, never
 * twice at the same time; failures come back with per-key exponential
 * back-off; successes may ask to be looked at again after a delay.
 *
 * One worker: the operator reconciles one object at a time, so two
 * reconciles of related objects can never interleave their writes.
 */
import { backoffDelay, type BackoffOptions } from "./backoff.ts";

export interface WorkResult {
  /** Process the key again after this long even if no event names it. */
  requeueAfterMs?: number;
}

/** What the worker reports about each key it processed. */
export interface WorkOutcome {
  key: string;
  error?: unknown;
  /** Set when the key failed: how long until it is retried. */
  retryInMs?: number;
  durationMs: number;
}

export class WorkQueue {
  private readonly ready: string[] = [];
  /** Keys waiting to be processed: in `ready`, or to be put there when their processing ends. */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private wake: (() => void) | undefined;
  private running: Promise<void> | undefined;
  /** Bumped by every start and stop; a run whose generation is old ends at its next key. */
  private generation = 0;
  private runGeneration = -1;
  private closed = false;

  constructor(private readonly backoff: BackoffOptions) {}

  /** Queues `key` unless it is already waiting. */
  add(key: string): void {
    if (this.closed || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.ready.push(key);
    this.wake?.();
  }

  /** Queues `key` after `ms`; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.closed) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  /** Queues `key` after its next back-off delay; returns the delay. */
  addWithBackoff(key: string): number {
    const attempt = this.failures.get(key) ?? 0;
    this.failures.set(key, attempt + 1);
    const delay = backoffDelay(attempt, this.backoff);
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the back-off of `key` (it succeeded). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Keys waiting (ready or to be re-run after processing); delayed keys are not counted. */
  get length(): number {
    return this.dirty.size;
  }

  /** Whether `key` is being processed right now. */
  isProcessing(key: string): boolean {
    return this.processing.has(key);
  }

  /**
   * Starts the worker: `handle` is called for one key at a time until
   * {@link stop}. A thrown error requeues the key with back-off; keys stay
   * queued while the worker is stopped and are handled when it starts again.
   * Started again while a stop is still finishing its key, the new run waits
   * for that key first: never two keys at once.
   */
  start(handle: (key: string) => Promise<WorkResult | void>, report: (outcome: WorkOutcome) => void = () => {}): void {
    if (this.closed || (this.running && this.runGeneration === this.generation)) return;
    const generation = ++this.generation;
    this.runGeneration = generation;
    const previous = this.running;
    const run: Promise<void> = (async () => {
      await previous;
      await this.work(generation, handle, report);
    })().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
  }

  /** Stops the worker after the key in hand (if any) is done. */
  async stop(): Promise<void> {
    this.generation++;
    this.wake?.();
    await this.running;
  }

  /** Whether the worker is running (and not stopping). */
  get active(): boolean {
    return this.running !== undefined && this.runGeneration === this.generation;
  }

  /** Stops the worker and drops every key and timer; the queue accepts nothing afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stop();
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.ready.length = 0;
    this.dirty.clear();
  }

  private async work(generation: number, handle: (key: string) => Promise<WorkResult | void>, report: (outcome: WorkOutcome) => void): Promise<void> {
    for (;;) {
      const key = await this.next(generation);
      if (key === undefined) return;
      const started = performance.now();
      let outcome: WorkOutcome;
      try {
        const result = await handle(key);
        this.forget(key);
        if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
        outcome = { key, durationMs: performance.now() - started };
      } catch (error) {
        this.done(key);
        const retryInMs = this.addWithBackoff(key);
        report({ key, error, retryInMs, durationMs: performance.now() - started });
        continue;
      }
      this.done(key);
      report(outcome);
    }
  }

  private async next(generation: number): Promise<string | undefined> {
    for (;;) {
      if (generation !== this.generation || this.closed) return undefined;
      const key = this.ready.shift();
      if (key !== undefined) {
        this.dirty.delete(key);
        this.processing.add(key);
        return key;
      }
      await new Promise<void>((resolve) => {
        this.wake = () => {
          this.wake = undefined;
          resolve();
        };
      });
    }
  }

  private done(key: string): void {
    this.processing.delete(key);
    // Added again while it was processed: its turn comes again now.
    if (this.dirty.has(key)) {
      this.ready.push(key);
      this.wake?.();
    }
  }
}
