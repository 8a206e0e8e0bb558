/** The conversion process (container entry point): office documents to PNG pages in sandboxes, over gRPC. */
import { runConversion } from "../../internal/cli/run/index.ts";

runConversion(process.env).catch((err: unknown) => {
  console.error(`folio conversion: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
