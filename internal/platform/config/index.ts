/**
 * Configuration: one TypeBox schema per process, parsed once from an env map
 * that is passed in (tests never touch process.env). A bad value stops the
 * process with a message naming the variable.
 */
import { Type, type Static, type TObject } from "typebox";
import { Value } from "typebox/value";

export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(`configuration: ${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/** Parses `env` against `schema`; returns a frozen object with only the schema's keys. */
export function parseConfig<S extends TObject>(schema: S, env: Env): Readonly<Static<S>> {
  const picked: Record<string, unknown> = {};
  for (const key of Object.keys(schema.properties)) {
    const raw = env[key];
    // An empty variable counts as unset, as shells and Helm often produce them.
    if (raw !== undefined && raw !== "") picked[key] = raw;
  }
  const converted = Value.Convert(schema, Value.Default(schema, picked));
  const first = [...Value.Errors(schema, converted)][0];
  if (first) {
    const variable = first.instancePath.replace(/^\//, "").split("/")[0] || "(environment)";
    const shown = env[variable] === undefined ? "unset" : JSON.stringify(env[variable]);
    throw new ConfigError(variable, `${first.message} (got ${shown})`);
  }
  return Object.freeze(converted as Static<S>);
}

const port = (description: string, def: number) =>
  Type.Integer({ minimum: 0, maximum: 65535, default: def, description });

/** Variables every long-running process reads. */
export const commonSchema = {
  LOG_LEVEL: Type.Union(
    ["fatal", "error", "warn", "info", "debug", "trace", "silent"].map((l) => Type.Literal(l)),
    { default: "info", description: "pino log level." },
  ),
  FOLIO_METRICS_ENABLED: Type.Boolean({ default: true, description: "Serve Prometheus metrics on their own port." }),
  FOLIO_METRICS_PORT: port("Port of the Prometheus /metrics listener (0: any free port).", 9090),
  FOLIO_METRICS_HOST: Type.String({ default: "0.0.0.0", description: "Address the /metrics listener binds." }),
};

/** Durable OCR jobs (docs/jobs.md): what the edge accepts and the workers read by. */
export const jobsSchema = {
  FOLIO_JOB_MAX_PAGES: Type.Integer({ minimum: 1, maximum: 100_000, default: 5000, description: "Most pages of one durable OCR job (POST /v1/ocr/jobs); FOLIO_MAX_PAGES stays the limit of synchronous calls." }),
  FOLIO_JOB_MAX_BYTES: Type.Integer({
    minimum: 1024,
    default: 500 * 1024 * 1024,
    description: "Largest document of a durable OCR job sent as a multipart upload (streamed to disk and the database, never whole in memory); url and base64 jobs keep FOLIO_MAX_DOCUMENT_BYTES.",
  }),
  FOLIO_JOB_RETENTION_DAYS: Type.Number({ minimum: 0.0001, maximum: 3650, default: 7, description: "How long a finished job's results are kept; then the job is deleted (its GETs answer 404)." }),
  FOLIO_JOB_RANGE_PAGES: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 2,
    description:
      "Pages a worker claims at a time (one lease, one transaction storing them with their charge). Small: a job's first pages are readable sooner, and another account's job waits at most one range for a free worker.",
  }),
};

/** Webhooks (docs/webhooks.md): what the edge (endpoints API) and the workers (delivery) share. */
export const webhooksSchema = {
  FOLIO_WEBHOOK_SECRET_KEY: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        "Base64 of 32 random bytes (`openssl rand -base64 32`): seals webhook endpoints' signing secrets in the database, so a dump alone cannot sign. The edge and every worker need the same. Unset: folio dev keeps one in FOLIO_DATA_DIR; elsewhere the webhook endpoints API answers 503 and nothing is delivered.",
    }),
  ),
  FOLIO_WEBHOOK_ROTATION_OVERLAP_SECONDS: Type.Integer({ minimum: 0, maximum: 30 * 86400, default: 86_400, description: "After a secret's rotation, how long deliveries are signed with the old secret too." }),
};

/** The edge (public HTTP API) process. */
export const edgeSchema = Type.Object({
  ...commonSchema,
  FOLIO_HTTP_HOST: Type.String({ default: "0.0.0.0", description: "Address the public HTTP API binds." }),
  FOLIO_HTTP_PORT: port("Port of the public HTTP API.", 8080),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1, description: "Postgres connection string. Unset: embedded PGlite in FOLIO_DATA_DIR (folio dev only)." })),
  FOLIO_DB_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 200, default: 10, description: "Postgres connections per process." }),
  FOLIO_DB_CONNECT_TIMEOUT_SECONDS: Type.Number({ minimum: 0.1, maximum: 600, default: 2, description: "Longest wait for a Postgres connection, opening one or for a free one in a full pool; past it the request gets 503 service_unavailable." }),
  FOLIO_DB_STATEMENT_TIMEOUT_SECONDS: Type.Number({ minimum: 0.1, maximum: 3600, default: 1.5, description: "Postgres statement_timeout of the edge's sessions; the edge waits 0.5 s longer for any answer, then drops the connection (a frozen server). Either way: 503." }),
  FOLIO_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS: Type.Number({ minimum: 0.1, maximum: 3600, default: 5, description: "Postgres idle_in_transaction_session_timeout: a session stuck mid-transaction is ended and its locks freed." }),
  REDIS_URL: Type.Optional(Type.String({ minLength: 1, description: "Redis connection string. Unset: in-process rate limits (one replica only)." })),
  FOLIO_REDIS_CONNECT_TIMEOUT_SECONDS: Type.Number({ minimum: 0.1, maximum: 600, default: 2, description: "Time limit of opening a Redis connection." }),
  FOLIO_REDIS_COMMAND_TIMEOUT_SECONDS: Type.Number({ minimum: 0.05, maximum: 600, default: 1, description: "Time limit of one Redis command; past it the rate limiter falls back (FOLIO_RATELIMIT_ON_REDIS_ERROR)." }),
  FOLIO_READY_TIMEOUT_SECONDS: Type.Number({ minimum: 0.05, maximum: 60, default: 0.8, description: "Time limit of /readyz's checks of Postgres and Redis; past it /readyz answers 503." }),
  FOLIO_DATA_DIR: Type.String({ default: ".folio", description: "Folder for embedded state (PGlite data, dev admin key)." }),
  FOLIO_KEY_CACHE_TTL_SECONDS: Type.Integer({ minimum: 0, maximum: 86400, default: 300, description: "How long a verified API key stays cached; revocation is still immediate (docs/api-keys.md)." }),
  FOLIO_KEY_CACHE_SIZE: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 100_000, description: "Maximum cached API keys per edge process." }),
  FOLIO_LAST_USED_FLUSH_SECONDS: Type.Number({ minimum: 0.1, maximum: 3600, default: 10, description: "Interval at which last_used_at updates are written in one batch." }),
  FOLIO_RATELIMIT_ON_REDIS_ERROR: Type.Union([Type.Literal("local"), Type.Literal("deny")], {
    default: "local",
    description: "When Redis fails mid-flight: `local` keeps serving with this process's in-memory limiter; `deny` answers 503.",
  }),
  FOLIO_HOLD_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 86400, default: 900, description: "A hold not settled within this time is released by the sweeper." }),
  FOLIO_USAGE_RETENTION_MONTHS: Type.Integer({
    minimum: 0,
    maximum: 1200,
    default: 0,
    description: "Whole months of usage logs kept before the current one; older monthly partitions and their rollups are dropped (0: keep everything).",
  }),
  FOLIO_TRUST_PROXY: Type.Boolean({ default: false, description: "Trust X-Forwarded-For from a proxy in front of the edge." }),
  FOLIO_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 70 * 1024 * 1024, description: "Largest accepted request body (base64 documents are 4/3 of their size)." }),
  FOLIO_AUTH_FAILURES_PER_MINUTE: Type.Integer({ minimum: 0, default: 30, description: "Unknown API keys one client address may present per minute before it gets 429 (0: off)." }),
  FOLIO_PUBLIC_REQUESTS_PER_MINUTE: Type.Integer({ minimum: 1, default: 60, description: "Limit per client address on routes that answer without a key (the model catalog)." }),
  FOLIO_EXTRACTION_ADDRESS: Type.Optional(Type.String({ minLength: 1, description: "host:port of the extraction service (gRPC). folio dev sets it to its in-process server." })),
  FOLIO_CONVERSION_ADDRESS: Type.Optional(Type.String({ minLength: 1, description: "host:port of the conversion service (gRPC). Unset: office documents get conversion_not_available." })),
  FOLIO_MAX_DOCUMENT_BYTES: Type.Integer({ minimum: 1024, default: 50 * 1024 * 1024, description: "Largest document accepted by URL or base64." }),
  FOLIO_MAX_PAGES: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: "Most pages processed in one request (PDFs and converted documents)." }),
  FOLIO_PAGE_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: "Pages of one request extracted at the same time." }),
  FOLIO_FETCH_TIMEOUT_SECONDS: Type.Number({ minimum: 1, maximum: 600, default: 30, description: "Time limit for fetching a document URL, redirects included." }),
  FOLIO_FETCH_ALLOW: Type.String({ default: "", description: "Comma-separated exceptions to the private-address refusal of URL fetches: ip:port pairs or CIDRs (e.g. an internal document store)." }),
  FOLIO_PDF_TIMEOUT_SECONDS: Type.Number({ minimum: 1, maximum: 600, default: 120, description: "Time limit for rasterizing one PDF." }),
  FOLIO_PARSER_JAIL: Type.Union([Type.Literal("auto"), Type.Literal("bwrap"), Type.Literal("none")], {
    default: "auto",
    description:
      "Jail of the children that parse client bytes (pdfinfo and pdftoppm at the edge and in the worker, tesseract in the extraction service, the image decoder child in each): bwrap runs each under bubblewrap with no network, a read-only /usr, a private /tmp and prlimit limits, and stops the start where it cannot run (docs/adr/0006-parser-jail-bubblewrap.md); auto is bwrap where it runs and otherwise none, with a warning in the log; none runs them as they are. One per process; checked at start.",
  }),
  FOLIO_EXTRACTION_DEADLINE_SECONDS: Type.Number({ minimum: 1, maximum: 3600, default: 180, description: "gRPC deadline of one page or chat call to the extraction service." }),
  FOLIO_SSE_KEEPALIVE_SECONDS: Type.Number({ minimum: 0.05, maximum: 15, default: 15, description: "Longest silence of a streamed chat answer (stream: true): past it a keep-alive comment is sent, so proxies do not cut the stream." }),
  FOLIO_CONVERSION_DEADLINE_SECONDS: Type.Number({ minimum: 1, maximum: 3600, default: 180, description: "gRPC deadline of one call to the conversion service (its queue and sandbox time limit included)." }),
  ...jobsSchema,
  ...webhooksSchema,
});
export type EdgeConfig = Static<typeof edgeSchema>;

/** The jobs worker (`folio worker`): claims page ranges of durable OCR jobs and reads them through the extraction service. */
export const workerSchema = Type.Object({
  ...commonSchema,
  DATABASE_URL: edgeSchema.properties.DATABASE_URL,
  FOLIO_DATA_DIR: edgeSchema.properties.FOLIO_DATA_DIR,
  FOLIO_DB_POOL_SIZE: edgeSchema.properties.FOLIO_DB_POOL_SIZE,
  FOLIO_DB_CONNECT_TIMEOUT_SECONDS: edgeSchema.properties.FOLIO_DB_CONNECT_TIMEOUT_SECONDS,
  FOLIO_DB_STATEMENT_TIMEOUT_SECONDS: Type.Number({ minimum: 0.1, maximum: 3600, default: 30, description: "Postgres statement_timeout of a worker's sessions (a range's pages are stored in one transaction)." }),
  FOLIO_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS: edgeSchema.properties.FOLIO_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS,
  FOLIO_EXTRACTION_ADDRESS: Type.String({ minLength: 1, description: "host:port of the extraction service (gRPC); required by `folio worker`." }),
  FOLIO_CONVERSION_ADDRESS: edgeSchema.properties.FOLIO_CONVERSION_ADDRESS,
  FOLIO_EXTRACTION_DEADLINE_SECONDS: edgeSchema.properties.FOLIO_EXTRACTION_DEADLINE_SECONDS,
  FOLIO_CONVERSION_DEADLINE_SECONDS: edgeSchema.properties.FOLIO_CONVERSION_DEADLINE_SECONDS,
  FOLIO_PDF_TIMEOUT_SECONDS: edgeSchema.properties.FOLIO_PDF_TIMEOUT_SECONDS,
  FOLIO_PARSER_JAIL: edgeSchema.properties.FOLIO_PARSER_JAIL,
  ...jobsSchema,
  FOLIO_WORKER_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 256, default: 2, description: "Ranges one worker process reads at a time (one page each at a time): about its CPUs for local engines." }),
  FOLIO_WORKER_EXPRESS_SLOTS: Type.Integer({
    minimum: 0,
    maximum: 64,
    default: 1,
    description:
      "Slots besides FOLIO_WORKER_CONCURRENCY that claim only ranges of accounts none of whose ranges is being read: a one-page job starts at once while another account's long job fills every other slot (docs/jobs.md). 0: none.",
  }),
  FOLIO_JOB_LEASE_SECONDS: Type.Number({ minimum: 1, maximum: 3600, default: 30, description: "How long a claimed range stays a worker's without renewal (renewed every second): a dead worker's range is read again after it." }),
  FOLIO_WORKER_POLL_SECONDS: Type.Number({ minimum: 0.05, maximum: 60, default: 0.5, description: "How often an idle worker looks for ranges on its own (its first slot; the others at most every 5 s). A NOTIFY at each job queued wakes it at once; this finds ranges whose lease ran out." }),
  FOLIO_WORKER_DRAIN_SECONDS: Type.Number({
    minimum: 0,
    maximum: 3600,
    default: 20,
    description: "On SIGTERM a worker stops claiming and finishes the ranges it reads for up to this long; what is unread then is aborted and read again elsewhere after its lease.",
  }),
  FOLIO_JOB_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 100, default: 5, description: "Claims of one range before its pages are stored as failed (a page that kills its worker every time)." }),
  ...webhooksSchema,
  FOLIO_FETCH_ALLOW: Type.String({ default: "", description: "Comma-separated exceptions to the private-address refusal of webhook URLs (as the edge's for document URLs): ip:port pairs or CIDRs." }),
  FOLIO_WEBHOOK_TIMEOUT_SECONDS: Type.Number({ minimum: 0.1, maximum: 300, default: 15, description: "A webhook receiver must answer 2xx within this (connection included); otherwise the attempt failed." }),
  FOLIO_WEBHOOK_RETRY_SECONDS: Type.String({
    pattern: "^\\s*\\d+(\\.\\d+)?(\\s*,\\s*\\d+(\\.\\d+)?)*\\s*$",
    default: "5,300,1800,7200,18000,36000,36000",
    description: "Waits (seconds, comma-separated) before each retry of a failed webhook delivery; once spent the delivery is given up (listed as failed).",
  }),
  FOLIO_WEBHOOK_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 256, default: 4, description: "Webhook deliveries one worker process attempts at a time." }),
  FOLIO_WEBHOOK_POLL_SECONDS: Type.Number({ minimum: 0.01, maximum: 60, default: 0.2, description: "How often an idle worker looks for due webhook deliveries on its own (one query). A NOTIFY at each queued delivery wakes it at once (on Postgres and on embedded PGlite alike) and this is the safety net." }),
});
export type WorkerConfig = Static<typeof workerSchema>;

const decimalUsd = (description: string, def: string) => Type.String({ pattern: "^\\d+(\\.\\d+)?$", default: def, description });

/** The extraction process (gRPC): catalog, strategies, engines. */
export const extractionSchema = Type.Object({
  ...commonSchema,
  FOLIO_GRPC_HOST: Type.String({ default: "0.0.0.0", description: "Address the gRPC server binds." }),
  FOLIO_GRPC_PORT: port("Port of the extraction gRPC server.", 50051),
  FOLIO_UPSTREAM_BASE_URL: Type.String({ default: "https://openrouter.ai/api/v1", description: "Base URL of an OpenRouter-compatible API (GET /models, POST /chat/completions)." }),
  FOLIO_UPSTREAM_API_KEY: Type.Optional(Type.String({ minLength: 1, description: "Upstream API key. Unset: no upstream; only local engines, every strategy resolves to one." })),
  FOLIO_UPSTREAM_TIMEOUT_SECONDS: Type.Number({ minimum: 1, maximum: 600, default: 120, description: "Time limit of one upstream call." }),
  FOLIO_CATALOG_REFRESH_SECONDS: Type.Integer({ minimum: 5, maximum: 86_400, default: 300, description: "Interval of the background catalog refresh." }),
  FOLIO_STRATEGY_QUALITY_MODELS: Type.String({ default: "", description: "Comma-separated model ids backing quality/accuracy, first present wins (empty: built-in defaults, docs/models.md)." }),
  FOLIO_STRATEGY_SPEED_MODELS: Type.String({ default: "", description: "Same for speed/balanced." }),
  FOLIO_STRATEGY_COST_MODELS: Type.String({ default: "", description: "Same for cost." }),
  FOLIO_LOCAL_PRICE_PER_PAGE_USD: decimalUsd("Provider price of one page on local/tesseract, dollars (docs/models.md).", "0.001"),
  FOLIO_PPOCR_PRICE_PER_PAGE_USD: decimalUsd("Provider price of one page on local/ppocr, dollars (about 3x tesseract's CPU).", "0.002"),
  FOLIO_AUTO_PRICE_PER_PAGE_USD: decimalUsd("Provider price of one page on local/auto, dollars (one to three readings a page, PP-OCR among them on unsure pages).", "0.003"),
  FOLIO_MAX_COMPLETION_TOKENS: Type.Integer({ minimum: 16, maximum: 200_000, default: 4096, description: "max_tokens sent upstream per page; holds assume it." }),
  FOLIO_PARSER_JAIL: edgeSchema.properties.FOLIO_PARSER_JAIL,
  FOLIO_TESSERACT_RESIDENT: Type.Union([Type.Literal("auto"), Type.Literal("off")], {
    default: "auto",
    description:
      "`auto`: local engines read with the resident tesseract program (native/build/folio-tesseract, built by `make deps`; models loaded once) where it is built, else with the tesseract CLI; `off`: always the CLI (docs/adr/0009-resident-tesseract.md).",
  }),
});
export type ExtractionConfig = Static<typeof extractionSchema>;

const quantity = (description: string, def: string) => Type.String({ pattern: "^[0-9]+(\\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?$", default: def, description });

/** The conversion process (gRPC): sandboxes, one per document. */
export const conversionSchema = Type.Object({
  ...commonSchema,
  FOLIO_GRPC_HOST: extractionSchema.properties.FOLIO_GRPC_HOST,
  FOLIO_GRPC_PORT: port("Port of the conversion gRPC server (the edge calls it).", 50052),
  FOLIO_SANDBOX: Type.Union([Type.Literal("runsc"), Type.Literal("kubernetes"), Type.Literal("unsandboxed")], {
    default: "runsc",
    description: "Sandbox backend: runsc (gVisor on this machine), kubernetes (a ConversionSandbox per document, run by the operator), unsandboxed (development only; warns on every document).",
  }),
  FOLIO_CONVERSION_TIMEOUT_SECONDS: Type.Number({ minimum: 1, maximum: 3600, default: 120, description: "Wall-clock limit of one sandbox, start to exit; past it the sandbox is killed and the answer is timeout." }),
  FOLIO_CONVERSION_MAX_DOCUMENT_BYTES: Type.Integer({ minimum: 1, default: 50 * 1024 * 1024, description: "Largest document the service converts." }),
  FOLIO_CONVERSION_MAX_PAGES: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: "Most pages of one converted document (the edge may ask for fewer)." }),
  FOLIO_CONVERSION_MAX_OUTPUT_BYTES: Type.Integer({ minimum: 1024, default: 256 * 1024 * 1024, description: "Largest total size of the PNG pages of one document." }),
  FOLIO_CONVERSION_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1000, default: 2, description: "Sandboxes running at the same time in this process." }),
  FOLIO_CONVERSION_QUEUE_LIMIT: Type.Integer({ minimum: 0, maximum: 100_000, default: 32, description: "Conversions waiting for a sandbox slot; beyond it requests get service_unavailable (503, retryable)." }),
  FOLIO_SANDBOX_MEMORY_MB: Type.Integer({ minimum: 64, maximum: 65_536, default: 1536, description: "Memory limit of one sandbox (runsc: cgroup; kubernetes: the operator's default applies)." }),
  FOLIO_SANDBOX_CPUS: Type.Number({ minimum: 0.1, maximum: 64, default: 1, description: "CPUs one runsc sandbox may use." }),
  FOLIO_SANDBOX_PIDS: Type.Integer({ minimum: 16, maximum: 100_000, default: 256, description: "Most processes/threads in one runsc sandbox." }),
  FOLIO_RUNSC_PATH: Type.String({ minLength: 1, default: "runsc", description: "The runsc binary (runsc backend)." }),
  FOLIO_RUNSC_PLATFORM: Type.Union([Type.Literal("ptrace"), Type.Literal("systrap"), Type.Literal("kvm")], { default: "ptrace", description: "gVisor platform of the runsc backend." }),
  FOLIO_RUNSC_PRESTART: Type.Boolean({
    default: true,
    description: "Keep FOLIO_CONVERSION_CONCURRENCY runsc sandboxes started ahead of demand (LibreOffice running, about 190 MiB each); each still converts one document. Compute time is billed from the hand-in.",
  }),
  FOLIO_RUNSC_RESTORE: Type.Boolean({
    default: true,
    description:
      "Restore runsc sandboxes from a checkpoint of one in which LibreOffice has started (made at start, kept under FOLIO_SANDBOX_WORK_DIR) instead of starting them; with FOLIO_RUNSC_PRESTART the pool holds 2 × FOLIO_CONVERSION_CONCURRENCY restored sandboxes. Falls back to starting them when the image cannot be made or restored.",
  }),
  FOLIO_SANDBOX_WORK_DIR: Type.Optional(Type.String({ minLength: 1, description: "Host folder for runsc's bundles, state and job folders. Unset: a folder under the system temp dir." })),
  FOLIO_KUBE_NAMESPACE: Type.String({ minLength: 1, default: "default", description: "Namespace of the ConversionSandbox resources (kubernetes backend)." }),
  FOLIO_BROKER_HOST: Type.String({ default: "0.0.0.0", description: "Address of the sandbox broker listener (kubernetes backend)." }),
  FOLIO_BROKER_PORT: port("Port of the sandbox broker: sandbox pods fetch documents and return pages here (kubernetes backend).", 50053),
  FOLIO_BROKER_ADDRESS: Type.Optional(Type.String({ minLength: 1, description: "host:port sandbox pods dial to reach the broker, e.g. the conversion Service's DNS name (required by the kubernetes backend)." })),
  FOLIO_SANDBOX_POOL_ENABLED: Type.Boolean({
    default: true,
    description: "Take warm pods from a ConversionSandboxPool and report demand to it (kubernetes backend); false: every document gets a ConversionSandbox of its own.",
  }),
  FOLIO_SANDBOX_POOL: Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
    default: "folio-sandbox",
    description: "Name of the ConversionSandboxPool (in FOLIO_KUBE_NAMESPACE) this replica reports its demand to and whose warm pods wait at its broker (kubernetes backend).",
  }),
});
export type ConversionConfig = Static<typeof conversionSchema>;

/** The operator (`folio operator`): ConversionSandbox → Job. */
export const operatorSchema = Type.Object({
  ...commonSchema,
  FOLIO_OPERATOR_NAMESPACE: Type.String({ minLength: 1, default: "default", description: "Namespace whose ConversionSandboxes the operator reconciles (and where its Lease lives)." }),
  FOLIO_OPERATOR_IDENTITY: Type.Optional(Type.String({ minLength: 1, description: "Holder identity in the leader Lease. Unset: the host name plus a random suffix." })),
  FOLIO_OPERATOR_HEALTH_PORT: port("Port of /healthz and /readyz.", 8081),
  FOLIO_LEASE_NAME: Type.String({ minLength: 1, default: "folio-operator", description: "Name of the coordination.k8s.io Lease used for leader election." }),
  FOLIO_LEASE_DURATION_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 15, description: "How long a leader's Lease lasts without renewal." }),
  FOLIO_LEASE_RENEW_SECONDS: Type.Number({ minimum: 0.1, maximum: 3600, default: 5, description: "How often the leader renews (and a follower retries) the Lease." }),
  FOLIO_WATCH_IDLE_SECONDS: Type.Number({ minimum: 1, maximum: 86_400, default: 300, description: "A watch silent this long (no event, no bookmark) is restarted by the watchdog." }),
  FOLIO_SANDBOX_IMAGE: Type.String({ minLength: 1, default: "folio-sandbox:latest", description: "Image of sandbox pods (the sandbox Dockerfile)." }),
  FOLIO_SANDBOX_RUNTIME_CLASS: Type.String({ minLength: 1, default: "gvisor", description: "runtimeClassName of sandbox pods (`none`: the cluster default runtime, not recommended)." }),
  FOLIO_SANDBOX_CPU: quantity("CPU request and limit of a sandbox pod.", "1"),
  FOLIO_SANDBOX_MEMORY: quantity("Memory request and limit of a sandbox pod.", "1536Mi"),
  FOLIO_SANDBOX_TMP_SIZE: quantity("Size limit of a sandbox pod's in-memory /tmp.", "768Mi"),
  FOLIO_SANDBOX_SERVICE_ACCOUNT: Type.String({ default: "", description: "serviceAccountName of sandbox pods (its token is never mounted). Empty: the namespace default." }),
  FOLIO_SANDBOX_JOB_TTL_SECONDS: Type.Integer({ minimum: 0, maximum: 86_400, default: 300, description: "ttlSecondsAfterFinished of sandbox Jobs." }),
  FOLIO_SANDBOX_RETENTION_SECONDS: Type.Integer({ minimum: 0, maximum: 86_400, default: 600, description: "Finished ConversionSandboxes older than this are deleted by the operator." }),
  FOLIO_CONVERSION_POD_SELECTOR: Type.String({
    minLength: 1,
    default: "app.kubernetes.io/name=folio,app.kubernetes.io/component=conversion",
    description: "Labels (k=v,k=v) of the conversion service's pods: the only pods sandbox pods may reach (NetworkPolicy).",
  }),
  FOLIO_BROKER_PORT: conversionSchema.properties.FOLIO_BROKER_PORT,
});
export type OperatorConfig = Static<typeof operatorSchema>;

/** `folio migrate` and `folio admin …`: only what reaching the data needs. */
export const cliSchema = Type.Object({
  LOG_LEVEL: commonSchema.LOG_LEVEL,
  DATABASE_URL: edgeSchema.properties.DATABASE_URL,
  REDIS_URL: edgeSchema.properties.REDIS_URL,
  FOLIO_DATA_DIR: edgeSchema.properties.FOLIO_DATA_DIR,
});
export type CliConfig = Static<typeof cliSchema>;
