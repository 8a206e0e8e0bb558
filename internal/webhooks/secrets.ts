/**
 * Endpoint signing secrets at rest: sealed with AES-256-GCM under a key
 * from the environment (`FOLIO_WEBHOOK_SECRET_KEY`, base64 of 32 bytes), so
 * a dump of the database alone cannot sign a webhook. The endpoint's id is
 * the associated data: a sealed secret copied onto another endpoint's row
 * does not open there.
 *
 * Sealed form: `v1.` + base64(nonce (12 bytes) ‖ tag (16) ‖ ciphertext).
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const VERSION = "v1.";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
export const SECRET_KEY_BYTES = 32;

export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== SECRET_KEY_BYTES) throw new RangeError(`a webhook secret key has ${SECRET_KEY_BYTES} bytes, not ${key.length}`);
    this.key = Buffer.from(key);
  }

  /** Reads a key given as base64 (what FOLIO_WEBHOOK_SECRET_KEY holds). */
  static fromBase64(text: string): SecretBox {
    return new SecretBox(Buffer.from(text.trim(), "base64"));
  }

  seal(plain: string, endpointId: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
    cipher.setAAD(Buffer.from(endpointId, "utf8"));
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return VERSION + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString("base64");
  }

  /** The secret sealed for `endpointId`; throws when it was sealed under another key or for another endpoint, or was changed. */
  open(sealed: string, endpointId: string): string {
    if (!sealed.startsWith(VERSION)) throw new Error("not a sealed webhook secret");
    const raw = Buffer.from(sealed.slice(VERSION.length), "base64");
    if (raw.length < NONCE_BYTES + TAG_BYTES) throw new Error("a sealed webhook secret too short");
    const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, NONCE_BYTES));
    decipher.setAAD(Buffer.from(endpointId, "utf8"));
    decipher.setAuthTag(raw.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}

/** A new random key, base64 (for `folio dev`'s data folder, or an operator's Secret). */
export function newSecretKey(): string {
  return randomBytes(SECRET_KEY_BYTES).toString("base64");
}

/** The file in FOLIO_DATA_DIR where `folio dev` keeps its key. */
export const DEV_KEY_FILE = "webhook-secret.key";

/**
 * The process's SecretBox: from FOLIO_WEBHOOK_SECRET_KEY; without it, on
 * embedded PGlite (`folio dev`, no DATABASE_URL), from a key kept in the
 * data folder (made on first use, mode 0600); otherwise none (webhooks off).
 */
export function loadSecretBox(config: { FOLIO_WEBHOOK_SECRET_KEY?: string | undefined; DATABASE_URL?: string | undefined; FOLIO_DATA_DIR: string }): SecretBox | undefined {
  if (config.FOLIO_WEBHOOK_SECRET_KEY) return SecretBox.fromBase64(config.FOLIO_WEBHOOK_SECRET_KEY);
  if (config.DATABASE_URL) return undefined;
  const path = join(config.FOLIO_DATA_DIR, DEV_KEY_FILE);
  mkdirSync(config.FOLIO_DATA_DIR, { recursive: true });
  // Written whole under another name and linked into place: a second process never reads half a key.
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, newSecretKey() + "\n", { mode: 0o600 });
  try {
    linkSync(draft, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    unlinkSync(draft);
  }
  return SecretBox.fromBase64(readFileSync(path, "utf8"));
}
