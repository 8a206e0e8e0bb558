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

/** The edge (public HTTP API) process. */
export const edgeSchema = Type.Object({
  ...commonSchema,
  FOLIO_HTTP_HOST: Type.String({ default: "0.0.0.0", description: "Address the public HTTP API binds." }),
  FOLIO_HTTP_PORT: port("Port of the public HTTP API.", 8080),
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1, description: "Postgres connection string. Unset: embedded PGlite in FOLIO_DATA_DIR (folio dev only)." })),
  FOLIO_DB_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 200, default: 10, description: "Postgres connections per process." }),
  REDIS_URL: Type.Optional(Type.String({ minLength: 1, description: "Redis connection string. Unset: in-process rate limits (one replica only)." })),
  FOLIO_DATA_DIR: Type.String({ default: ".folio", description: "Folder for embedded state (PGlite data, dev admin key)." }),
  FOLIO_KEY_CACHE_TTL_SECONDS: Type.Integer({ minimum: 0, maximum: 86400, default: 300, description: "How long a verified API key stays cached; revocation is still immediate (docs/api-keys.md)." }),
  FOLIO_KEY_CACHE_SIZE: Type.Integer({ minimum: 0, maximum: 10_000_000, default: 100_000, description: "Maximum cached API keys per edge process." }),
  FOLIO_LAST_USED_FLUSH_SECONDS: Type.Number({ minimum: 0.1, maximum: 3600, default: 10, description: "Interval at which last_used_at updates are written in one batch." }),
  FOLIO_RATELIMIT_ON_REDIS_ERROR: Type.Union([Type.Literal("local"), Type.Literal("deny")], {
    default: "local",
    description: "When Redis fails mid-flight: `local` keeps serving with this process's in-memory limiter; `deny` answers 503.",
  }),
  FOLIO_HOLD_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 86400, default: 900, description: "A hold not settled within this time is released by the sweeper." }),
  FOLIO_TRUST_PROXY: Type.Boolean({ default: false, description: "Trust X-Forwarded-For from a proxy in front of the edge." }),
  FOLIO_BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 70 * 1024 * 1024, description: "Largest accepted request body (base64 documents are 4/3 of their size)." }),
});
export type EdgeConfig = Static<typeof edgeSchema>;

/** `folio migrate` and `folio admin …`: only what reaching the data needs. */
export const cliSchema = Type.Object({
  LOG_LEVEL: commonSchema.LOG_LEVEL,
  DATABASE_URL: edgeSchema.properties.DATABASE_URL,
  REDIS_URL: edgeSchema.properties.REDIS_URL,
  FOLIO_DATA_DIR: edgeSchema.properties.FOLIO_DATA_DIR,
});
export type CliConfig = Static<typeof cliSchema>;
