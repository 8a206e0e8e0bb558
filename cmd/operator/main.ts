/** The operator process (container entry point): reconciles ConversionSandboxes into sandbox Jobs. */
import { runOperator } from "../../internal/cli/run/index.ts";

runOperator(process.env).catch((err: unknown) => {
  console.error(`folio operator: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
