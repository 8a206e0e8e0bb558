/**
 * Webhook signatures as Standard Webhooks writes them
 * (https://www.standardwebhooks.com), so that a receiver can check Folio's
 * deliveries with that project's libraries (`standardwebhooks` on npm and
 * PyPI) or by hand:
 *
 * - a secret is `whsec_` and the base64 of a random key (32 bytes here);
 * - `webhook-signature` is `v1,<base64 HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>">`,
 *   one per secret, separated by a space: while an endpoint's secret is
 *   rotated, the old and the new one both sign, and a receiver holding
 *   either accepts the delivery.
 *
 * Written against node:crypto rather than the `standardwebhooks` package:
 * it is a few lines, and the tests prove both agree (`signing.test.ts`).
 * Nothing here reads a store, and the clock only as verify's default: the
 * caller passes the secrets and the time, so the sender signs with the time
 * it sends at and tests need no fake clock.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** The prefix Standard Webhooks gives a symmetric secret. */
export const SECRET_PREFIX = "whsec_";

/** Random bytes in a new secret: SHA-256's output length, the key length RFC 2104 advises for HMAC (longer adds no strength). */
const SECRET_BYTES = 32;
/** The spec: a secret's key is "between 24 bytes (192 bits) and 64 bytes (512 bits)". */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/**
 * How far a delivery's timestamp may be from the receiver's clock, either
 * way: the spec's recommendation and the `standardwebhooks` libraries'
 * fixed value (5 minutes). Beyond it a captured delivery cannot be replayed.
 */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The only signature scheme a symmetric secret makes (`v1a` is the spec's asymmetric one, not used). */
const SCHEME = "v1";

/** Canonical padded base64, as the spec and the libraries write it (Node's decoder would also take other text). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A secret that is not `whsec_` and the base64 of a 24–64-byte key. */
export class WebhookSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookSecretError";
  }
}

/** A new endpoint secret: `whsec_` and the base64 of 32 random bytes. Shown to its owner once. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64");
}

/**
 * The HMAC key of a secret. Throws {@link WebhookSecretError} naming what is
 * wrong; the message never contains the secret.
 */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new WebhookSecretError(`a webhook secret starts with '${SECRET_PREFIX}'`);
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (encoded === "" || !BASE64.test(encoded)) throw new WebhookSecretError(`a webhook secret is '${SECRET_PREFIX}' and standard padded base64 (A-Z a-z 0-9 + /)`);
  const key = Buffer.from(encoded, "base64");
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
    throw new WebhookSecretError(`a webhook secret's key is ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes, this one is ${key.length}`);
  }
  return key;
}

/** The base64 HMAC-SHA256 of `<msgId>.<timestamp>.<body>` under `key`. */
function signature(key: Buffer, msgId: string, timestamp: string, body: string | Uint8Array): string {
  return createHmac("sha256", key).update(`${msgId}.${timestamp}.`).update(body).digest("base64");
}

function timestampHeader(timestampSeconds: number): string {
  // A programming error, not an input to react to: the sender passes whole seconds it read from its own clock.
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) throw new RangeError(`a webhook timestamp is whole Unix seconds, got ${timestampSeconds}`);
  return String(timestampSeconds);
}

/**
 * The `webhook-signature` header value: `v1,<base64>` for each secret, in
 * the order given, joined by one space (two during a rotation's overlap).
 * `body` is signed exactly as it will be sent (UTF-8).
 */
export function sign(secrets: readonly string[], msgId: string, timestampSeconds: number, body: string): string {
  if (secrets.length === 0) throw new RangeError("a webhook is signed with at least one secret");
  const timestamp = timestampHeader(timestampSeconds);
  return secrets.map((s) => `${SCHEME},${signature(secretKey(s), msgId, timestamp, body)}`).join(" ");
}

/**
 * The headers of a delivery, named in lower case as the spec writes them. A
 * type, not an interface, so that it passes as a `Record<string, string>`
 * (fetch's and the libraries' header maps).
 */
export type WebhookHeaders = {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
  "content-type": "application/json";
};

/** Every header a delivery of `body` (JSON) carries, signed with each of `secrets`. */
export function webhookHeaders(secrets: readonly string[], msgId: string, timestampSeconds: number, body: string): WebhookHeaders {
  return {
    "webhook-id": msgId,
    "webhook-timestamp": timestampHeader(timestampSeconds),
    "webhook-signature": sign(secrets, msgId, timestampSeconds, body),
    "content-type": "application/json",
  };
}

/** Why a delivery was refused; `reason` says it in words. */
export type VerifyFailure = "missing_header" | "bad_timestamp" | "too_old" | "too_new" | "no_matching_signature";

export type VerifyResult = { ok: true } | { ok: false; code: VerifyFailure; reason: string };

function missing(name: string): VerifyResult {
  return { ok: false, code: "missing_header", reason: `the ${name} header is missing` };
}

/**
 * Checks a delivery against one secret, the way the `standardwebhooks`
 * libraries do: the three headers are there (names in any case), the
 * timestamp is within `toleranceSeconds` of `nowSeconds` either way, and one
 * of the space-separated `v1,` signatures is the one `secret` makes over the
 * body exactly as received (pass the raw bytes, not re-serialised JSON).
 * Signatures of other schemes or other secrets are skipped. Throws
 * {@link WebhookSecretError} only for a malformed `secret`.
 */
export function verify(
  secret: string,
  headers: Readonly<Record<string, string | undefined>>,
  body: string | Uint8Array,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  nowSeconds: number = Date.now() / 1000,
): VerifyResult {
  const key = secretKey(secret);
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  const msgId = lower.get("webhook-id");
  const timestamp = lower.get("webhook-timestamp");
  const signatures = lower.get("webhook-signature");
  if (!msgId) return missing("webhook-id");
  if (!timestamp) return missing("webhook-timestamp");
  if (!signatures) return missing("webhook-signature");
  if (!/^\d{1,15}$/.test(timestamp)) return { ok: false, code: "bad_timestamp", reason: `webhook-timestamp '${timestamp.slice(0, 20)}' is not whole Unix seconds` };
  const age = nowSeconds - Number(timestamp);
  if (age > toleranceSeconds) return { ok: false, code: "too_old", reason: `the timestamp is ${Math.round(age)} s old, more than the ${toleranceSeconds} s allowed` };
  if (-age > toleranceSeconds) return { ok: false, code: "too_new", reason: `the timestamp is ${Math.round(-age)} s in the future, more than the ${toleranceSeconds} s allowed` };

  const expected = Buffer.from(signature(key, msgId, timestamp, body));
  for (const versioned of signatures.split(" ")) {
    const comma = versioned.indexOf(",");
    if (comma < 0 || versioned.slice(0, comma) !== SCHEME) continue;
    const candidate = Buffer.from(versioned.slice(comma + 1));
    // timingSafeEqual wants equal lengths; the length of a SHA-256 signature is no secret.
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) return { ok: true };
  }
  return { ok: false, code: "no_matching_signature", reason: "no v1 signature in webhook-signature matches the secret: a wrong secret, or the body, id or timestamp changed" };
}
