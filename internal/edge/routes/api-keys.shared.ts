import { Type } from "typebox";
import type { ApiKeyRow } from "../../platform/db/index.ts";
import { unixSeconds } from "../../accounts/index.ts";
import { NO_NUL, Permission, UnixSeconds } from "../schemas.ts";

export const KeyId = Type.Object({ id: Type.String({ pattern: "^apk_[0-9A-Za-z]{1,64}$", description: "An API key id, apk_…" }) });

export const KeyName = Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL, description: "Descriptive name (no NUL characters)." });
export const Permissions = Type.Array(Permission, { maxItems: 32, description: "Permission names (docs/permissions.md)." });

export const KeyListEntry = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: "Truncated display form of the key." }),
  permissions: Type.Array(Type.String()),
  created_at: UnixSeconds,
  last_used_at: Type.Union([UnixSeconds, Type.Null()]),
  expires_at: Type.Union([UnixSeconds, Type.Null()]),
});

export function listEntry(r: ApiKeyRow) {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    permissions: r.permissions,
    created_at: unixSeconds(r.created_at),
    last_used_at: r.last_used_at ? unixSeconds(r.last_used_at) : null,
    expires_at: r.expires_at ? unixSeconds(r.expires_at) : null,
  };
}
