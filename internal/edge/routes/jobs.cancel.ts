/** POST /v1/ocr/jobs/{id}/cancel: stops a job within 2 s; pages read stay billed, the rest of the hold goes back (docs/jobs.md). */
import { cancelJob, jobView } from "../../jobs/index.ts";
import { keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JobParams, OcrJob, ownedJob } from "./jobs.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    `${JOBS_PATH}/:id/cancel`,
    keyed(["ocr:write"], {
      summary: "Cancel a durable OCR job",
      description:
        "The job ends as cancelled at once; the workers reading its pages stop within 2 s. Pages already stored stay readable and billed; the rest of the hold is released. " +
        "A job that has already ended is answered as it is.",
      tags: ["OCR jobs"],
      params: JobParams,
      response: { 200: OcrJob },
    }),
    async (req) => {
      const accountId = principalOf(req).accountId;
      const row = (await cancelJob(deps.db, accountId, req.params.id, { retentionMs: deps.jobs.retentionMs })) ?? (await ownedJob(deps, accountId, req.params.id));
      return jobView(row);
    },
  );
}
