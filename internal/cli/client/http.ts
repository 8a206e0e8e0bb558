/**
 * The terminal's client of a running Folio: its address and key, the calls
 * over the public HTTP API only, and API errors in plain words. The key comes
 * from --api-key or FOLIO_API_KEY and is never printed.
 */
import { formatCents } from "../../billing/format.ts";

export const DEFAULT_BASE_URL = "http://127.0.0.1:8080";

/** A failure the user can act on: printed as `folio: <message>`, exit status 1. */
export class ClientError extends Error {
  constructor(
    message: string,
    /** The API's error code, when the API answered with one. */
    readonly code?: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = "ClientError";
  }
}

export interface ConnectionOptions {
  baseUrl?: string;
  apiKey?: string;
}

export interface Connection {
  baseUrl: string;
  headers: Record<string, string>;
}

export function connect(o: ConnectionOptions, env: Record<string, string | undefined>): Connection {
  const raw = (o.baseUrl ?? env.FOLIO_BASE_URL ?? DEFAULT_BASE_URL).trim().replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ClientError(`the base URL '${raw}' is not a URL (set FOLIO_BASE_URL or --base-url, e.g. ${DEFAULT_BASE_URL})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ClientError(`the base URL must be http or https, not ${url.protocol}`);
  const key = (o.apiKey ?? env.FOLIO_API_KEY ?? "").trim();
  if (!key) throw new ClientError("no API key: set FOLIO_API_KEY (or pass --api-key)");
  return { baseUrl: raw, headers: { authorization: `Bearer ${key}`, "user-agent": "folio-cli" } };
}

export interface ApiErrorBody {
  code: string;
  message: string;
  retry_after_seconds?: number;
  required_cents?: number;
  missing_permissions?: string[];
}

export async function send(conn: Connection, path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(conn.baseUrl + path, init);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ClientError(`cannot reach Folio at ${conn.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message} (is it running? set FOLIO_BASE_URL or --base-url)`);
  }
}

export async function apiFailure(res: Response): Promise<ClientError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: ApiErrorBody };
    if (body.error && typeof body.error.code === "string") {
      const retry = Number(res.headers.get("retry-after"));
      return failure(res.status, { ...body.error, ...(body.error.retry_after_seconds === undefined && retry > 0 ? { retry_after_seconds: retry } : {}) });
    }
  } catch {
    /* not the error shape */
  }
  return new ClientError(`the server answered HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ""}`, undefined, res.status);
}

/** An API error in plain words, with what to do next where there is something, and its code. */
export function failure(status: number, e: ApiErrorBody): ClientError {
  const hint: Record<string, string | undefined> = {
    insufficient_credits: `not enough credit${e.required_cents !== undefined ? ` (this needs ${formatCents(e.required_cents)} available)` : ""}; add credits with \`folio admin credits add\``,
    rate_limit_exceeded: `rate limit reached; try again in ${e.retry_after_seconds ?? "a few"} seconds`,
    invalid_api_key: "the API key was not accepted; check FOLIO_API_KEY",
    permission_denied: `the API key lacks ${(e.missing_permissions ?? []).join(", ") || "a permission this needs"}`,
    timeout: "the conversion took too long and was stopped (nothing charged for it)",
  };
  const lead = hint[e.code];
  return new ClientError(`${lead ? `${lead}: ` : ""}${e.message} [${e.code}, HTTP ${status}]`, e.code, status);
}

/** Lines of an NDJSON body as they arrive. */
export async function* ndjson<T>(res: Response): AsyncGenerator<T> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of res.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line) yield parseLine<T>(line);
    }
  }
  buffered += decoder.decode();
  if (buffered.trim()) yield parseLine<T>(buffered.trim());
}

function parseLine<T>(line: string): T {
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new ClientError(`the server sent a line that is not JSON: ${line.slice(0, 100)}`);
  }
}
