/**
 * Delivers the webhook outbox (outbox.ts): `concurrency` slots each claim a
 * due delivery, POST its body signed with the endpoint's secrets (Standard
 * Webhooks, signing.ts) to the endpoint's URL under the rules of a document
 * fetch (public addresses only unless allowed, checked at every connection,
 * no redirect followed), and record the attempt. Runs in `folio worker`;
 * any number of workers share one outbox.
 */
import { checkedClient, describeNetworkError } from "../documents/index.ts";
import type { HostLookup } from "../documents/index.ts";
import type { DB } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { LeasedWorker } from "../platform/poller/index.ts";
import { claimDelivery, recordAttempt, releaseDelivery, type AttemptResult, type ClaimedDelivery } from "./outbox.ts";
import type { SecretBox } from "./secrets.ts";
import { webhookHeaders } from "./signing.ts";

export interface DelivererOptions {
  db: DB;
  secrets: SecretBox;
  log: Pick<Logger, "info" | "warn" | "error">;
  /** Deliveries attempted at once by this process. */
  concurrency: number;
  /** A 2xx must come within this, connection included. */
  timeoutMs: number;
  /** Waits between attempts of one delivery (FOLIO_WEBHOOK_RETRY_SECONDS); spent, the delivery is given up. */
  retrySeconds: readonly number[];
  /** How long an idle slot waits before it looks again. */
  pollMs: number;
  /** Private addresses let through (FOLIO_FETCH_ALLOW). */
  allow: readonly string[];
  lookup?: HostLookup;
  /** Told of each attempt's result (metrics). */
  onAttempt?: (result: AttemptResult, type: string, seconds: number) => void;
  /**
   * Subscribes to the outbox's notifications (DatabaseHandle.listen on
   * OUTBOX_CHANNEL): each wakes the idle slots at once, so a delivery does
   * not wait for the next poll. Without it, slots poll only.
   */
  listen?: (onNotify: () => void) => () => Promise<void>;
  /** Told of progress deliveries merged into a newer one (metrics). */
  onMerged?: (n: number) => void;
  id?: string;
}

/** A claim's lease outlasts the attempt's timeout by this (recording it); a worker killed mid-attempt leaves its delivery to be attempted again this long after the timeout. */
const LEASE_MARGIN_MS = 10_000;

/**
 * How long a slot other than the first sleeps when idle unless woken. Idle,
 * only the first slot looks for due deliveries every `pollMs`; the others
 * sleep until woken (by a slot that found work, or a notification), or for
 * this: an idle outbox costs one query a poll, whatever the concurrency.
 */
const IDLE_SLOT_MS = 30_000;

/** Bytes of a receiver's answer read (and dropped) before the connection is closed. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** The deliverer's slots (see {@link IDLE_SLOT_MS}) are a leased poller's; a stop cuts the attempts under way and gives their deliveries back at once. */
export class WebhookDeliverer extends LeasedWorker<ClaimedDelivery> {
  constructor(private readonly o: DelivererOptions) {
    super(o.id, {
      slots: Array.from({ length: o.concurrency }, (_, i) => ({ polls: i === 0 })),
      claim: () => claimDelivery(o.db, this.id, o.timeoutMs + LEASE_MARGIN_MS, o.onMerged),
      handle: (claimed) => this.deliver(claimed),
      release: (claimed) => releaseDelivery(o.db, this.id, claimed),
      onError: (err, claimed) => o.log.warn({ err, delivery: claimed?.id }, "a webhook delivery was not recorded; its lease will run out and it will be attempted again"),
      pollMs: o.pollMs,
      idleSlotMs: IDLE_SLOT_MS,
      listen: o.listen,
    });
  }

  /** One attempt of `d`, recorded. */
  async deliver(d: ClaimedDelivery): Promise<AttemptResult> {
    const endpoint = await this.o.db
      .selectFrom("webhook_endpoints")
      .select(["url", "secret", "previous_secret", "previous_secret_expires_at"])
      .where("id", "=", d.endpoint_id)
      .executeTakeFirst();
    if (!endpoint) throw new FolioError("internal_error", `webhook endpoint ${d.endpoint_id} is gone`);
    const secrets = [this.o.secrets.open(endpoint.secret, d.endpoint_id)];
    if (endpoint.previous_secret && endpoint.previous_secret_expires_at && endpoint.previous_secret_expires_at.getTime() > Date.now()) {
      secrets.push(this.o.secrets.open(endpoint.previous_secret, d.endpoint_id));
    }
    const started = performance.now();
    const headers: Record<string, string> = { ...webhookHeaders(secrets, d.event_id, Math.floor(Date.now() / 1000), d.body) };
    const outcome = await this.post(endpoint.url, headers, d.body);
    this.poller.signal.throwIfAborted();
    const durationMs = performance.now() - started;
    const result = await recordAttempt(this.o.db, this.id, d, { ...outcome, durationMs }, this.o.retrySeconds);
    this.o.onAttempt?.(result, d.type, durationMs / 1000);
    return result;
  }

  /** POSTs `body`; the receiver's status, or what went wrong on the way, in words a client may read. */
  private async post(url: string, headers: Record<string, string>, body: string): Promise<{ httpStatus?: number; error?: string }> {
    const signal = AbortSignal.any([AbortSignal.timeout(this.o.timeoutMs), this.poller.signal]);
    let client;
    try {
      ({ client } = await checkedClient(url, { allow: this.o.allow, timeoutMs: this.o.timeoutMs, ...(this.o.lookup ? { lookup: this.o.lookup } : {}) }, "url", signal));
    } catch (err) {
      if (err instanceof FolioError) return { error: err.message };
      return { error: signal.aborted ? `no answer within ${this.o.timeoutMs / 1000} s` : describeNetworkError(err) };
    }
    try {
      const u = new URL(url);
      const res = await client.request({ method: "POST", path: `${u.pathname}${u.search}`, headers: { ...headers, "user-agent": "Folio-Webhooks/1" }, body, signal });
      let read = 0;
      for await (const chunk of res.body) {
        read += (chunk as Buffer).length;
        if (read > MAX_ANSWER_BYTES) break;
      }
      const redirect = res.statusCode >= 300 && res.statusCode <= 399;
      return { httpStatus: res.statusCode, ...(redirect ? { error: "redirects are not followed" } : {}) };
    } catch (err) {
      return { error: signal.aborted ? `no answer within ${this.o.timeoutMs / 1000} s` : describeNetworkError(err) };
    } finally {
      await client.destroy().catch(() => undefined);
    }
  }
}
