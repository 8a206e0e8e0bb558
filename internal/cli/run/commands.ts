/**
 * The commands that run Folio's processes: `folio dev` and one per service.
 * Light on purpose: a command loads its service's code when it runs, so
 * `folio --help` and the client commands (`folio ocr`) start without loading
 * every server (a second of CPU less for each; docs/cli.md).
 */
import type { Command } from "commander";
import { PAGE_DPI } from "../../formats/index.ts";

/** Registers `folio dev`, `edge`, `extraction`, `conversion`, `worker` and `operator`. */
export function registerRunCommands(program: Command): void {
  program
    .command("dev")
    .description("Run every Folio service in one process with embedded defaults (PGlite, in-process rate limits)")
    .action(async () => (await import("./dev.ts")).runDev(process.env));

  program
    .command("edge")
    .description("Run the public HTTP API (the edge) from FOLIO_* / DATABASE_URL / REDIS_URL")
    .action(async () => (await import("./services.ts")).runEdge(process.env));

  program
    .command("extraction")
    .description("Run the extraction service (gRPC): model catalog, strategies, engines")
    .action(async () => (await import("./services.ts")).runExtraction(process.env));

  program
    .command("conversion")
    .description(`Run the conversion service (gRPC): office documents to ${PAGE_DPI}-DPI PNG pages, one sandbox per document (FOLIO_SANDBOX)`)
    .action(async () => (await import("./services.ts")).runConversion(process.env));

  program
    .command("worker")
    .description("Run a jobs worker: reads the pages of durable OCR jobs (POST /v1/ocr/jobs) through the extraction service; run as many as you like against one database")
    .action(async () => (await import("./services.ts")).runWorker(process.env));

  program
    .command("operator")
    .description("Run the Kubernetes operator: ConversionSandbox resources become sandbox Jobs (in cluster, or KUBECONFIG)")
    .action(async () => (await import("./operator.ts")).runOperator(process.env));
}
