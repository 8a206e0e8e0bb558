/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection package does it:
 *
 * - the leader renews `renewTime` every renew interval; everyone else only
 *   reads the Lease (a follower makes no write of any kind while it is held);
 * - a Lease is expired when its record (holder, renewTime) has not changed for
 *   leaseDurationSeconds as measured on this replica's own monotonic clock
 *   since it first saw that record, so clock skew between nodes does not
 *   matter; an expired or released Lease is taken over;
 * - every write carries the resourceVersion that was read, so when two
 *   replicas try at once the API server accepts one and answers 409 to the
 *   other: two leaders cannot both win;
 * - a leader that has not renewed within the renew deadline (two thirds of
 *   the lease duration, like client-go's 10 s of 15 s) stops leading before
 *   anyone else may take over, even if its renew request is still hanging;
 * - on close the leader releases the Lease (no holder), so a successor
 *   starts at once instead of after an expiry.
 *
 * acquireTime and renewTime are MicroTime: RFC 3339 with six fractional
 * digits, as the API server writes them.
 */
import type { Logger } from "../platform/log/index.ts";
import { sleep } from "./backoff.ts";
import { isConflict, type KubeClient, type Lease } from "./kube.ts";

export interface LeaderElectionOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationSeconds: number;
  renewIntervalMs: number;
  log: Logger;
  onStartedLeading: () => void;
  onStoppedLeading: (reason: string) => void;
}

