import { Type } from "typebox";
import { unixSeconds } from "../../accounts/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { UnixSeconds, keyed } from "../schemas.ts";

export default function register(app: App, _deps: EdgeDeps): void {
  app.get(
    "/v1/account",
    keyed(["admin", "account:read"], {
      summary: "Account details and rate limits",
      tags: ["Account"],
      response: {
        200: Type.Object({
          id: Type.String(),
          email: Type.String(),
          name: Type.String(),
          plan: Type.String(),
          created_at: UnixSeconds,
          rate_limits: Type.Object({ requests_per_minute: Type.Integer(), requests_per_day: Type.Integer() }),
        }),
      },
    }),
    async (req) => {
      // Read with the key and kept fresh by its generation fence: no query per request.
      const a = principalOf(req).account;
      return {
        id: a.id,
        email: a.email,
        name: a.name,
        plan: a.plan,
        created_at: unixSeconds(a.createdAt),
        rate_limits: { requests_per_minute: a.requestsPerMinute, requests_per_day: a.requestsPerDay },
      };
    },
  );
}
