/** GET /v1/ocr/jobs/{id} and GET /v1/ocr/jobs: a job, and the account's jobs newest first (docs/jobs.md). */
import { sql } from "kysely";
import { Type } from "typebox";
import { jobView } from "../../jobs/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { NO_NUL, StringEnum, keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JOB_STATUSES, JobParams, OcrJob, ownedJob } from "./jobs.shared.ts";

const ListQuery = Type.Object({
  status: Type.Optional(StringEnum(JOB_STATUSES)),
  starting_after: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: "A job's id: the page starts with the next older job." })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: "Jobs per page, at most 100." }),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    `${JOBS_PATH}/:id`,
    keyed(["ocr:write"], { summary: "A durable OCR job: status, progress, usage so far", tags: ["OCR jobs"], params: JobParams, response: { 200: OcrJob } }),
    async (req) => jobView(await ownedJob(deps, principalOf(req).accountId, req.params.id)),
  );

  app.get(
    JOBS_PATH,
    keyed(["ocr:write"], {
      summary: "The account's durable OCR jobs, newest first",
      tags: ["OCR jobs"],
      querystring: ListQuery,
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(OcrJob), has_more: Type.Boolean() }) },
    }),
    async (req) => {
      const accountId = principalOf(req).accountId;
      const q = req.query;
      let query = deps.db.selectFrom("ocr_jobs").selectAll().where("account_id", "=", accountId);
      if (q.status) query = query.where("status", "=", q.status);
      if (q.starting_after !== undefined) {
        const cursor = await deps.db.selectFrom("ocr_jobs").select(["created_at", "id"]).where("id", "=", q.starting_after).where("account_id", "=", accountId).executeTakeFirst();
        if (!cursor) throw new FolioError("invalid_request", `no job '${q.starting_after}' in this account to start after`, { param: "starting_after" });
        query = query.where(sql<boolean>`(created_at, id) < (${cursor.created_at}, ${cursor.id})`);
      }
      const rows = await query.orderBy("created_at", "desc").orderBy("id", "desc").limit(q.limit + 1).execute();
      return { object: "list" as const, data: rows.slice(0, q.limit).map(jobView), has_more: rows.length > q.limit };
    },
  );
}
