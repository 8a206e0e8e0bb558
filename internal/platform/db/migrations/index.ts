import type { Migration } from "kysely";
import * as m0001 from "./0001_core.ts";
import * as m0002 from "./0002_idempotency.ts";
import * as m0003 from "./0003_usage_scale.ts";
import * as m0004 from "./0004_ocr_jobs.ts";
import * as m0005 from "./0005_ocr_job_images.ts";
import * as m0006 from "./0006_webhooks.ts";

/**
 * Every migration, in order. Listed statically (not read from a folder) so
 * the compiled `dist/` and the TypeScript sources run the same set.
 */
export const migrations: Record<string, Migration> = {
  "0001_core": m0001,
  "0002_idempotency": m0002,
  "0003_usage_scale": m0003,
  "0004_ocr_jobs": m0004,
  "0005_ocr_job_images": m0005,
  "0006_webhooks": m0006,
};
