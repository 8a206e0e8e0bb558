/** The jobs worker process (container entry point): reads durable OCR jobs' pages. */
import { runWorker } from "../../internal/cli/run/index.ts";

runWorker(process.env).catch((err: unknown) => {
  console.error(`folio worker: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
