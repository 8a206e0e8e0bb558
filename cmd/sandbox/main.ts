/**
 * The program inside a sandbox: converts the one document of a job folder
 * and exits. Usage: `sandbox [JOB_DIR]` (or FOLIO_JOB_DIR; default `/job`).
 * Exit code 0 whenever `output/result.json` was written, conversion failures
 * included; 2 when the job folder itself is unusable.
 */
import { runJob } from "../../internal/sandbox/converter.ts";

const jobDir = process.argv[2] ?? process.env.FOLIO_JOB_DIR ?? "/job";

runJob(jobDir, { scratchDir: process.env.TMPDIR ?? "/tmp" }).then(
  (result) => {
    process.stderr.write(`${JSON.stringify({ msg: "sandbox job done", ok: result.ok, pageCount: result.pageCount, error: result.error?.code, timings: result.timings })}\n`);
  },
  (err: unknown) => {
    process.stderr.write(`${JSON.stringify({ msg: "sandbox job unusable", error: err instanceof Error ? err.message : String(err) })}\n`);
    process.exitCode = 2;
  },
);
