#!/usr/bin/env node
/**
 * `folio`: the command people type. Thin: builds the program; each part of
 * internal/cli registers its commands (docs/architecture.md).
 */
import { existsSync, readFileSync } from "node:fs";
import { Command } from "commander";
// The command modules, not the rooms' index.ts: they load a command's code only when it runs (docs/cli.md).
import { registerAdminCommands } from "../../internal/cli/admin/commands.ts";
import { registerClientCommands } from "../../internal/cli/client/index.ts";
import { registerRunCommands } from "../../internal/cli/run/commands.ts";

const program = new Command()
  .name("folio")
  .description("Folio: document OCR platform. Commands for development, operations and administration.")
  .version(`folio ${packageVersion()} (Node ${process.version})`, "-V, --version", "the version, and the Node that runs it")
  .showHelpAfterError();

registerRunCommands(program);
registerAdminCommands(program);
// `folio ocr` and `folio convert`: clients of a running Folio (FOLIO_BASE_URL, FOLIO_API_KEY).
registerClientCommands(program);

/** The project's version: package.json two folders up from the sources, three from the compiled tree (dist/cmd/folio). */
function packageVersion(): string {
  const found = ["../../package.json", "../../../package.json"].map((p) => new URL(p, import.meta.url)).find((u) => existsSync(u));
  return found ? (JSON.parse(readFileSync(found, "utf8")) as { version: string }).version : "unknown";
}

program.parseAsync(process.argv).catch((err: unknown) => {
  const e = err as { name?: string; message?: string; code?: string };
  console.error(`folio: ${e.message ?? String(err)}`);
  process.exit(1);
});
