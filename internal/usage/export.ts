/**
 * GET /v1/usage/export: every entry of a range, oldest first, as CSV or
 * NDJSON, read in keyset pages of {@link EXPORT_PAGE} rows so memory stays
 * the same however many rows there are and no statement runs long.
 * Amounts are written exactly as stored (numeric text), never via a float.
 */
import { sql } from "kysely";
import type { DB } from "../platform/db/index.ts";
import { usageRows, type RowFilter } from "./sources.ts";

export const EXPORT_FORMATS = ["csv", "ndjson"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Rows read per statement. */
export const EXPORT_PAGE = 2000;
/** Rows per chunk written (about 140 bytes each). */
const CHUNK_ROWS = 250;

/** The columns of an export, in order (CSV header, NDJSON keys). */
const COLUMNS = [
  "id",
  "created_at",
  "endpoint",
  "model",
  "status",
  "error_code",
  "api_key_id",
  "prompt_tokens",
  "completion_tokens",
  "tokens_used",
  "pages_processed",
  "provider_cost_cents",
  "platform_fee_cents",
  "cost_cents",
  "processing_time_ms",
] as const;

/** Columns written as numbers (NDJSON) rather than strings. */
const NUMERIC = new Set<string>(["created_at", "prompt_tokens", "completion_tokens", "tokens_used", "pages_processed", "provider_cost_cents", "platform_fee_cents", "cost_cents", "processing_time_ms"]);

/** A row as read: every column as text, `created_at` as Unix seconds under `epoch` (a column named `created_at` would be what ORDER BY sorts on). */
type ExportRow = Record<Exclude<(typeof COLUMNS)[number], "created_at">, string | null> & { epoch: string; position: string };

const field = (row: ExportRow, c: (typeof COLUMNS)[number]) => (c === "created_at" ? row.epoch : row[c]);

export interface ExportRange extends RowFilter {
  /** Unix seconds, both included. */
  start: number;
  end: number;
}

/**
 * The export's text, chunk by chunk: a header (CSV), then one line per
 * entry. The first page is read before the first chunk, so a caller that
 * awaits the first chunk before answering still gets a database failure as
 * an error (a 503), not as a cut stream.
 */
export async function* exportUsage(db: DB, accountId: string, r: ExportRange, format: ExportFormat): AsyncGenerator<string> {
  const line = format === "csv" ? csvLine : ndjsonLine;
  let rows = await page(db, accountId, r);
  let first = format === "csv" ? COLUMNS.join(",") + "\r\n" : "";
  for (;;) {
    // Written in pieces of a few hundred lines: a piece stays under V8's large-object size (128 KiB),
    // so it is freed by the young generation's quick collections instead of piling up until a full one.
    for (let i = 0; i < rows.length || first; i += CHUNK_ROWS) {
      yield first + rows.slice(i, i + CHUNK_ROWS).map(line).join("");
      first = "";
    }
    if (rows.length < EXPORT_PAGE) return;
    const last = rows.at(-1)!;
    rows = await page(db, accountId, r, { position: last.position, id: last.id! });
  }
}

function page(db: DB, accountId: string, r: ExportRange, after?: { position: string; id: string }): Promise<ExportRow[]> {
  let q = usageRows(db, accountId, r.start, r.end, r).select([
      "id",
      sql<string>`floor(extract(epoch from created_at))::bigint::text`.as("epoch"),
      "endpoint",
      "model",
      "status",
      "error_code",
      "api_key_id",
      sql<string>`prompt_tokens::text`.as("prompt_tokens"),
      sql<string>`completion_tokens::text`.as("completion_tokens"),
      sql<string>`tokens_used::text`.as("tokens_used"),
      sql<string>`pages_processed::text`.as("pages_processed"),
      "provider_cost_cents",
      "platform_fee_cents",
      "cost_cents",
      sql<string>`processing_time_ms::text`.as("processing_time_ms"),
      sql<string>`created_at::text`.as("position"),
  ]);
  if (after) q = q.where(sql<boolean>`(created_at, id) > (${after.position}::timestamptz, ${after.id})`);
  return q.orderBy("created_at").orderBy("id").limit(EXPORT_PAGE).execute() as Promise<ExportRow[]>;
}

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
function csvField(v: string | null): string {
  if (v === null) return "";
  return /[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v;
}

function csvLine(row: ExportRow): string {
  return COLUMNS.map((c) => csvField(field(row, c))).join(",") + "\r\n";
}

/** Numbers are Postgres's own text (exact decimals), which is valid JSON number syntax. */
function ndjsonLine(row: ExportRow): string {
  const fields = COLUMNS.map((c) => {
    const v = field(row, c);
    return `${JSON.stringify(c)}:${v === null ? "null" : NUMERIC.has(c) ? v : JSON.stringify(v)}`;
  });
  return `{${fields.join(",")}}\n`;
}
