import { Readable } from "node:stream";
import { Type } from "typebox";
import { EXPORT_FORMATS, exportUsage } from "../../usage/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { StringEnum, keyed } from "../schemas.ts";
import { NDJSON } from "../ndjson.ts";
import { EntryFilters, Window, windowOf } from "./usage.shared.ts";

const Query = Type.Object({
  ...Window,
  format: StringEnum(EXPORT_FORMATS, { default: "csv" }),
  ...EntryFilters,
});

const CONTENT_TYPES = { csv: "text/csv; charset=utf-8", ndjson: `${NDJSON}; charset=utf-8` } as const;

const Body = Type.String({ description: "The entries, oldest first (docs/usage.md \"GET /v1/usage/export\")." });

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/usage/export",
    keyed(["admin", "usage:read"], {
      summary: "Every usage entry of a period, streamed as CSV or NDJSON",
      description:
        "Defaults to the last 7 days, like GET /v1/usage, with its filters. Oldest first; amounts exact, as stored. " +
        "Streamed in constant memory however long the period; a failure after the first bytes cuts the stream (the body does not end cleanly).",
      tags: ["Usage"],
      querystring: Query,
      produces: [CONTENT_TYPES.csv, CONTENT_TYPES.ndjson],
      response: { 200: { description: "CSV with a header row, or one JSON object per line", content: { "text/csv": { schema: Body }, [NDJSON]: { schema: Body } } } },
    }),
    async (req, reply) => {
      const q = req.query;
      const { start, end } = windowOf(q, 7);
      const chunks = exportUsage(deps.db, principalOf(req).accountId, { start, end, status: q.status, model: q.model, apiKeyId: q.api_key_id }, q.format);
      // The first page before the status: a database failure there is still a plain error answer.
      const first = await chunks.next();
      const body = Readable.from(
        (async function* () {
          if (!first.done) yield first.value;
          yield* chunks;
        })(),
      );
      return reply
        .type(CONTENT_TYPES[q.format])
        .header("content-disposition", `attachment; filename="usage-${start}-${end}.${q.format}"`)
        .header("cache-control", "no-store")
        .send(body);
    },
  );
}
