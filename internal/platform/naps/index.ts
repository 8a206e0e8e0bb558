/**
 * Sleeps of idle polling loops that a notification can cut short: the leased
 * poller's slots (platform/poller: the jobs worker's and the webhook
 * deliverer's) sleep between looks at their queue, and a NOTIFY at a commit
 * (or a slot that found work) wakes them all, as does the `stop` signal; a
 * job's event streams wait so for its next event.
 */
export class Naps {
  private readonly sleepers = new Set<() => void>();

  constructor(private readonly stop?: AbortSignal) {}

  /** Sleeps under way. */
  get sleeping(): number {
    return this.sleepers.size;
  }

  /** Waits `ms`, or less when woken, stopped, or `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const { sleepers } = this;
    const signals = [this.stop, signal].filter((s) => s !== undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        for (const s of signals) s.removeEventListener("abort", done);
        sleepers.delete(done);
        resolve();
      }
      sleepers.add(done);
      for (const s of signals) s.addEventListener("abort", done, { once: true });
    });
  }

  /** Ends every sleep under way now. */
  wake(): void {
    for (const done of [...this.sleepers]) done();
  }
}
