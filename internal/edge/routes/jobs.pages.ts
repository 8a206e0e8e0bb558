/**
 * GET /v1/ocr/jobs/{id}/pages: the pages stored so far, in page order,
 * readable while the job runs (docs/jobs.md).
 */
import { Type } from "typebox";
import { pagesAfter } from "../../jobs/index.ts";
import { TableEntry, keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JOBS_PATH } from "./jobs.create.ts";
import { JobPage, JobParams, ownedJob } from "./jobs.shared.ts";

const PagesQuery = Type.Object({
  starting_after: Type.Integer({ minimum: 0, default: 0, description: "A page number: the list starts with the next page stored after it." }),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50, description: "Pages per list, at most 200." }),
});

/** A page of GET …/pages: the stored page and, so that a job's tables can be read while it runs, the page's tables. */
const ListedPage = Type.Object({
  ...JobPage.properties,
  tables: Type.Array(TableEntry, { description: "The page's tables (empty without extract_tables or when it has none): what result.tables holds for this page." }),
});

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
}
