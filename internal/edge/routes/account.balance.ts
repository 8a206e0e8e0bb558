import { Type } from "typebox";
import { getAccount } from "../../accounts/index.ts";
import { centsToUsd, formatUsd } from "../../billing/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { keyed } from "../schemas.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/account/balance",
    keyed(["admin", "account:read"], {
      summary: "Credit balance",
      description: "balance_cents is the account's balance; credits reserved by requests in flight are in held_cents and not yet spent.",
      tags: ["Account"],
      response: {
        200: Type.Object({
          balance_cents: Type.Integer(),
          balance_usd: Type.Number(),
          formatted: Type.String(),
          currency: Type.Literal("USD"),
          held_cents: Type.Integer({ description: "Reserved by requests in flight." }),
          auto_recharge: Type.Object({ enabled: Type.Boolean(), threshold_cents: Type.Integer(), amount_cents: Type.Integer() }),
        }),
      },
    }),
    async (req) => {
      const a = await getAccount(deps.db, principalOf(req).accountId);
      return {
        balance_cents: a.balance_cents,
        balance_usd: centsToUsd(a.balance_cents),
        formatted: formatUsd(a.balance_cents),
        currency: "USD" as const,
        held_cents: a.held_cents,
        auto_recharge: {
          enabled: a.auto_recharge_enabled,
          threshold_cents: a.auto_recharge_threshold_cents,
          amount_cents: a.auto_recharge_amount_cents,
        },
      };
    },
  );
}
