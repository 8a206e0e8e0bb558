import { Type } from "typebox";
import { FolioError } from "../../platform/errors/index.ts";
import { listUsage } from "../../usage/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { NO_NUL, UnixSeconds, keyed } from "../schemas.ts";
import { EntryFilters, Window, windowOf } from "./usage.shared.ts";

const Query = Type.Object({
  ...Window,
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: "Entries per page, at most 100 (more is a 400, never a silent clamp)." }),
  offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
  starting_after: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: NO_NUL,
      description: "A usage entry's id: the page starts with the next older entry (a cursor: as fast on the thousandth page as on the first). Not with offset.",
    }),
  ),
  ...EntryFilters,
});

const Entry = Type.Object({
  id: Type.String(),
  created_at: UnixSeconds,
  model: Type.String(),
  status: Type.Union([Type.Literal("success"), Type.Literal("error")]),
  tokens_used: Type.Integer(),
  cost_cents: Type.Number({ description: "Amount charged, cents." }),
  processing_time_ms: Type.Integer(),
  api_key_id: Type.Union([Type.String(), Type.Null()]),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/usage",
    keyed(["admin", "usage:read"], {
      summary: "Usage log entries, newest first",
      tags: ["Usage"],
      querystring: Query,
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(Entry), has_more: Type.Boolean(), total_count: Type.Integer() }) },
    }),
    async (req) => {
      const q = req.query;
      const { start, end } = windowOf(q, 7);
      if (q.starting_after !== undefined && q.offset > 0) throw new FolioError("invalid_request", "give offset or starting_after, not both", { param: "starting_after" });
      const page = await listUsage(deps.db, principalOf(req).accountId, {
        start,
        end,
        limit: q.limit,
        offset: q.offset,
        startingAfter: q.starting_after,
        status: q.status,
        model: q.model,
        apiKeyId: q.api_key_id,
      });
      return { object: "list" as const, ...page };
    },
  );
}
