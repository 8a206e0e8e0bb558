import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * Uniform random base62 string. Rejection sampling keeps every character
 * equally likely (256 is not a multiple of 62).
 */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export function isBase62(s: string): boolean {
  return /^[0-9A-Za-z]*$/.test(s);
}

/** Identifier kinds and their prefixes (STYLE.md: identifiers carry their type). */
export type IdKind = "acc" | "apk" | "req" | "hold" | "led" | "job" | "evt" | "we" | "whd" | "wha";

export function newId(kind: IdKind): string {
  return `${kind}_${randomBase62(20)}`;
}
