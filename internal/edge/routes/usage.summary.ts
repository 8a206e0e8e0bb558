import { Type } from "typebox";
import { summarize } from "../../usage/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { StringEnum, UnixSeconds, keyed } from "../schemas.ts";
import { Window, windowOf } from "./usage.shared.ts";

const Query = Type.Object({
  ...Window,
  group_by: Type.Optional(StringEnum(["day", "week", "month", "model"])),
});

const Counts = {
  requests: Type.Integer(),
  successful_requests: Type.Integer(),
  failed_requests: Type.Integer(),
  tokens: Type.Integer(),
  pages: Type.Integer(),
  cost_cents: Type.Number(),
};

const Summary = Type.Object({
  total_requests: Type.Integer(),
  successful_requests: Type.Integer(),
  failed_requests: Type.Integer(),
  total_tokens_used: Type.Integer(),
  total_pages_processed: Type.Integer(),
  cost: Type.Object({
    provider_cost_cents: Type.Number(),
    platform_fee_cents: Type.Number(),
    total_cents: Type.Number(),
    total_usd: Type.Number(),
    formatted: Type.String(),
  }),
  by_model: Type.Record(Type.String(), Type.Object({ requests: Type.Integer(), tokens: Type.Integer(), cost_cents: Type.Number() })),
  period: Type.Object({ start: UnixSeconds, end: UnixSeconds }),
  group_by: Type.Optional(Type.String()),
  groups: Type.Optional(
    Type.Array(
      Type.Object({
        key: Type.Optional(Type.String({ description: "Model id (group_by=model)." })),
        start: Type.Optional(Type.Integer({ description: "UTC period start (group_by=day|week|month)." })),
        end: Type.Optional(Type.Integer({ description: "UTC period end, exclusive." })),
        ...Counts,
      }),
    ),
  ),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/usage/summary",
    keyed(["admin", "usage:read"], {
      summary: "Usage totals for a period, optionally grouped",
      description: "Defaults to the last 30 days. group_by adds `groups` (docs/usage.md); weeks start on Monday, UTC.",
      tags: ["Usage"],
      querystring: Query,
      response: { 200: Summary },
    }),
    async (req) => {
      const { start, end } = windowOf(req.query, 30);
      return summarize(deps.db, principalOf(req).accountId, start, end, req.query.group_by);
    },
  );
}
