#!/usr/bin/env node
/**
 * `folio`: the command people type. Thin: builds the program; each part of
 * internal/cli registers its commands (docs/architecture.md).
 */
import { Command } from "commander";
import { registerAdminCommands } from "../../internal/cli/admin/index.ts";
import { registerClientCommands } from "../../internal/cli/client/index.ts";
import { registerRunCommands } from "../../internal/cli/run/index.ts";

const program = new Command()
  .name("folio")
  .description("Folio: document OCR platform. Commands for development, operations and administration.")
  .showHelpAfterError();

registerRunCommands(program);
registerAdminCommands(program);
// `folio ocr` and `folio convert`: clients of a running Folio (FOLIO_BASE_URL, FOLIO_API_KEY).
registerClientCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  const e = err as { name?: string; message?: string; code?: string };
  console.error(`folio: ${e.message ?? String(err)}`);
  process.exit(1);
});
