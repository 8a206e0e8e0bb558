/** GET /v1/ocr/jobs/{id}: a job, its status, progress and usage so far (docs/jobs.md). */
import { jobView } from "../../jobs/index.ts";
import { keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JobParams, OcrJob, ownedJob } from "./jobs.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    `${JOBS_PATH}/:id`,
    keyed(["ocr:write"], { summary: "A durable OCR job: status, progress, usage so far", tags: ["OCR jobs"], params: JobParams, response: { 200: OcrJob } }),
    async (req) => jobView(await ownedJob(deps, principalOf(req).accountId, req.params.id)),
  );
}
