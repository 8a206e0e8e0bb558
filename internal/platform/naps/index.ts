/**
 * Sleeps of idle polling loops that a notification can cut short: the jobs
 * worker's and the webhook deliverer's slots sleep between looks at their
 * queue, and a NOTIFY at a commit (or a slot that found work) wakes them all,
 * as does the end of the `stop` signal.
 */
export class Naps {
  private readonly sleepers = new Set<() => void>();

  constructor(private readonly stop: AbortSignal) {}

  /** Waits `ms`, or less when woken or stopped. */
  sleep(ms: number): Promise<void> {
    const { stop, sleepers } = this;
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        stop.removeEventListener("abort", done);
        sleepers.delete(done);
        resolve();
      }
      sleepers.add(done);
      stop.addEventListener("abort", done, { once: true });
    });
  }

  /** Ends every sleep under way now. */
  wake(): void {
    for (const done of [...this.sleepers]) done();
  }
}
