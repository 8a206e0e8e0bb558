/**
 * The development account of `folio dev`: created on first start with 1000
 * cents of credit; its admin key is written (mode 0600) to
 * `<data dir>/dev-admin-key` and reused while it stays valid.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { ALL_PERMISSIONS, KeyStore, hashKey } from "../../auth/index.ts";
import { createAccount, findAccountByEmail } from "../../accounts/index.ts";
import { Billing } from "../../billing/index.ts";
import type { DB } from "../../platform/db/index.ts";

export const DEV_EMAIL = "dev@folio.local";
export const DEV_CREDIT_CENTS = 1000;

export interface DevAccount {
  accountId: string;
  keyFile: string;
  created: boolean;
}

export async function ensureDevAccount(db: DB, dataDir: string): Promise<DevAccount> {
  mkdirSync(dataDir, { recursive: true });
  const keyFile = join(dataDir, "dev-admin-key");
  let created = false;
  let account = await findAccountByEmail(db, DEV_EMAIL);
  if (!account) {
    account = await createAccount(db, { email: DEV_EMAIL, name: "Folio development account", plan: "developer" });
    await new Billing(db).credit(account.id, DEV_CREDIT_CENTS, "development account starting credit");
    created = true;
  }
  if (existsSync(keyFile)) {
    const secret = readFileSync(keyFile, "utf8").trim();
    const row = await db
      .selectFrom("api_keys")
      .select("id")
      .where("key_hash", "=", hashKey(secret))
      .where("account_id", "=", account.id)
      .where("revoked_at", "is", null)
      .executeTakeFirst();
    if (row) return { accountId: account.id, keyFile, created };
  }
  const store = new KeyStore(db, { keyChanged: async () => {} });
  const { secret } = await store.create(account.id, { name: "dev admin", permissions: [...ALL_PERMISSIONS] }, null);
  writeFileSync(keyFile, secret + "\n", { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  return { accountId: account.id, keyFile, created: true };
}
