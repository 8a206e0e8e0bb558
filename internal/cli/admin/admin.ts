/**
 * `folio admin …`: operator commands that work on the database directly
 * (there is no payment processor; credits are added here).
 */
import { ALL_PERMISSIONS, KeyStore, validatePermissions } from "../../auth/index.ts";
import { createAccount, getAccount, unixSeconds, updateAccount, type AccountPatch } from "../../accounts/index.ts";
import { Billing } from "../../billing/index.ts";
import type { DB } from "../../platform/db/index.ts";
import type { RateLimiter } from "../../ratelimit/index.ts";
import { keyFence } from "../../ratelimit/index.ts";

export interface AdminContext {
  db: DB;
  /** Present when REDIS_URL is set, so key changes reach running edges at once. */
  limiter?: RateLimiter;
}

function keyStore(ctx: AdminContext): KeyStore {
  return new KeyStore(ctx.db, {
    keyChanged: async (accountId, keyId) => {
      await ctx.limiter?.bumpGeneration(keyFence(accountId, keyId));
    },
  });
}

export async function adminCreateAccount(
  ctx: AdminContext,
  o: { email: string; name: string; plan?: string; creditsCents?: number; requestsPerMinute?: number; requestsPerDay?: number },
) {
  const account = await createAccount(ctx.db, o);
  if (o.creditsCents) await new Billing(ctx.db).credit(account.id, o.creditsCents, "initial credit (folio admin)");
  const key = await adminCreateKey(ctx, { accountId: account.id, name: "admin", permissions: [...ALL_PERMISSIONS] });
  const fresh = await getAccount(ctx.db, account.id);
  return {
    account: {
      id: fresh.id,
      email: fresh.email,
      name: fresh.name,
      plan: fresh.plan,
      created_at: unixSeconds(fresh.created_at),
      balance_cents: fresh.balance_cents,
      rate_limits: { requests_per_minute: fresh.requests_per_minute, requests_per_day: fresh.requests_per_day },
    },
    api_key: key,
  };
}

/** Changes an account and makes running edges (sharing REDIS_URL) see it on their next request. */
export async function adminUpdateAccount(ctx: AdminContext, accountId: string, patch: AccountPatch) {
  const a = await updateAccount(ctx.db, accountId, patch);
  await keyStore(ctx).accountChanged(accountId);
  return {
    id: a.id,
    email: a.email,
    name: a.name,
    plan: a.plan,
    rate_limits: { requests_per_minute: a.requests_per_minute, requests_per_day: a.requests_per_day },
    auto_recharge: { enabled: a.auto_recharge_enabled, threshold_cents: a.auto_recharge_threshold_cents, amount_cents: a.auto_recharge_amount_cents },
  };
}

export async function adminCreateKey(ctx: AdminContext, o: { accountId: string; name?: string; permissions?: string[] }) {
  await getAccount(ctx.db, o.accountId);
  const permissions = o.permissions ? validatePermissions(o.permissions) : [...ALL_PERMISSIONS];
  const { row, secret } = await keyStore(ctx).create(o.accountId, { name: o.name ?? "admin", permissions }, null);
  return { id: row.id, name: row.name, key: secret, prefix: row.prefix, permissions: row.permissions, created_at: unixSeconds(row.created_at) };
}

export async function adminAddCredits(ctx: AdminContext, o: { accountId: string; cents: number; description?: string }) {
  const { balanceCents } = await new Billing(ctx.db).credit(o.accountId, o.cents, o.description ?? "credits added (folio admin)");
  return { account_id: o.accountId, added_cents: o.cents, balance_cents: balanceCents };
}
