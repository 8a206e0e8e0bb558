import { Type } from "typebox";
import { FolioError } from "../../platform/errors/index.ts";
import { listUsage } from "../../usage/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { NO_NUL, StringEnum, UnixSeconds, keyed } from "../schemas.ts";

const Query = Type.Object({
  start_date: Type.Optional(UnixSeconds),
  end_date: Type.Optional(UnixSeconds),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: "Entries per page, at most 100 (more is a 400, never a silent clamp)." }),
  offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
  status: Type.Optional(StringEnum(["success", "error"])),
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL })),
  api_key_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL })),
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
      const now = Math.floor(Date.now() / 1000);
      const q = req.query;
      const end = q.end_date ?? now;
      const start = q.start_date ?? end - 7 * 86_400;
      if (start > end) throw new FolioError("invalid_request", "start_date must not be after end_date", { param: "start_date" });
      const page = await listUsage(deps.db, principalOf(req).accountId, {
        start,
        end,
        limit: q.limit,
        offset: q.offset,
        status: q.status,
        model: q.model,
        apiKeyId: q.api_key_id,
      });
      return { object: "list" as const, ...page };
    },
  );
}
