/**
 * The client commands of `folio`: `folio ocr` and `folio convert`, which talk
 * to a running Folio over its HTTP API (`commands.ts` does the work over the
 * HTTP client in `http.ts`), and `folio webhooks listen`, a local receiver
 * that checks webhook signatures (`webhooks-listen.ts`).
 * Failures throw a ClientError; the entry point prints `folio: <message>` and
 * exits 1. Ctrl-C while `folio ocr` follows a job exits 130 (the status a
 * shell gives a process SIGINT ended).
 */
import { Option, type Command } from "commander";
import { STRATEGIES } from "../../contracts/strategies.ts";
import { PAGE_DPI } from "../../formats/index.ts";
import { OUTPUT_FORMATS, runConvert, runOcr, type ConvertOptions, type OcrOptions } from "./commands.ts";
import { DEFAULT_BASE_URL } from "./http.ts";
import { registerWebhooksCommands } from "./webhooks-listen.ts";

export { ClientError, DEFAULT_BASE_URL } from "./http.ts";
export { runConvert, runOcr, type ConvertOptions, type Io, type OcrOptions } from "./commands.ts";

const PAGES_HELP = "only these pages, e.g. 1-20,25 or 5- (page 5 to the end); page images keep their page numbers (page-025.png)";

function connectionOptions(cmd: Command): Command {
  return cmd
    .option("--base-url <url>", `Folio's address (default: FOLIO_BASE_URL, else ${DEFAULT_BASE_URL})`)
    .option("--api-key <key>", "API key (default: FOLIO_API_KEY; prefer the variable, arguments are visible to other users of the machine)");
}

/** A repeatable option's values, in the order given. */
function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

export function registerClientCommands(program: Command): void {
  connectionOptions(
    program
      .command("ocr")
      .description("Read a document (file or URL) through a running Folio: text on stdout, cost on stderr")
      .argument("[file-or-url]", "a local file, or an http(s) URL the server fetches (none with --job)")
      .option("--model <id>", "a catalog model id, e.g. local/tesseract (wins over --strategy)")
      .addOption(new Option("--strategy <name>", "routing strategy when no model is given").choices(STRATEGIES))
      .option("--tables", "ask the model for tables")
      .option("--language <code>", "language hint, ISO 639-1 (en, de)")
      .option("--pages <list>", PAGES_HELP)
      .addOption(new Option("--format <format>", "text or markdown on stdout; json prints the whole result").choices(OUTPUT_FORMATS).default("text"))
      .option("--out <dir>", "also save each page image (page-001.png, …) into this folder")
      .option("--progress", "show progress even when stderr is not a terminal (--async and --job: a line per progress event, shown by default)")
      .option("--no-progress", "never show progress")
      .option("--async", "read it as a durable job (any length, survives a dropped connection): submitted, followed with progress, its result written as without --async")
      .option("--job <id>", "follow an existing job (job_…) until it ends and write its result; no file or URL")
      .option("--metadata <key=value>", "with --async: a pair kept with the job (repeatable, up to 16)", collect)
      .option("--cancel-on-interrupt", "with --async or --job: Ctrl-C cancels the job (default: it goes on, and the command says how to follow it again)"),
  ).action(async (target: string | undefined, o: OcrOptions) => {
    const status = await runOcr(target, o);
    // Not process.exit: stdout may still be draining into a pipe.
    if (status !== 0) process.exitCode = status;
  });

  connectionOptions(
    program
      .command("convert")
      .description(`Convert an office document to ${PAGE_DPI}-DPI PNG pages through a running Folio (POST /v1/convert)`)
      .argument("<file>", "DOCX, PPTX, DOC, ODT, RTF or TXT")
      .requiredOption("--out <dir>", "folder for the pages (page-001.png, …)")
      .option("--mime-type <type>", "the document's MIME type, when its extension does not say")
      .option("--pages <list>", PAGES_HELP),
  ).action(async (file: string, o: ConvertOptions) => runConvert(file, o));

  registerWebhooksCommands(program);
}
