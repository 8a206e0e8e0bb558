/**
 * LibreOffice to PDF, the sandbox program's first step (`converter.ts`):
 * for plain text, a UTF-8 copy of the document (it may come in UTF-16,
 * Windows-1252, …: `readText`); then `soffice.bin --convert-to pdf` (not
 * the `soffice` wrapper script: it calls `ls` on its own path, which fails
 * under the runsc on Debian 12), a LibreOffice started for the document.
 * (`warm-office.ts` hands the same conversion to a LibreOffice started
 * before the document, and falls back to {@link toPdf}.) LibreOffice exits
 * 0 and writes no PDF when it cannot load a document (corrupt, truncated,
 * password-protected): the missing PDF is what marks that case
 * ({@link madePdf}).
 *
 * Bundled into the sandbox program with `converter.ts`, under its rule on
 * imports.
 */
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { readText, type ConversionFormat } from "../formats/index.ts";
import type { ConverterOptions } from "./converter.ts";
import { JobError } from "./job-error.ts";
import { SOFFICE_BIN, fileUrl } from "./profile.ts";
import { runTool } from "./tools.ts";

/**
 * Plain text as LibreOffice is told to read it: UTF-8 without a byte-order
 * mark, in `dir`. The document may be in any encoding `readText` accepts
 * (UTF-16 with BOM, Windows-1252, …); LibreOffice's own guess would read
 * Windows-1252 bytes as broken UTF-8.
 */
export async function utf8Copy(document: string, dir: string): Promise<string> {
  const bytes = await readFile(document).catch(() => {
    throw new JobError("conversion_failed", "the job has no input document");
  });
  const reading = readText(bytes);
  if (!reading.ok) throw new JobError("conversion_failed", `the document is not text: ${reading.problem}`);
  await mkdir(dir, { recursive: true });
  const copy = join(dir, "document.txt");
  await writeFile(copy, reading.text, "utf8");
  return copy;
}

/**
 * The arguments of a conversion (after the profile and the start options):
 * to PDF, or to `target` (`--convert-to`'s `ext[:filter]`) for the warm-up.
 */
export function conversionArgs(document: string, format: ConversionFormat | undefined, outDir: string, target = "pdf"): string[] {
  const args: string[] = [];
  // Plain text was turned into UTF-8 (utf8Copy); say so rather than let LibreOffice guess.
  if (format === "TXT") args.push("--infilter=Text (encoded):UTF8,LF,,,");
  args.push("--convert-to", target, "--outdir", outDir, document);
  return args;
}

/** LibreOffice's options for every start: no window, no recovery, no first-start dialog, no lock. */
export const OFFICE_FLAGS = ["--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck"] as const;

/** The PDF LibreOffice wrote, or the job error that explains why there is none. */
export async function madePdf(pdfDir: string, format: ConversionFormat, code: number | null, output: string): Promise<string> {
  const pdf = join(pdfDir, "document.pdf");
  const made = await stat(pdf).then(
    (s) => s.size > 0,
    () => false,
  );
  if (made) return pdf;
  if (code === 81) throw new JobError("conversion_failed", "LibreOffice asked for a restart: the profile was not prepared");
  const said = output.trim().split("\n").filter((l) => l && !l.startsWith("convert ")).join("; ");
  throw new JobError(
    "conversion_failed",
    `LibreOffice could not read the document as ${format} (it may be corrupt, truncated, password-protected or of another format)` +
      (said ? `: ${said.slice(0, 300)}` : ""),
  );
}

/** One document's way to a PDF: where it is, where the PDF goes, and the profile and home LibreOffice use. */
export interface PdfJob {
  document: string;
  format: ConversionFormat;
  profile: string;
  pdfDir: string;
  home: string;
  deadline: number;
  options: ConverterOptions;
}

/** Converts with a LibreOffice started for the document: the normal mode, and the pre-started mode's fallback. */
export async function toPdf(job: PdfJob): Promise<string> {
  const { document, format, profile, pdfDir, home, deadline, options } = job;
  await checkInput(document);
  const args = [`-env:UserInstallation=${fileUrl(profile)}`, ...OFFICE_FLAGS, ...conversionArgs(document, format, pdfDir)];
  const run = await runTool(options.sofficePath ?? SOFFICE_BIN, args, deadline, options.signal, { HOME: home });
  return madePdf(pdfDir, format, run.code, run.output);
}

/** Fails the job when its input document is missing. */
export async function checkInput(document: string): Promise<void> {
  await stat(document).catch(() => {
    throw new JobError("conversion_failed", "the job has no input document");
  });
}
