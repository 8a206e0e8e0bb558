/**
 * GET /v1/ocr/jobs/{id}/result: once the job succeeded, /v1/ocr's answer,
 * or one page a line with ?format=ndjson, for any length (docs/jobs.md).
 */
import { Type } from "typebox";
import { jobView, storedPages, type JobRow, type StoredPage } from "../../jobs/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { NDJSON } from "../ndjson.ts";
import { openStreamedAnswer } from "../streamed.ts";
import { StringEnum, TableEntry, keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JobPage, JobParams, OcrJob, ownedJob } from "./jobs.shared.ts";

const Result = Type.Object({
  id: Type.String({ description: "The job's id." }),
  object: Type.Literal("ocr.result"),
  created: Type.Integer(),
  model: Type.String(),
  result: Type.Object({ text: Type.String(), pages: Type.Array(JobPage), tables: Type.Array(TableEntry), confidence: Type.Optional(Type.Number()) }),
  usage: OcrJob.properties.usage,
  metadata: Type.Record(Type.String(), Type.String()),
});

export default function register(app: App, deps: EdgeDeps): void {
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

async function streamPages(deps: EdgeDeps, job: JobRow, write: (line: string) => void): Promise<void> {
  for await (const s of storedPages(deps.db, job.id)) write(JSON.stringify({ page: s.page, tables: s.tables }) + "\n");
}

/** /v1/ocr's answer for the job: the pages' texts joined, their tables, the mean confidence when every page has one. */
async function wholeResult(deps: EdgeDeps, job: JobRow) {
  const pages: StoredPage["page"][] = [];
  const tables: unknown[] = [];
  for await (const s of storedPages(deps.db, job.id)) {
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
