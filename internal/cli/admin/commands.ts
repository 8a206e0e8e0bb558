/**
 * `folio migrate` and `folio admin …`: operator commands that work on the
 * database directly (accounts, credits, keys; there is no payment
 * processor, so credits are added here). Light on purpose, like
 * ../run/commands.ts: the database code loads when a command runs.
 */
import { InvalidArgumentError, type Command } from "commander";
import type { AdminContext } from "./admin.ts";

type Admin = typeof import("./admin.ts");

/** Opens the database (withData) and hands the work the admin functions, all loaded now. */
async function withAdmin(work: (ctx: AdminContext, admin: Admin) => Promise<void>): Promise<void> {
  const [{ withData }, admin] = await Promise.all([import("./context.ts"), import("./admin.ts")]);
  await withData(process.env, (ctx) => work(ctx, admin));
}

function int(name: string) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${name} must be a whole number`);
    return Number(v);
  };
}

export function registerAdminCommands(program: Command): void {
  program
    .command("migrate")
    .description("Apply database migrations (DATABASE_URL, or the embedded database in FOLIO_DATA_DIR)")
    .action(async () =>
      withAdmin(async ({ db }) => {
        const r = await (await import("../../platform/db/index.ts")).migrateToLatest(db);
        const applied = (r.results ?? []).filter((m) => m.status === "Success").map((m) => m.migrationName);
        console.log(JSON.stringify({ applied }, null, 2));
      }),
    );

  const admin = program.command("admin").description("Accounts, credits and keys (operators only; works on the database directly)");
  const account = admin.command("account").description("Accounts");
  account
    .command("create")
    .description("Create an account and its first admin key; prints JSON with the key (shown once)")
    .requiredOption("--email <email>", "account email")
    .requiredOption("--name <name>", "account name")
    .option("--plan <plan>", "plan: developer, pro or enterprise", "developer")
    .option("--credits-cents <cents>", "starting credit in cents", int("--credits-cents"))
    .option("--requests-per-minute <n>", "override the plan's per-minute limit", int("--requests-per-minute"))
    .option("--requests-per-day <n>", "override the plan's per-day limit", int("--requests-per-day"))
    .action(async (o: { email: string; name: string; plan: string; creditsCents?: number; requestsPerMinute?: number; requestsPerDay?: number }) =>
      withAdmin(async (ctx, admin) => {
        await (await import("../../platform/db/index.ts")).migrateToLatest(ctx.db);
        console.log(JSON.stringify(await admin.adminCreateAccount(ctx, o), null, 2));
      }),
    );

  account
    .command("update")
    .description("Change an account's name, plan or limits; running edges see it on their next request (with REDIS_URL)")
    .requiredOption("--account <id>", "account id, acc_…")
    .option("--name <name>", "account name")
    .option("--plan <plan>", "plan: developer, pro or enterprise (resets limits to the plan's unless given)")
    .option("--requests-per-minute <n>", "per-minute limit", int("--requests-per-minute"))
    .option("--requests-per-day <n>", "per-day limit", int("--requests-per-day"))
    .action(async (o: { account: string; name?: string; plan?: string; requestsPerMinute?: number; requestsPerDay?: number }) =>
      withAdmin(async (ctx, admin) => {
        const { account: id, ...patch } = o;
        console.log(JSON.stringify(await admin.adminUpdateAccount(ctx, id, patch), null, 2));
      }),
    );

  admin
    .command("credits")
    .description("Credits")
    .command("add")
    .description("Add credits to an account (there is no payment processor)")
    .requiredOption("--account <id>", "account id, acc_…")
    .requiredOption("--cents <cents>", "credits to add, in cents", int("--cents"))
    .option("--description <text>", "ledger description")
    .action(async (o: { account: string; cents: number; description?: string }) =>
      withAdmin(async (ctx, admin) => {
        console.log(JSON.stringify(await admin.adminAddCredits(ctx, { accountId: o.account, cents: o.cents, description: o.description }), null, 2));
      }),
    );

  admin
    .command("key")
    .description("API keys")
    .command("create")
    .description("Create an API key for an account; prints JSON with the key (shown once)")
    .requiredOption("--account <id>", "account id, acc_…")
    .option("--name <name>", "key name", "admin")
    .option("--permissions <list>", "comma-separated permissions (default: all, including admin)")
    .action(async (o: { account: string; name: string; permissions?: string }) =>
      withAdmin(async (ctx, admin) => {
        const permissions = o.permissions?.split(",").map((p) => p.trim()).filter(Boolean);
        console.log(JSON.stringify(await admin.adminCreateKey(ctx, { accountId: o.account, name: o.name, permissions }), null, 2));
      }),
    );
}
