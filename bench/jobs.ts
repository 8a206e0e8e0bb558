/**
 * jobs: the goals of the durable jobs issue (docs/jobs.md), measured on the
 * processes people run.
 *
 * 1. On `folio dev` (what `make run` runs: a child process with a fresh
 *    FOLIO_DATA_DIR, embedded PGlite, in-process rate limits, its runsc
 *    conversion pool), a scanned PDF of BENCH_JOB_PAGES pages (default
 *    1,000) as one job, model local/tesseract, uploaded as multipart (`file`)
 *    and followed through its events (SSE):
 *    (a) pages/s from submission to the final event, against the tesseract
 *        CLI by hand on the same pages (rendered first, untimed, with
 *        `pdftoppm -r 200 -gray`; then `tesseract <page> stdout -l eng
 *        --psm 3 tsv`, OMP_THREAD_LIMIT=1, two at a time), run before the
 *        job, not interleaved (2 cores): goal job/CLI >= 0.9;
 *    (b) submission to the first page readable through GET …/pages, polled
 *        every 100 ms: goal <= 5 s;
 *    (c) VmRSS summed over the folio dev process and every descendant
 *        (/proc, every 250 ms): idle (median of 5 s before submission) and
 *        peak during the job: goal peak - idle <= 512 MiB. A child caught
 *        between fork and exec (Node's spawn forks the whole process, and
 *        the copy shows its parent's VmRSS until it execs tesseract or
 *        pdftoppm) counts the parent's pages twice: both peaks are reported,
 *        the goal is judged without such copies.
 *    The job is submitted with `language=en`, so Folio reads each page once
 *    in English as the CLI does (without it, pages found to be German or
 *    French are read a second time).
 * 2. Fairness, on the same folio dev: a one-page job (a PNG page) of a
 *    second account, submission to succeeded (GET polled every 100 ms),
 *    3 on the idle service and 3 while the first account's long job runs
 *    (the same PDF, or a 300-page one when BENCH_JOB_PAGES is smaller);
 *    the long job is cancelled afterwards: goal loaded/idle medians <= 3.
 * 3. Two `folio worker` processes, one `folio extraction` and one `folio
 *    edge` as children against an empty database of their own on
 *    DATABASE_URL's server: a job of BENCH_JOB_WORKER_PAGES pages (default
 *    100); each worker's `folio_job_pages_total{outcome="ok"}` from its
 *    /metrics, and the pages/s. Both workers must have read pages.
 *
 * Correctness decides `ok`: every job succeeded, every page stored once
 * (listed through GET …/pages: 1..N, no gap, no repeat) with no page failed,
 * the CLI read every page, both workers read pages. Missed goals are
 * reported, not fatal.
 *
 * The PDF: the corpus's page images (FOLIO_EVAL_CORPUS, default
 * ../shared/corpus/ocr; the README's "page" rows), used in turn, one image
 * per page, built with pdf-lib and cached in test-artifacts/ by page count.
 *
 * Environment: DATABASE_URL (part 3; `make bench` gives it), BENCH_JOB_PAGES,
 * BENCH_JOB_WORKER_PAGES, FOLIO_EVAL_CORPUS, BENCH_JOB_NODE_FLAGS (more flags for
 * folio dev's node, such as --trace-gc; its output then goes to
 * test-artifacts/bench-jobs-dev.log), BENCH_JOB_CPU_PROF (a folder: every
 * folio dev started writes its V8 CPU profile there as it exits).
 *
 * The parts live in bench/jobs/: the PDF (scanned-pdf.ts), the CLI baseline
 * (cli-baseline.ts), /proc sampling (proc.ts), folio dev (dev.ts), the job
 * API's client (api.ts) and /metrics (metrics.ts), parts 1 to 3
 * (long-job.ts, fairness.ts, two-workers.ts), the run and its report
 * (benchmark.ts); this file is the entry bench/run.ts lists.
 */
import { runBenchmark } from "./jobs/benchmark.ts";
import { benchmarkEntry } from "./support.ts";

// What other benchmarks use of these parts (bench/soak.ts starts folio dev and samples its tree the same way).
export { cleanEnv, createAccount, startDev, type Dev } from "./jobs/dev.ts";
export { treeSample, type ProcSample } from "./jobs/proc.ts";
export { scannedPdf } from "./jobs/scanned-pdf.ts";

export default await benchmarkEntry(import.meta.url, {
  name: "jobs",
  description: "durable jobs: a 1,000-page scan on folio dev vs the tesseract CLI, first page, memory, fairness, two workers",
  run: runBenchmark,
});
