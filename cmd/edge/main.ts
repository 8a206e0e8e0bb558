/** The edge process (container entry point): the public HTTP API. */
import { runEdge } from "../../internal/cli/run/index.ts";

runEdge(process.env).catch((err: unknown) => {
  console.error(`folio edge: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