/** Kubernetes MicroTime: `2025-01-02T03:04:05.678000Z` (JavaScript clocks stop at milliseconds). */
export function microTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export class LeaderElector {
  private readonly log: Logger;
  private readonly durationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly intervalMs: number;
  private readonly stop = new AbortController();
  private loop: Promise<void> | undefined;
  private leading = false;
  /** Monotonic time until which this replica may act as leader. */
  private leaderUntil = 0;
  private stepDownTimer: NodeJS.Timeout | undefined;
  private observedRecord = "";
  private observedAt = 0;
  private lastHolder: string | undefined;

  constructor(private readonly options: LeaderElectionOptions) {
    this.log = options.log.child({ lease: options.name, identity: options.identity });
    this.durationMs = options.leaseDurationSeconds * 1000;
    this.renewDeadlineMs = (this.durationMs * 2) / 3;
    this.intervalMs = Math.min(options.renewIntervalMs, this.renewDeadlineMs / 2);
    if (this.intervalMs < options.renewIntervalMs) {
      this.log.warn(
        { renewIntervalMs: options.renewIntervalMs, usedMs: this.intervalMs, leaseDurationSeconds: options.leaseDurationSeconds },
        "lease renew interval too long for the lease duration: a leader could not renew twice before its deadline; using a shorter one",
      );
    }
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Whether this replica leads right now (and its last renewal is recent enough to be sure of it). */
  isLeader(): boolean {
    return this.leading && performance.now() < this.leaderUntil;
  }

  /** Who holds the Lease, as last read (undefined when nobody does). */
  get holder(): string | undefined {
    return this.lastHolder;
  }

  /** Stops campaigning; releases the Lease if this replica holds it. */
  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
    const wasLeading = this.leading;
    this.stepDown("shutting down");
    if (wasLeading) await this.release();
  }

  private async run(): Promise<void> {
    while (!this.stop.signal.aborted) {
      try {
        await this.tryAcquireOrRenew();
      } catch (err) {
        // Expected: the API server is unreachable or refuses; leadership lapses on its own deadline.
        if (!this.stop.signal.aborted) this.log.warn({ err, leading: this.leading }, "lease: could not read or renew");
      }
      // Followers spread their retries so they do not all hit the API server together.
      const wait = this.leading ? this.intervalMs : this.intervalMs * (1 + Math.random() * 0.2);
      await sleep(wait, this.stop.signal);
    }
  }

  private async tryAcquireOrRenew(): Promise<void> {
    const { namespace, name, identity } = this.options;
    // Closing aborts a renewal in flight; release() then uses the plain client.
    const client = this.options.client.withSignal(this.stop.signal);
    const attemptAt = performance.now();
    const lease = await client.get("leases", namespace, name);
    if (this.stop.signal.aborted) return;
    const now = microTime(Date.now());
    if (!lease) {
      try {
        const created = await client.create("leases", namespace, {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: this.options.leaseDurationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        });
        this.won(created, attemptAt);
      } catch (err) {
        if (!isConflict(err)) throw err;
        // Another replica created it first: it leads.
      }
      return;
    }

    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity || undefined;
    this.lastHolder = holder;
    const record = `${holder ?? ""}|${spec.renewTime ?? ""}|${spec.leaseDurationSeconds ?? ""}`;
    if (record !== this.observedRecord) {
      this.observedRecord = record;
      this.observedAt = attemptAt;
    }
    const durationMs = (spec.leaseDurationSeconds ?? this.options.leaseDurationSeconds) * 1000;
    if (holder && holder !== identity && attemptAt < this.observedAt + durationMs) {
      if (this.leading) this.stepDown(`lease held by ${holder}`);
      return;
    }

    const mine = holder === identity;
    if (!mine) this.log.info({ previousHolder: holder ?? null }, holder ? "lease expired; taking it over" : "lease free; acquiring it");
    try {
      const updated = await client.replace("leases", namespace, name, {
        ...lease,
        metadata: { ...lease.metadata, resourceVersion: lease.metadata?.resourceVersion },
        spec: {
          ...spec,
          holderIdentity: identity,
          leaseDurationSeconds: this.options.leaseDurationSeconds,
          acquireTime: mine && spec.acquireTime ? spec.acquireTime : now,
          renewTime: now,
          leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
        },
      });
      this.won(updated, attemptAt);
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Someone else wrote the Lease between our read and write: they won this round.
      this.log.debug({ err }, "lease: lost a race");
    }
  }

  private won(lease: Lease, attemptAt: number): void {
    if (this.stop.signal.aborted) return;
    this.lastHolder = this.options.identity;
    this.observedRecord = `${this.options.identity}|${lease.spec?.renewTime ?? ""}|${lease.spec?.leaseDurationSeconds ?? ""}`;
    this.observedAt = attemptAt;
    // Measured from when the attempt started: the API server may have stored it any time after that.
    this.leaderUntil = attemptAt + this.renewDeadlineMs;
    clearTimeout(this.stepDownTimer);
    this.stepDownTimer = setTimeout(() => this.stepDown("could not renew the lease before its deadline"), Math.max(0, this.leaderUntil - performance.now()));
    this.stepDownTimer.unref();
    if (!this.leading) {
      this.leading = true;
      this.log.info("became the leader");
      this.options.onStartedLeading();
    }
  }

  private stepDown(reason: string): void {
    clearTimeout(this.stepDownTimer);
    this.leaderUntil = 0;
    if (!this.leading) return;
    this.leading = false;
    if (this.stop.signal.aborted) this.log.info({ reason }, "stopped leading");
    else this.log.warn({ reason }, "stopped leading");
    this.options.onStoppedLeading(reason);
  }

  /** Clears the holder so a successor need not wait for the Lease to expire. */
  private async release(): Promise<void> {
    const { client, namespace, name, identity } = this.options;
    try {
      const lease = await client.get("leases", namespace, name);
      if (!lease || lease.spec?.holderIdentity !== identity) return;
      const now = microTime(Date.now());
      await client.replace("leases", namespace, name, {
        ...lease,
        spec: { leaseDurationSeconds: 1, leaseTransitions: lease.spec.leaseTransitions, acquireTime: now, renewTime: now },
      });
      this.log.info("released the lease");
    } catch (err) {
      // Expected when the API server is unreachable: successors then wait for the Lease to expire.
      this.log.warn({ err }, "could not release the lease");
    }
  }
}
