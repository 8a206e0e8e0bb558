/**
 * Database row types for Kysely. They mirror the migrations in
 * `migrations/`; `test/db-schema.test.ts` compares them with the live
 * database so a migration and these types cannot drift apart.
 */
import type { ColumnType, Generated, Insertable, Selectable } from "kysely";

/** timestamptz: read as Date, written as Date or an SQL expression. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
/** numeric: read as a decimal string, never a binary float. */
type Numeric = ColumnType<string, string, string>;

export interface AccountsTable {
  id: string;
  email: string;
  name: string;
  plan: string;
  created_at: CreatedAt;
  requests_per_minute: number;
  requests_per_day: number;
  /** Whole cents. int8, parsed to number (cents stay far below 2^53). */
  balance_cents: Generated<number>;
  /** Sum of open holds, whole cents. */
  held_cents: Generated<number>;
  auto_recharge_enabled: Generated<boolean>;
  auto_recharge_threshold_cents: Generated<number>;
  auto_recharge_amount_cents: Generated<number>;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  /** SHA-256 of the secret, hex. */
  key_hash: string;
  prefix: string;
  permissions: ColumnType<string[], string[], string[]>;
  created_at: CreatedAt;
  updated_at: Timestamp;
  last_used_at: Timestamp | null;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface HoldsTable {
  id: string;
  account_id: string;
  api_key_id: string | null;
  amount_cents: number;
  status: "held" | "settled" | "released";
  created_at: CreatedAt;
  expires_at: Timestamp;
  closed_at: Timestamp | null;
}

export interface LedgerEntriesTable {
  id: string;
  account_id: string;
  kind: "credit" | "debit";
  /** Signed whole cents: positive credits, negative debits. */
  amount_cents: number;
  /** Exact provider cost behind a debit, fractional cents. */
  provider_cost_cents: Numeric | null;
  /** Exact platform fee behind a debit, fractional cents (internal/billing). */
  platform_fee_cents: Numeric | null;
  balance_after_cents: number;
  request_id: string | null;
  description: string;
  created_at: CreatedAt;
}

export interface UsageLogsTable {
  id: string;
  account_id: string;
  api_key_id: string | null;
  created_at: CreatedAt;
  endpoint: string;
  model: string;
  status: "success" | "error";
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_used: number;
  pages_processed: number;
  provider_cost_cents: Numeric;
  platform_fee_cents: Numeric;
  /** The amount charged, whole cents in practice, numeric per the spec's "may be fractional". */
  cost_cents: Numeric;
  processing_time_ms: number;
}

export interface IdempotencyKeysTable {
  account_id: string;
  /** The client's Idempotency-Key, 1–255 characters. */
  key: string;
  /** SHA-256 of the endpoint and the request body, hex: the same key with another request is a 422. */
  fingerprint: string;
  status: "running" | "done";
  /** Random per claim: only the request that claimed the key may complete or release it. */
  owner: string;
  /** While running: a retry before this gets 409; after it, the claimant is taken for dead. */
  locked_until: Timestamp;
  request_id: string | null;
  response_status: number | null;
  /** The final answer, as it was sent (JSON text). */
  response_body: string | null;
  created_at: CreatedAt;
  expires_at: Timestamp;
}

/**
 * Sums of usage_logs per account, hour or day (UTC), model, API key and
 * status, kept by a trigger in the transaction of every usage row
 * (migration 0003, docs/usage.md).
 */
export interface UsageRollupsTable {
  account_id: string;
  grain: "hour" | "day";
  /** Start of the hour or day, UTC. */
  period: Timestamp;
  model: string;
  /** '' for rows without an API key. */
  api_key_id: string;
  status: "success" | "error";
  requests: number;
  tokens: number;
  pages: number;
  provider_cost_cents: Numeric;
  platform_fee_cents: Numeric;
  cost_cents: Numeric;
}

/** A durable OCR job (migration 0004, docs/adr/0005-durable-jobs-queue.md). */
export interface OcrJobsTable {
  /** `job_…` */
  id: string;
  account_id: string;
  api_key_id: string | null;
  status: "queued" | "running" | "succeeded" | "failed" | "cancelled";
  model: string;
  /** The request as accepted (mime type, options, pages), without the document. */
  request: ColumnType<unknown, string, string>;
  metadata: ColumnType<Record<string, string>, string, string>;
  page_count: number | null;
  pages_completed: Generated<number>;
  pages_failed: Generated<number>;
  document_bytes: Generated<number>;
  hold_id: string | null;
  /** The model component: exact provider cost of the pages read so far, cents. */
  provider_cost_cents: ColumnType<string, string | undefined, string>;
  /** Whole cents debited for the model component so far. */
  model_charged_cents: Generated<number>;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  /** The conversion component (office documents): exact provider cost, once converted. */
  conversion_cost_cents: ColumnType<string | null, string | null | undefined, string | null>;
  conversion_charged_cents: Generated<number>;
  conversion_ms: number | null;
  error_code: string | null;
  error_message: string | null;
  /** The sequence number of the job's next event. */
  next_sequence: Generated<number>;
  created_at: CreatedAt;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  expires_at: Timestamp | null;
}

/** The stored document of a job, in order, while the job runs. */
export interface OcrJobChunksTable {
  job_id: string;
  seq: number;
  data: Buffer;
}

/** A range of a job's pages: the unit a worker leases. */
export interface OcrJobRangesTable {
  job_id: string;
  first_page: number;
  last_page: number;
  account_id: string;
  status: "pending" | "leased" | "done";
  lease_owner: string | null;
  lease_expires_at: Timestamp | null;
  attempts: Generated<number>;
}

/** A page a job read (or failed to). */
export interface OcrJobPagesTable {
  job_id: string;
  page_number: number;
  status: "ok" | "failed";
  page: ColumnType<unknown, string, string>;
  created_at: CreatedAt;
}

/** A page image of a job's converted office document (migration 0005), kept until the job ends. */
export interface OcrJobImagesTable {
  job_id: string;
  /** 1…n over the pages converted: what the job's ranges count. */
  position: number;
  /** The page in the document. */
  page_number: number;
  png: Buffer;
}

/** An event of a job, numbered 1, 2, 3 … per job without a gap. */
export interface OcrJobEventsTable {
  /** `evt_…` */
  id: string;
  job_id: string;
  sequence: number;
  type: string;
  data: ColumnType<unknown, string, string>;
  created_at: CreatedAt;
}

/** A webhook endpoint of an account (migration 0006; docs/webhooks.md). */
export interface WebhookEndpointsTable {
  /** `we_…` */
  id: string;
  account_id: string;
  url: string;
  /** Event types, or ["*"]. */
  events: ColumnType<string[], string, string>;
  description: string | null;
  disabled: Generated<boolean>;
  disabled_reason: string | null;
  /** Encrypted (webhooks/secrets.ts). */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Timestamp | null;
  failing_since: Timestamp | null;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** One event to deliver to one endpoint: the outbox. */
export interface WebhookDeliveriesTable {
  /** `whd_…` */
  id: string;
  endpoint_id: string;
  account_id: string;
  /** The webhook-id of every attempt. */
  event_id: string;
  type: string;
  job_id: string | null;
  sequence: number;
  body: string;
  status: "pending" | "delivered" | "failed" | "merged";
  attempts: Generated<number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  lease_owner: string | null;
  lease_expires_at: Timestamp | null;
  created_at: CreatedAt;
  finished_at: Timestamp | null;
}

/** One attempt of a delivery. */
export interface WebhookAttemptsTable {
  /** `wha_…` */
  id: string;
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  attempt: number;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
  created_at: CreatedAt;
}

export interface Database {
  accounts: AccountsTable;
  idempotency_keys: IdempotencyKeysTable;
  api_keys: ApiKeysTable;
  holds: HoldsTable;
  ledger_entries: LedgerEntriesTable;
  usage_logs: UsageLogsTable;
  usage_rollups: UsageRollupsTable;
  ocr_jobs: OcrJobsTable;
  ocr_job_chunks: OcrJobChunksTable;
  ocr_job_ranges: OcrJobRangesTable;
  ocr_job_pages: OcrJobPagesTable;
  ocr_job_events: OcrJobEventsTable;
  ocr_job_images: OcrJobImagesTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}

export type Account = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type UsageLogRow = Selectable<UsageLogsTable>;
export type NewUsageLog = Insertable<UsageLogsTable>;

/**
 * Every column of every table, checked by the compiler against the interfaces
 * above (a missing or extra key fails to compile) and by
 * `test/db-schema.test.ts` against the migrated database.
 */
export const COLUMNS: { [T in keyof Database]: { [C in keyof Database[T]]-?: true } } = {
  accounts: {
    id: true, email: true, name: true, plan: true, created_at: true, requests_per_minute: true, requests_per_day: true,
    balance_cents: true, held_cents: true, auto_recharge_enabled: true, auto_recharge_threshold_cents: true, auto_recharge_amount_cents: true,
  },
  api_keys: {
    id: true, account_id: true, name: true, key_hash: true, prefix: true, permissions: true, created_at: true, updated_at: true,
    last_used_at: true, expires_at: true, revoked_at: true,
  },
  holds: { id: true, account_id: true, api_key_id: true, amount_cents: true, status: true, created_at: true, expires_at: true, closed_at: true },
  idempotency_keys: {
    account_id: true, key: true, fingerprint: true, status: true, owner: true, locked_until: true, request_id: true, response_status: true,
    response_body: true, created_at: true, expires_at: true,
  },
  ledger_entries: {
    id: true, account_id: true, kind: true, amount_cents: true, provider_cost_cents: true, platform_fee_cents: true,
    balance_after_cents: true, request_id: true, description: true, created_at: true,
  },
  usage_logs: {
    id: true, account_id: true, api_key_id: true, created_at: true, endpoint: true, model: true, status: true, error_code: true,
    prompt_tokens: true, completion_tokens: true, tokens_used: true, pages_processed: true, provider_cost_cents: true,
    platform_fee_cents: true, cost_cents: true, processing_time_ms: true,
  },
  usage_rollups: {
    account_id: true, grain: true, period: true, model: true, api_key_id: true, status: true, requests: true, tokens: true, pages: true,
    provider_cost_cents: true, platform_fee_cents: true, cost_cents: true,
  },
  ocr_jobs: {
    id: true, account_id: true, api_key_id: true, status: true, model: true, request: true, metadata: true, page_count: true,
    pages_completed: true, pages_failed: true, document_bytes: true, hold_id: true, provider_cost_cents: true, model_charged_cents: true,
    prompt_tokens: true, completion_tokens: true, conversion_cost_cents: true, conversion_charged_cents: true, conversion_ms: true,
    error_code: true, error_message: true, next_sequence: true, created_at: true, started_at: true, finished_at: true, expires_at: true,
  },
  ocr_job_chunks: { job_id: true, seq: true, data: true },
  ocr_job_ranges: { job_id: true, first_page: true, last_page: true, account_id: true, status: true, lease_owner: true, lease_expires_at: true, attempts: true },
  ocr_job_pages: { job_id: true, page_number: true, status: true, page: true, created_at: true },
  ocr_job_events: { id: true, job_id: true, sequence: true, type: true, data: true, created_at: true },
  ocr_job_images: { job_id: true, position: true, page_number: true, png: true },
  webhook_endpoints: {
    id: true, account_id: true, url: true, events: true, description: true, disabled: true, disabled_reason: true, secret: true,
    previous_secret: true, previous_secret_expires_at: true, failing_since: true, created_at: true, updated_at: true,
  },
  webhook_deliveries: {
    id: true, endpoint_id: true, account_id: true, event_id: true, type: true, job_id: true, sequence: true, body: true, status: true,
    attempts: true, next_attempt_at: true, lease_owner: true, lease_expires_at: true, created_at: true, finished_at: true,
  },
  webhook_attempts: { id: true, delivery_id: true, endpoint_id: true, event_id: true, type: true, attempt: true, http_status: true, error: true, duration_ms: true, created_at: true },
};
