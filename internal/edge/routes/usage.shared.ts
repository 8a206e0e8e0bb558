import { Type } from "typebox";
import { FolioError } from "../../platform/errors/index.ts";
import { NO_NUL, StringEnum, UnixSeconds } from "../schemas.ts";

/** The time window of every usage endpoint (Unix seconds, both ends included). */
export const Window = {
  start_date: Type.Optional(UnixSeconds),
  end_date: Type.Optional(UnixSeconds),
};

/** The entry filters of the list and the export. */
export const EntryFilters = {
  status: Type.Optional(StringEnum(["success", "error"])),
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL })),
  api_key_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL })),
};

/** `end_date` (default now) and `start_date` (default `days` before it); a start after the end is a 400. */
export function windowOf(q: { start_date?: number | undefined; end_date?: number | undefined }, days: number): { start: number; end: number } {
  const end = q.end_date ?? Math.floor(Date.now() / 1000);
  const start = q.start_date ?? end - days * 86_400;
  if (start > end) throw new FolioError("invalid_request", "start_date must not be after end_date", { param: "start_date" });
  return { start, end };
}
