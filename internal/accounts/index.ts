/**
 * Accounts and their plans. Rate limits are stored on the account (seeded
 * from the plan's defaults) so an operator can raise one account's limits.
 */
import type { DB, Account } from "../platform/db/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { newId } from "../platform/ids/index.ts";

export interface PlanLimits {
  requestsPerMinute: number;
  requestsPerDay: number;
}

/** Plans and their default limits (docs/billing.md). */
export const PLANS: Readonly<Record<string, PlanLimits>> = Object.freeze({
  developer: { requestsPerMinute: 60, requestsPerDay: 10_000 },
  pro: { requestsPerMinute: 600, requestsPerDay: 200_000 },
  enterprise: { requestsPerMinute: 3_000, requestsPerDay: 2_000_000 },
});

export const DEFAULT_PLAN = "developer";

export interface NewAccount {
  email: string;
  name: string;
  plan?: string;
  requestsPerMinute?: number;
  requestsPerDay?: number;
}

export async function createAccount(db: DB, input: NewAccount): Promise<Account> {
  const plan = input.plan ?? DEFAULT_PLAN;
  const limits = PLANS[plan];
  if (!limits) throw new FolioError("invalid_request", `unknown plan '${plan}'; plans: ${Object.keys(PLANS).join(", ")}`, { param: "plan" });
  const existing = await db.selectFrom("accounts").select("id").where("email", "=", input.email).executeTakeFirst();
  if (existing) throw new FolioError("invalid_request", `an account with email '${input.email}' already exists (${existing.id})`, { param: "email" });
  return db
    .insertInto("accounts")
    .values({
      id: newId("acc"),
      email: input.email,
      name: input.name,
      plan,
      requests_per_minute: input.requestsPerMinute ?? limits.requestsPerMinute,
      requests_per_day: input.requestsPerDay ?? limits.requestsPerDay,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function getAccount(db: DB, id: string): Promise<Account> {
  const row = await db.selectFrom("accounts").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) throw new FolioError("not_found", `account '${id}' was not found`);
  return row;
}

export async function findAccountByEmail(db: DB, email: string): Promise<Account | undefined> {
  return db.selectFrom("accounts").selectAll().where("email", "=", email).executeTakeFirst();
}

/** Unix seconds, as every timestamp in the API. */
export function unixSeconds(d: Date): number {
  return Math.floor(d.getTime() / 1000);
}

export interface AccountPatch {
  name?: string;
  plan?: string;
  requestsPerMinute?: number;
  requestsPerDay?: number;
  autoRecharge?: { enabled: boolean; thresholdCents: number; amountCents: number };
}

/**
 * Changes an account. A plan change also resets the limits to the plan's
 * defaults unless limits are given. Callers must tell running edges
 * (`KeyStore.accountChanged`), which cache account details with each key.
 */
export async function updateAccount(db: DB, id: string, patch: AccountPatch): Promise<Account> {
  const planLimits = patch.plan !== undefined ? PLANS[patch.plan] : undefined;
  if (patch.plan !== undefined && !planLimits) throw new FolioError("invalid_request", `unknown plan '${patch.plan}'; plans: ${Object.keys(PLANS).join(", ")}`, { param: "plan" });
  for (const [k, v] of [["requestsPerMinute", patch.requestsPerMinute], ["requestsPerDay", patch.requestsPerDay]] as const) {
    if (v !== undefined && (!Number.isInteger(v) || v <= 0)) throw new FolioError("invalid_request", `${k} must be a positive whole number`, { param: k });
  }
  const row = await db
    .updateTable("accounts")
    .set({
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.plan !== undefined ? { plan: patch.plan } : {}),
      ...(patch.requestsPerMinute ?? planLimits?.requestsPerMinute ? { requests_per_minute: patch.requestsPerMinute ?? planLimits!.requestsPerMinute } : {}),
      ...(patch.requestsPerDay ?? planLimits?.requestsPerDay ? { requests_per_day: patch.requestsPerDay ?? planLimits!.requestsPerDay } : {}),
      ...(patch.autoRecharge
        ? {
            auto_recharge_enabled: patch.autoRecharge.enabled,
            auto_recharge_threshold_cents: patch.autoRecharge.thresholdCents,
            auto_recharge_amount_cents: patch.autoRecharge.amountCents,
          }
        : {}),
    })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new FolioError("not_found", `account '${id}' was not found`);
  return row;
}
