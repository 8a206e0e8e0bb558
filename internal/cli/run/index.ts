/**
 * The process runners: `folio dev` (every service in one process) and one
 * command per service. Each parses its configuration and wires parts
 * together; the logic is in the service's own folder.
 */
import { runDev } from "./dev.ts";
import { runOperator } from "./operator.ts";
import { runConversion, runEdge, runExtraction, runWorker } from "./services.ts";

export { ensureDevAccount, DEV_CREDIT_CENTS } from "./dev-account.ts";
export { serveHealth } from "./operator.ts";
export { runConversion, runDev, runEdge, runExtraction, runOperator, runWorker };
export { registerRunCommands } from "./commands.ts";
