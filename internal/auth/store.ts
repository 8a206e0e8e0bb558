/**
 * API key lifecycle: create (secret shown once), list, update, revoke.
 * Escalation rule (docs/permissions.md): a key can only create keys with
 * permissions it holds itself, and can only change or revoke keys whose
 * permissions are a subset of its own.
 */
import { sql } from "kysely";
import type { DB, ApiKeyRow } from "../platform/db/index.ts";
import { FolioError, invalid } from "../platform/errors/index.ts";
import { newId } from "../platform/ids/index.ts";
import { displayPrefix, generateKeySecret, hashKey } from "./keys.ts";
import { DEFAULT_PERMISSIONS, missingPermissions, normalizePermissions, type Permission } from "./permissions.ts";

export interface CreatedKey {
  row: ApiKeyRow;
  /** The full secret: returned once, never stored. */
  secret: string;
}

export interface KeyChangeListener {
  keyChanged(accountId: string, keyId: string, keyHash: string): Promise<void>;
}

/** The caller's own permissions, for the escalation checks; null = trusted operator (CLI). */
export type Grantor = ReadonlySet<string> | null;

function checkGrant(grantor: Grantor, wanted: readonly string[], param: string): void {
  if (grantor === null) return;
  const missing = missingPermissions(grantor, wanted);
  if (missing.length) {
    throw new FolioError("permission_denied", `this key cannot grant permissions it does not hold: ${missing.join(", ")}`, { param, extra: { missing_permissions: missing } });
  }
}

export function validatePermissions(list: readonly string[], param = "permissions"): Permission[] {
  const result = normalizePermissions(list);
  if ("unknown" in result) throw invalid(param, `unknown permission(s): ${result.unknown.join(", ")}; see /v1/openapi.json or docs/permissions.md`);
  return result.ok;
}

export class KeyStore {
  constructor(
    private readonly db: DB,
    private readonly listener: KeyChangeListener,
  ) {}

  async create(
    accountId: string,
    input: { name: string; permissions?: readonly string[]; expiresAt?: number | null },
    grantor: Grantor,
  ): Promise<CreatedKey> {
    const permissions = validatePermissions(input.permissions ?? DEFAULT_PERMISSIONS);
    checkGrant(grantor, permissions, "permissions");
    if (input.expiresAt != null && input.expiresAt * 1000 <= Date.now()) throw invalid("expires_at", "expires_at must be in the future");
    const secret = generateKeySecret();
    const row = await this.db
      .insertInto("api_keys")
      .values({
        id: newId("apk"),
        account_id: accountId,
        name: input.name,
        key_hash: hashKey(secret),
        prefix: displayPrefix(secret),
        permissions,
        updated_at: sql`now()` as unknown as Date,
        expires_at: input.expiresAt != null ? new Date(input.expiresAt * 1000) : null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { row, secret };
  }

  async list(accountId: string): Promise<ApiKeyRow[]> {
    return this.db.selectFrom("api_keys").selectAll().where("account_id", "=", accountId).where("revoked_at", "is", null).orderBy("created_at", "desc").orderBy("id").execute();
  }

  /** An active key of this account; another account's key is "not found". */
  async get(accountId: string, id: string): Promise<ApiKeyRow> {
    const row = await this.db.selectFrom("api_keys").selectAll().where("id", "=", id).where("account_id", "=", accountId).where("revoked_at", "is", null).executeTakeFirst();
    if (!row) throw new FolioError("not_found", `API key '${id}' was not found`, { param: "id" });
    return row;
  }

  async update(accountId: string, id: string, patch: { name?: string; permissions?: readonly string[] }, grantor: Grantor): Promise<ApiKeyRow> {
    const current = await this.get(accountId, id);
    checkGrant(grantor, current.permissions, "id");
    const permissions = patch.permissions === undefined ? undefined : validatePermissions(patch.permissions);
    if (permissions) checkGrant(grantor, permissions, "permissions");
    const row = await this.db
      .updateTable("api_keys")
      .set({
        ...(patch.name !== undefined ? { name: patch.name } : {}),
        ...(permissions ? { permissions } : {}),
        updated_at: sql`now()` as unknown as Date,
      })
      .where("id", "=", id)
      .where("account_id", "=", accountId)
      .where("revoked_at", "is", null)
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new FolioError("not_found", `API key '${id}' was not found`, { param: "id" });
    await this.listener.keyChanged(accountId, id, row.key_hash);
    return row;
  }

  /** Tells every replica that the account behind these keys changed (details, plan, limits). */
  async accountChanged(accountId: string): Promise<void> {
    const keys = await this.db.selectFrom("api_keys").select(["id", "key_hash"]).where("account_id", "=", accountId).where("revoked_at", "is", null).execute();
    for (const k of keys) await this.listener.keyChanged(accountId, k.id, k.key_hash);
  }

  /** Irreversible. */
  async revoke(accountId: string, id: string, grantor: Grantor): Promise<void> {
    const current = await this.get(accountId, id);
    checkGrant(grantor, current.permissions, "id");
    const row = await this.db
      .updateTable("api_keys")
      .set({ revoked_at: sql`now()` as unknown as Date, updated_at: sql`now()` as unknown as Date })
      .where("id", "=", id)
      .where("account_id", "=", accountId)
      .where("revoked_at", "is", null)
      .returning(["key_hash"])
      .executeTakeFirst();
    if (!row) throw new FolioError("not_found", `API key '${id}' was not found`, { param: "id" });
    await this.listener.keyChanged(accountId, id, row.key_hash);
  }
}
