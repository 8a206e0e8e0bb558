import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Authenticator, KeyStore, Permission, Principal } from "../auth/index.ts";
import type { Billing, IdempotencyStore } from "../billing/index.ts";
import type { DB } from "../platform/db/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { EdgeMetrics } from "../platform/metrics/index.ts";
import type { RateLimiter } from "../ratelimit/index.ts";
import type { ExtractionClient } from "../extraction/client.ts";
import type { ConversionClient } from "../conversion/client.ts";
import type { FetchPolicy } from "../documents/index.ts";
import type { DocumentStore, JobEventWaits } from "../jobs/index.ts";
import type { SecretBox } from "../webhooks/index.ts";

export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;

/** Everything the edge's routes use, wired by the entry point. */
export interface EdgeDeps {
  db: DB;
  limiter: RateLimiter;
  authenticator: Authenticator;
  keys: KeyStore;
  billing: Billing;
  /** Idempotency keys of paid requests (docs/idempotency.md). */
  idempotency: IdempotencyStore;
  metrics: EdgeMetrics;
  log: Logger;
  bodyLimitBytes: number;
  trustProxy: boolean;
  /** The extraction service; absent when not configured (its routes answer 503). */
  extraction?: ExtractionClient;
  /** The conversion service; absent when not configured (office documents get conversion_not_available). */
  conversion?: ConversionClient;
  /** Longest silence of a streamed chat answer before a keep-alive comment (FOLIO_SSE_KEEPALIVE_SECONDS). */
  sseKeepAliveMs: number;
  /** Where job event streams wait for their job's next event (woken by the database's notifications). */
  jobEvents: JobEventWaits;
  /** How long the edge waits for one conversion (prices the conversion's hold). */
  conversionDeadlineMs: number;
  /** How documents are accepted: URL fetch policy, size, page and concurrency limits. */
  documents: {
    fetch: FetchPolicy;
    maxBytes: number;
    maxPages: number;
    pageConcurrency: number;
    pdfTimeoutMs: number;
  };
  /** Durable OCR jobs (docs/jobs.md). */
  jobs: {
    maxPages: number;
    /** Largest multipart upload (a PDF; other kinds keep documents.maxBytes). */
    maxBytes: number;
    rangePages: number;
    retentionMs: number;
    /** How long a job's hold lasts without its job ending (then the sweeper releases it; later pages are still charged). */
    holdTtlMs: number;
    /** Where jobs' documents are kept (internal/jobs/blobs.ts); the workers must use the same. */
    documents: DocumentStore;
  };
  /** Webhook endpoints (docs/webhooks.md). */
  webhooks: {
    /** Seals endpoints' secrets; absent without FOLIO_WEBHOOK_SECRET_KEY (the endpoints API answers 503). */
    secrets?: SecretBox;
    rotationOverlapSeconds: number;
  };
  /** Limit per client address on routes that answer without a key. */
  publicRequestsPerMinute: number;
  /**
   * Readiness: each dependency the edge needs, "ok" or the error that says
   * why it is down (for the log only: /readyz names the dependency, never
   * its error, which may hold addresses and driver messages).
   */
  checkReady(): Promise<Record<string, "ok" | Error>>;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Permissions a key must hold for this route; absent = public route. */
    permissions?: readonly Permission[];
    /**
     * The route also answers without a key (limited per client address);
     * a key that is sent must still be valid and hold `permissions`.
     */
    anonymous?: boolean;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** The authenticated caller; only call on routes that declare permissions. */
export function principalOf(req: { principal?: Principal }): Principal {
  if (!req.principal) throw new Error("route without permissions asked for a principal");
  return req.principal;
}
