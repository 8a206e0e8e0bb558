/** What the job routes share: the job's wire shape, a stored page's, its path parameter, and finding an account's job (docs/jobs.md). */
import { Type } from "typebox";
import { jobRow, type JobRow } from "../../jobs/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { NO_NUL, PageEntry, ReadingUsage, StringEnum, UnixSeconds } from "../schemas.ts";
import type { EdgeDeps } from "../types.ts";

export const JOB_STATUSES = ["queued", "running", "succeeded", "failed", "cancelled"] as const;

export const OcrJob = Type.Object(
  {
    id: Type.String({ description: "job_<id>; also the id of the job's usage entry." }),
    object: Type.Literal("ocr.job"),
    status: StringEnum(JOB_STATUSES),
    model: Type.String({ description: "The model that reads the pages (a strategy resolved when the job was accepted)." }),
    page_count: Type.Union([Type.Integer(), Type.Null()], { description: "Pages the job reads; null until known (an office document, until converted)." }),
    pages_completed: Type.Integer({ description: "Pages read and stored (billed)." }),
    pages_failed: Type.Integer({ description: "Pages that could not be read (not billed); listed in the pages with their error." }),
    usage: Type.Object(
      { ...ReadingUsage.properties },
      { description: "What is charged so far (every page stored is charged with it); final once the job has ended. processing_time_ms: from its start to now or its end." },
    ),
    error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() }, { description: "Why a failed job failed." })),
    metadata: Type.Record(Type.String(), Type.String()),
    created_at: UnixSeconds,
    started_at: Type.Union([UnixSeconds, Type.Null()]),
    finished_at: Type.Union([UnixSeconds, Type.Null()]),
  },
  { description: "A durable OCR job (docs/jobs.md)." },
);

/** A stored page: /v1/ocr's page, or (a page that could not be read) its error and no text. */
export const JobPage = Type.Object({
  ...PageEntry.properties,
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() }, { description: "Why the page could not be read (it is not billed)." })),
});

export const JobParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL, description: "The job's id (job_…)." }) });

/** The account's job, or a 404 (another account's job is not there for this one, nor a job past its retention). */
export async function ownedJob(deps: EdgeDeps, accountId: string, id: string): Promise<JobRow> {
  const row = await jobRow(deps.db, id);
  if (!row || row.account_id !== accountId) throw new FolioError("not_found", `no job '${id}' in this account (jobs are kept ${retentionText(deps)} after they end)`, { param: "id" });
  return row;
}

function retentionText(deps: EdgeDeps): string {
  const days = deps.jobs.retentionMs / 86_400_000;
  return days >= 1 ? `${Math.round(days * 10) / 10} days` : `${Math.round(deps.jobs.retentionMs / 1000)} s`;
}
