/**
 * Sandbox slots: at most `size` conversions run at once, at most `queueLimit`
 * wait, first come first served. A full queue refuses at once with a
 * retryable `service_unavailable` rather than letting callers pile up until
 * their deadlines; a waiter whose caller gives up leaves the queue.
 */
import { FolioError } from "../platform/errors/index.ts";

interface Waiter {
  grant: () => void;
}

export class Slots {
  running = 0;
  private readonly queue: Waiter[] = [];

  constructor(
    private readonly size: number,
    private readonly queueLimit: number,
  ) {}

  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves with a release function once a slot is free. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.running < this.size) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    if (this.queue.length >= this.queueLimit) {
      return Promise.reject(
        new FolioError("service_unavailable", `all ${this.size} conversion sandboxes are busy and ${this.queue.length} conversions are waiting; retry shortly`, {
          retryable: true,
          headers: { "retry-after": "5" },
        }),
      );
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          this.running++;
          resolve(this.releaser());
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      this.queue.shift()?.grant();
    };
  }
}
