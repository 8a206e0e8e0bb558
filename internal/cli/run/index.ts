/**
 * The process runners: `folio dev` (every service in one process) and one
 * command per service. Each parses its configuration and wires parts
 * together; the logic is in the service's own folder.
 */
import type { Command } from "commander";
import { PAGE_DPI } from "../../formats/index.ts";
import { runDev } from "./dev.ts";
import { runOperator } from "./operator.ts";
import { runConversion, runEdge, runExtraction, runWorker } from "./services.ts";

export { ensureDevAccount, DEV_CREDIT_CENTS } from "./dev-account.ts";
export { serveHealth } from "./operator.ts";
export { runConversion, runDev, runEdge, runExtraction, runOperator, runWorker };

export function registerRunCommands(program: Command): void {
  program
    .command("dev")
    .description("Run every Folio service in one process with embedded defaults (PGlite, in-process rate limits)")
    .action(async () => runDev(process.env));

  program
    .command("edge")
    .description("Run the public HTTP API (the edge) from FOLIO_* / DATABASE_URL / REDIS_URL")
    .action(async () => runEdge(process.env));

  program
    .command("extraction")
    .description("Run the extraction service (gRPC): model catalog, strategies, engines")
    .action(async () => runExtraction(process.env));

  program
    .command("conversion")
    .description(`Run the conversion service (gRPC): office documents to ${PAGE_DPI}-DPI PNG pages, one sandbox per document (FOLIO_SANDBOX)`)
    .action(async () => runConversion(process.env));

  program
    .command("worker")
    .description("Run a jobs worker: reads the pages of durable OCR jobs (POST /v1/ocr/jobs) through the extraction service; run as many as you like against one database")
    .action(async () => runWorker(process.env));

  program
    .command("operator")
    .description("Run the Kubernetes operator: ConversionSandbox resources become sandbox Jobs (in cluster, or KUBECONFIG)")
    .action(async () => runOperator(process.env));
}
