/**
 * The leased slot poller that the jobs worker and the webhook deliverer
 * share: each of its slots claims one piece of leased work from Postgres (a
 * page range, a due delivery), handles it, and claims again; idle, a slot
 * sleeps until its poll, a notification (LISTEN/NOTIFY) or a slot that found
 * work wakes it. Work whose handling fails is left to its lease, so it is
 * claimed again, here or by another process; stopping, the poller gives back
 * at once the work it could not finish.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { Naps } from "../naps/index.ts";

/** Names a process's poller in the leases it takes: host, pid and a random part. */
export function leaseHolderId(): string {
  return `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
}

/** What the poller knows of a slot; the rest of it (which work it claims) is its owner's, given to `claim`. */
export interface PollerSlot {
  /**
   * Idle, this slot looks for work every `pollMs`; a slot that does not
   * sleeps until woken (by a slot that found work, or a notification), for
   * `idleSlotMs` at most: with one polling slot an idle queue costs one query
   * a poll, whatever the slots.
   */
  polls: boolean;
}

export interface LeasedPollerOptions<Work extends object, Slot extends PollerSlot = PollerSlot> {
  /** The slots, started in this order; each has at most one piece of work at a time. */
  slots: readonly Slot[];
  /**
   * Claims a piece of work for `slot` under a lease, or nothing when none is
   * due. A claim that throws (the database away) is told to `onError` and
   * counts as nothing: the slot sleeps as when idle before it claims again.
   */
  claim: (slot: Slot) => Promise<Work | undefined>;
  /**
   * Does the claimed work; ends early, throwing, once {@link LeasedPoller.signal}
   * aborts. A throw leaves the work to its lease (stopping: to `release`), and
   * the slot claims again at once.
   */
  handle: (work: Work) => Promise<unknown>;
  /** Gives back work whose handling threw while stopping, so it need not wait for its lease; a failure here is ignored (the lease runs out instead). */
  release: (work: Work) => Promise<unknown>;
  /** Told of each claimed work whose handling threw, stopping or not (metrics). */
  onAbandoned?: (work: Work) => void;
  /** Told of a claim or handling that threw while running (stopping, nothing is told): the work, if any, will be claimed again once its lease runs out. */
  onError: (err: unknown, work: Work | undefined) => void;
  /** How long the polling slot sleeps when idle (see {@link PollerSlot.polls}). */
  pollMs: number;
  /** The longest the other slots sleep when idle unless woken, never less than `pollMs`. */
  idleSlotMs: number;
  /** Subscribes to the queue's notifications (DatabaseHandle.listen on its channel): each wakes the idle slots. Without it, slots poll only. */
  listen?: (onNotify: () => void) => () => Promise<void>;
}

export class LeasedPoller<Work extends object, Slot extends PollerSlot = PollerSlot> {
  private running = false;
  private readonly slots: Promise<void>[] = [];
  private readonly stopping = new AbortController();
  /** Idle slots' sleeps, cut short by a wake-up or the stop. */
  private readonly naps = new Naps(this.stopping.signal);
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly o: LeasedPollerOptions<Work, Slot>) {}

  /** Aborted when {@link stop} cuts the work still under way: handlers stop what they do with it. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Subscribes to the notifications and starts the slots (once). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.unlisten = this.o.listen?.(() => this.wake());
    for (const slot of this.o.slots) this.slots.push(this.slot(slot));
  }

  /** Wakes the idle slots to look for work now. */
  wake(): void {
    this.naps.wake();
  }

  /**
   * Stops claiming, lets the work under way finish for up to `drainMs`,
   * aborts {@link signal} for what is still under way (what a handler then
   * throws gives its work back), and waits for the slots to end and the
   * subscription to close.
   */
  async stop(drainMs = 0): Promise<void> {
    this.running = false;
    // Idle slots end now; those handling work finish it (below).
    this.wake();
    const all = Promise.all(this.slots);
    if (drainMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((r) => (timer = setTimeout(r, drainMs)))]);
      clearTimeout(timer);
    }
    this.stopping.abort();
    await Promise.all([all, this.unlisten?.()]);
  }

  /** Claims and handles work until stopped; idle, sleeps as `slot.polls` says. */
  private async slot(slot: Slot): Promise<void> {
    while (this.running) {
      let work: Work | undefined;
      try {
        work = await this.o.claim(slot);
        if (work) {
          // There may be more: the sleeping slots look too.
          this.wake();
          await this.o.handle(work);
        }
      } catch (err) {
        if (work) this.o.onAbandoned?.(work);
        if (!this.running) {
          // Stopping: the work goes back now, not after its lease (if the database answers).
          if (work) await this.o.release(work).catch(() => undefined);
          return;
        }
        this.o.onError(err, work);
      }
      if (!work && this.running) await this.naps.sleep(slot.polls ? this.o.pollMs : Math.max(this.o.pollMs, this.o.idleSlotMs));
    }
  }
}

/**
 * What runs leased work through a {@link LeasedPoller} under one
 * lease-holder id (the jobs worker, the webhook deliverer): it starts, wakes
 * and stops its poller. A subclass gives the poller its slots, its claim and
 * what to do with the work; the handlers it passes may use `this`, as the
 * poller calls them only once started.
 */
export class LeasedWorker<Work extends object, Slot extends PollerSlot = PollerSlot> {
  /** Names this process in the leases it takes. */
  readonly id: string;
  protected readonly poller: LeasedPoller<Work, Slot>;

  /** `id` undefined: {@link leaseHolderId}. */
  constructor(id: string | undefined, options: LeasedPollerOptions<Work, Slot>) {
    this.id = id ?? leaseHolderId();
    this.poller = new LeasedPoller<Work, Slot>(options);
  }

  start(): void {
    this.poller.start();
  }

  /** Wakes the idle slots to look for work now. */
  wake(): void {
    this.poller.wake();
  }

  /** Stops claiming; what is under way after `drainMs` is cut and given back (see {@link LeasedPoller.stop}). */
  stop(drainMs = 0): Promise<void> {
    return this.poller.stop(drainMs);
  }
}
