/**
 * GET /v1/ocr/jobs/{id}/pages (the pages stored so far, in page order,
 * readable while the job runs) and GET /v1/ocr/jobs/{id}/result (once it
 * succeeded: /v1/ocr's answer, or one page a line with ?format=ndjson, for
 * any length). docs/jobs.md.
 */
import { Type } from "typebox";
import { pagesAfter, jobView, type JobRow } from "../../jobs/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { NDJSON } from "../ndjson.ts";
import { openStreamedAnswer } from "../streamed.ts";
import { PageEntry, StringEnum, TableEntry, keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JobParams, OcrJob, ownedJob } from "./jobs.shared.ts";

/** Pages read from the database at a time while the result is assembled or streamed. */
const RESULT_BATCH = 100;

const PagesQuery = Type.Object({
  starting_after: Type.Integer({ minimum: 0, default: 0, description: "A page number: the list starts with the next page stored after it." }),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50, description: "Pages per list, at most 200." }),
});

/** A stored page: /v1/ocr's page, or (a page that could not be read) its error and no text. */
const JobPage = Type.Object({
  ...PageEntry.properties,
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() }, { description: "Why the page could not be read (it is not billed)." })),
});

/** A page of GET …/pages: the stored page and, so that a job's tables can be read while it runs, the page's tables. */
const ListedPage = Type.Object({
  ...JobPage.properties,
  tables: Type.Array(TableEntry, { description: "The page's tables (empty without extract_tables or when it has none): what result.tables holds for this page." }),
});

const Result = Type.Object({
  id: Type.String({ description: "The job's id." }),
  object: Type.Literal("ocr.result"),
  created: Type.Integer(),
  model: Type.String(),
  result: Type.Object({ text: Type.String(), pages: Type.Array(JobPage), tables: Type.Array(TableEntry), confidence: Type.Optional(Type.Number()) }),
  usage: OcrJob.properties.usage,
  metadata: Type.Record(Type.String(), Type.String()),
});

/** A stored row's page and tables. */
interface Stored {
  page: { page_number: number; text: string; confidence?: number };
  tables: unknown[];
}

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    `${JOBS_PATH}/:id/pages`,
    keyed(["ocr:write"], {
      summary: "A durable OCR job's pages stored so far, in page order",
      tags: ["OCR jobs"],
      params: JobParams,
      querystring: PagesQuery,
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(ListedPage), has_more: Type.Boolean() }) },
    }),
    async (req) => {
      await ownedJob(deps, principalOf(req).accountId, req.params.id);
      const page = await pagesAfter(deps.db, req.params.id, req.query.starting_after, req.query.limit);
      return { object: "list" as const, ...page };
    },
  );

  app.get(
    `${JOBS_PATH}/:id/result`,
    keyed(
      ["ocr:write"],
      {
        summary: "A succeeded job's result: /v1/ocr's answer, or one page a line",
        description: `With ?format=ndjson the answer is ${NDJSON}: one page a line ({"page": …, "tables": […]}), for any length. A job not (yet) succeeded is a 409 naming its status.`,
        tags: ["OCR jobs"],
        params: JobParams,
        querystring: Type.Object({ format: Type.Optional(StringEnum(["json", "ndjson"])) }),
        response: { 200: Result },
      },
      [409],
    ),
    async (req, reply) => {
      const job = await ownedJob(deps, principalOf(req).accountId, req.params.id);
      if (job.status !== "succeeded") {
        throw new FolioError("job_not_finished", `the job is ${job.status}; its result is there once it has succeeded (its pages so far: ${JOBS_PATH}/${job.id}/pages)`, {
          extra: { status: job.status },
        });
      }
      if (req.query.format === "ndjson") {
        const body = openStreamedAnswer(reply, NDJSON);
        void streamPages(deps, job, (line) => body.write(line)).then(
          () => body.end(),
          (err: unknown) => body.destroy(err as Error),
        );
        return reply;
      }
      return wholeResult(deps, job);
    },
  );
}

/** Every stored page of the job, RESULT_BATCH at a time. */
async function* storedPages(deps: EdgeDeps, jobId: string): AsyncGenerator<Stored> {
  for (let after = 0; ; ) {
    const rows = await deps.db.selectFrom("ocr_job_pages").select(["page_number", "page"]).where("job_id", "=", jobId).where("page_number", ">", after).orderBy("page_number").limit(RESULT_BATCH).execute();
    for (const r of rows) yield r.page as Stored;
    if (rows.length < RESULT_BATCH) return;
    after = rows.at(-1)!.page_number;
  }
}

async function streamPages(deps: EdgeDeps, job: JobRow, write: (line: string) => void): Promise<void> {
  for await (const s of storedPages(deps, job.id)) write(JSON.stringify({ page: s.page, tables: s.tables }) + "\n");
}

/** /v1/ocr's answer for the job: the pages' texts joined, their tables, the mean confidence when every page has one. */
async function wholeResult(deps: EdgeDeps, job: JobRow) {
  const pages: Stored["page"][] = [];
  const tables: unknown[] = [];
  for await (const s of storedPages(deps, job.id)) {
    pages.push(s.page);
    tables.push(...s.tables);
  }
  const confidences = pages.map((p) => p.confidence);
  const allScored = confidences.length > 0 && confidences.every((c) => c !== undefined);
  const view = jobView(job);
  return {
    id: job.id,
    object: "ocr.result" as const,
    created: Math.floor(job.created_at.getTime() / 1000),
    model: job.model,
    result: {
      text: pages.map((p) => p.text).join("\n\n"),
      pages,
      tables,
      ...(allScored ? { confidence: (confidences as number[]).reduce((a, b) => a + b, 0) / confidences.length } : {}),
    },
    usage: view.usage,
    metadata: job.metadata,
  } as never;
}
