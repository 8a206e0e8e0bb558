/** The extraction process (container entry point): catalog and extraction over gRPC. */
import { runExtraction } from "../../internal/cli/run/index.ts";

runExtraction(process.env).catch((err: unknown) => {
  console.error(`folio extraction: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
