/** GET /v1/ocr/jobs: the account's jobs, newest first (docs/jobs.md). */
import { Type } from "typebox";
import { jobView, listJobs } from "../../jobs/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { NO_NUL, StringEnum, keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JOB_STATUSES, OcrJob } from "./jobs.shared.ts";

const ListQuery = Type.Object({
  status: Type.Optional(StringEnum(JOB_STATUSES)),
  starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: "A job's id: the page starts with the next older job." })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: "Jobs per page, at most 100." }),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    JOBS_PATH,
    keyed(["ocr:write"], {
      summary: "The account's durable OCR jobs, newest first",
      tags: ["OCR jobs"],
      querystring: ListQuery,
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(OcrJob), has_more: Type.Boolean() }) },
    }),
    async (req) => {
      const q = req.query;
      const page = await listJobs(deps.db, principalOf(req).accountId, { status: q.status, startingAfter: q.starting_after, limit: q.limit });
      if (!page) throw new FolioError("invalid_request", `no job '${q.starting_after}' in this account to start after`, { param: "starting_after" });
      return { object: "list" as const, data: page.rows.map(jobView), has_more: page.hasMore };
    },
  );
}
