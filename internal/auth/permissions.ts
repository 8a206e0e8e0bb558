/**
 * The permission set (docs/permissions.md). A management endpoint needs
 * `admin` and its own resource permission; `admin` alone does not imply the
 * others, so an admin key can be narrowed (e.g. usage reading only).
 */
export const PERMISSIONS = [
  "ocr:write",
  "chat:write",
  "convert:write",
  "models:read",
  "playground:write",
  "keys:read",
  "keys:write",
  "usage:read",
  "account:read",
  "webhooks:read",
  "webhooks:write",
  "admin",
] as const;

export type Permission = (typeof PERMISSIONS)[number];

const KNOWN = new Set<string>(PERMISSIONS);

export function isPermission(p: string): p is Permission {
  return KNOWN.has(p);
}

/** What a key created without `permissions` gets: everything but `admin` (spec rule 4). */
export const DEFAULT_PERMISSIONS: readonly Permission[] = PERMISSIONS.filter((p) => p !== "admin");

/** Every permission: what `folio admin` gives an account's first key. */
export const ALL_PERMISSIONS: readonly Permission[] = PERMISSIONS;

/** Permissions in `wanted` that `held` lacks. */
export function missingPermissions(held: ReadonlySet<string>, wanted: readonly string[]): string[] {
  return wanted.filter((p) => !held.has(p));
}

/** Sorted, de-duplicated, validated list; throws with the unknown names. */
export function normalizePermissions(list: readonly string[]): { ok: Permission[] } | { unknown: string[] } {
  const unknown = list.filter((p) => !isPermission(p));
  if (unknown.length) return { unknown: [...new Set(unknown)] };
  return { ok: [...new Set(list as Permission[])].sort() };
}
