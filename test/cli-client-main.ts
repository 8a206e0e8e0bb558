#!/usr/bin/env node
/**
 * `folio ocr` / `folio convert` on a fresh commander program, exactly as
 * cmd/folio/main.ts runs them (same error line, same exit status), for
 * test/cli-client.test.ts while the entry point does not wire them in yet.
 */
import { Command } from "commander";
import { registerClientCommands } from "../internal/cli/client/index.ts";

const program = new Command().name("folio").showHelpAfterError();
registerClientCommands(program);
program.parseAsync(process.argv).catch((err: unknown) => {
  const e = err as { message?: string };
  console.error(`folio: ${e.message ?? String(err)}`);
  process.exit(1);
});
