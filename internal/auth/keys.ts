/**
 * API key format, version 1 (docs/api-keys.md):
 *   folio_sk_ + 40 base62 characters (~238 bits of randomness).
 * Only SHA-256(secret) is stored; a fast hash is enough because the secret is
 * random, not a password. Lookup is by hash; the stored hash is then compared
 * in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { isBase62, randomBase62 } from "../platform/ids/index.ts";

export const KEY_PREFIX = "folio_sk_";
export const KEY_RANDOM_LENGTH = 40;
/** Characters of the random part shown in the display prefix. */
const DISPLAY_CHARS = 6;

export function generateKeySecret(): string {
  return KEY_PREFIX + randomBase62(KEY_RANDOM_LENGTH);
}

/** Short display form, e.g. `folio_sk_Ab12Cd…`; never enough to use the key. */
export function displayPrefix(secret: string): string {
  return secret.slice(0, KEY_PREFIX.length + DISPLAY_CHARS) + "…";
}

export function hashKey(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, "hex");
  const y = Buffer.from(b, "hex");
  return x.length === y.length && timingSafeEqual(x, y);
}

/** True when `secret` has the shape of a v1 key (cheap check before any lookup). */
export function looksLikeKey(secret: string): boolean {
  if (!secret.startsWith(KEY_PREFIX)) return false;
  const rest = secret.slice(KEY_PREFIX.length);
  return rest.length >= 32 && rest.length <= 128 && isBase62(rest);
}

/** Extracts the secret from `Authorization: Bearer <key>`; undefined when absent or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}
