/**
 * The program inside a sandbox: converts one document and exits. Two modes:
 *
 * - Job folder (`runsc` backend): `sandbox [JOB_DIR]` (or FOLIO_JOB_DIR;
 *   default `/job`). Exit code 0 whenever `output/result.json` was written,
 *   conversion failures included; 2 when the job folder itself is unusable.
 * - Broker (`kubernetes` backend), when FOLIO_BROKER_ADDRESS is set: fetches
 *   the document from the conversion service's broker with
 *   FOLIO_BROKER_TOKEN, converts it in a job folder under TMPDIR with the
 *   profile in FOLIO_PROFILE_DIR (default `/opt/folio/profile`), submits the
 *   pages, writes the termination message to FOLIO_TERMINATION_LOG (default
 *   `/dev/termination-log`). Exit code 0 once the result was submitted,
 *   conversion failures included; 1 when the exchange with the broker
 *   failed. See `internal/sandbox/kubernetes/pod.ts`.
 */
import { createRequire } from "node:module";
import { runJob } from "../../internal/sandbox/converter.ts";

const line = (fields: Record<string, unknown>) => process.stderr.write(`${JSON.stringify(fields)}\n`);

function jobFolderMode(): void {
  const jobDir = process.argv[2] ?? process.env.FOLIO_JOB_DIR ?? "/job";
  runJob(jobDir, { scratchDir: process.env.TMPDIR ?? "/tmp" }).then(
    (result) => {
      line({ msg: "sandbox job done", ok: result.ok, pageCount: result.pageCount, error: result.error?.code, timings: result.timings });
    },
    (err: unknown) => {
      line({ msg: "sandbox job unusable", error: err instanceof Error ? err.message : String(err) });
      process.exitCode = 2;
    },
  );
}

async function brokerMode(): Promise<void> {
  // gRPC is CommonJS. In the esbuild ES-module bundle its require() calls of
  // Node's built-ins go through a shim that needs a global `require`; ES
  // modules have none, so one is provided before gRPC is first loaded.
  const scope = globalThis as { require?: NodeJS.Require };
  scope.require ??= createRequire(import.meta.url);
  // Loaded only here: the job-folder mode never loads gRPC.
  const { brokerModeOptions, runBrokerMode } = await import("../../internal/sandbox/kubernetes/pod.ts");
  const { exitCode } = await runBrokerMode({ ...brokerModeOptions(process.env), log: line });
  process.exitCode = exitCode;
}

if (process.env.FOLIO_BROKER_ADDRESS) {
  brokerMode().catch((err: unknown) => {
    // runBrokerMode never throws; this is loading the module failing.
    line({ msg: "sandbox broker mode failed to start", error: err instanceof Error ? err.message : String(err) });
    process.exitCode = 1;
  });
} else {
  jobFolderMode();
}
