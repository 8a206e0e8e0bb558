/**
 * A resilient list+watch of one resource in one namespace, keeping a local
 * copy of every object (an informer). It survives what watches do in real
 * clusters:
 *
 * - 410 Gone (the resourceVersion it resumes from fell out of the API
 *   server's history): list again, and report what changed meanwhile,
 *   deletions included;
 * - any other error or a dropped connection: watch again from the last
 *   resourceVersion seen, after an exponential back-off with jitter;
 * - silence: a watch that delivers nothing (no event, no bookmark) for
 *   `idleMs` may be stuck behind a dead proxy or load balancer; a watchdog
 *   ends it and a new one starts. Bookmarks (allowWatchBookmarks) keep a
 *   healthy but quiet watch from looking dead and keep its resourceVersion
 *   fresh, so a restart rarely needs a full list.
 */
import type { Logger } from "../platform/log/index.ts";
import { Backoff, sleep, type BackoffOptions } from "./backoff.ts";
import { isGone, type KubeClient, type KubeObject, type ResourceName } from "./kube.ts";

export type RestartReason = "gone" | "error" | "idle" | "closed";

export interface InformerEvent<T> {
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: T;
}

export interface InformerOptions<T> {
  client: KubeClient;
  resource: ResourceName;
  namespace: string;
  labelSelector?: string;
  /** Restart a watch that has delivered nothing for this long. */
  idleMs: number;
  backoff: BackoffOptions;
  log: Logger;
  onEvent: (event: InformerEvent<T>) => void;
  /** Every time a watch ends and a new one (or a list) follows. */
  onRestart?: (reason: RestartReason) => void;
}

/** The watch ended because it was silent too long. */
class IdleWatch extends Error {
  constructor(ms: number) {
    super(`no event or bookmark for ${ms} ms`);
    this.name = "IdleWatch";
  }
}

export class Informer<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  private readonly backoff: Backoff;
  private readonly log: Logger;
  private current: AbortController | undefined;
  private loop: Promise<void> | undefined;
  private closed = false;
  private hasSynced = false;
  private open = false;
  /** Where the next watch starts; undefined: list first. */
  private resourceVersion: string | undefined;
  /** How many full lists were made (the first one included). */
  lists = 0;

  constructor(private readonly options: InformerOptions<T>) {
    this.backoff = new Backoff(options.backoff);
    this.log = options.log.child({ watch: options.resource });
  }

  start(): void {
    this.loop ??= this.run();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.current?.abort(new Error("informer closed"));
    await this.loop;
  }

  /** True once the first list succeeded: the local copy is complete (if possibly stale). */
  get synced(): boolean {
    return this.hasSynced;
  }

  /** True while a watch stream is open. */
  get watching(): boolean {
    return this.open;
  }

  get(name: string): T | undefined {
    return this.objects.get(name);
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      this.current = new AbortController();
      try {
        this.resourceVersion ??= await this.relist(this.current.signal);
        const events = await this.watch(this.resourceVersion, this.current.signal);
        if (this.closed) break;
        // The server ended the stream (its timeout) or the connection dropped without an error.
        this.options.onRestart?.("closed");
        this.log.debug({ events }, "watch ended; watching again");
        if (events === 0) await sleep(this.backoff.next(), this.current.signal);
      } catch (err) {
        if (this.closed) break;
        if (isGone(err)) {
          this.options.onRestart?.("gone");
          this.log.info({ resourceVersion: this.resourceVersion }, "watch expired (410 Gone); listing again");
          this.resourceVersion = undefined;
        } else if (err instanceof IdleWatch) {
          this.options.onRestart?.("idle");
          this.log.warn({ idleMs: this.options.idleMs }, "watch silent too long; restarting it");
        } else {
          this.options.onRestart?.("error");
          const retryInMs = this.backoff.next();
          this.log.warn({ err, retryInMs }, "watch failed; retrying");
          await sleep(retryInMs, this.current.signal);
        }
      } finally {
        this.open = false;
      }
    }
  }

  /** Lists everything, replaces the local copy, and reports the differences. Returns the list's resourceVersion. */
  private async relist(signal: AbortSignal): Promise<string> {
    const { items, resourceVersion } = await this.options.client.withSignal(signal).list(this.options.resource, this.options.namespace, this.options.labelSelector);
    this.lists++;
    const seen = new Set<string>();
    for (const item of items as T[]) {
      const name = item.metadata?.name;
      if (!name) continue;
      seen.add(name);
      const before = this.objects.get(name);
      this.objects.set(name, item);
      if (!before) this.emit({ type: "ADDED", object: item });
      else if (before.metadata?.resourceVersion !== item.metadata?.resourceVersion) this.emit({ type: "MODIFIED", object: item });
    }
    for (const [name, object] of this.objects) {
      if (seen.has(name)) continue;
      this.objects.delete(name);
      this.emit({ type: "DELETED", object });
    }
    this.hasSynced = true;
    return resourceVersion;
  }

  /** One watch, until the stream ends (resolves with the number of events) or fails (throws). */
  private async watch(resourceVersion: string, closing: AbortSignal): Promise<number> {
    let events = 0;
    let watchdog: NodeJS.Timeout | undefined;
    const idle = new IdleWatch(this.options.idleMs);
    // Its own controller: aborted when this stream is done with, whatever ended it, so no connection lingers.
    const controller = new AbortController();
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => controller.abort(idle), this.options.idleMs);
      watchdog.unref();
    };
    arm();
    try {
      // Servers end a watch after timeoutSeconds; randomized like client-go so replicas do not reconnect in step.
      const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
      const stream = this.options.client.watch<T>(
        this.options.resource,
        this.options.namespace,
        { resourceVersion, labelSelector: this.options.labelSelector, timeoutSeconds },
        AbortSignal.any([closing, controller.signal]),
        () => {
          this.open = true;
        },
      );
      for await (const event of stream) {
        arm();
        events++;
        this.backoff.reset();
        // Kept on the instance: a watch that fails later resumes from here, not from the last list.
        this.resourceVersion = event.object.metadata?.resourceVersion ?? this.resourceVersion;
        if (event.type === "BOOKMARK") continue;
        const name = event.object.metadata?.name;
        if (!name) continue;
        if (event.type === "DELETED") this.objects.delete(name);
        else this.objects.set(name, event.object);
        this.emit({ type: event.type as InformerEvent<T>["type"], object: event.object });
      }
      return events;
    } catch (err) {
      if (controller.signal.reason === idle) throw idle;
      throw err;
    } finally {
      clearTimeout(watchdog);
      controller.abort();
    }
  }

  private emit(event: InformerEvent<T>): void {
    try {
      this.options.onEvent(event);
    } catch (err) {
      // A handler bug must not end the watch; it is logged with the object it choked on.
      this.log.error({ err, type: event.type, name: event.object.metadata?.name }, "watch event handler failed");
    }
  }
}
