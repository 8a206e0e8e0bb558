/**
 * The environment of a child process that reads bytes a client sent
 * (pdfinfo, pdftoppm, tesseract): an allow-list, never the parent's whole
 * environment. The parent holds secrets in its environment (DATABASE_URL
 * with its password, REDIS_URL, FOLIO_UPSTREAM_API_KEY,
 * FOLIO_WEBHOOK_SECRET_KEY, whatever an operator adds); a parser that a
 * crafted document takes over can read its own `/proc/self/environ`, so
 * none of them may be there. Allow-listing rather than removing known
 * secrets: a variable added next year is left out without anyone thinking
 * of it. docs/sandbox-parsers.md ("Parsers outside the sandbox") lists what each
 * tool gets.
 *
 * The LibreOffice of the sandbox program (internal/sandbox/converter.ts,
 * also run on the host by the `unsandboxed` backend) does not use this: its
 * tools get a fixed environment written out in constants in
 * internal/sandbox/tools.ts, nothing of the parent's at all.
 */

/** What every parser may see of its parent's environment: where programs are, the locale and time zone, home and temporary folder, fontconfig's files. Values only, nothing secret. */
const ALWAYS = new Set(["PATH", "HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE", "FONTCONFIG_FILE", "FONTCONFIG_PATH"]);
/** Locale categories (LC_ALL, LC_CTYPE, …). */
const LOCALE_PREFIX = "LC_";

export interface ParserEnvOptions {
  /** The tool's own settings to pass on when the parent has them (tesseract: `TESSDATA_PREFIX`). */
  keep?: readonly string[];
  /** Variables the caller sets for the tool (tesseract: `OMP_THREAD_LIMIT`); they win over the parent's. */
  set?: Readonly<Record<string, string>>;
}

/**
 * The allow-listed environment for a parser child: from `from` (the
 * process's environment unless given) only {@link ALWAYS}, `LC_*` and
 * `options.keep`, then `options.set`.
 */
export function parserEnv(options: ParserEnvOptions = {}, from: Readonly<Record<string, string | undefined>> = process.env): Record<string, string> {
  const keep = new Set(options.keep ?? []);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(from)) {
    if (value === undefined) continue;
    if (ALWAYS.has(name) || keep.has(name) || (name.startsWith(LOCALE_PREFIX) && /^LC_[A-Z_]+$/.test(name))) env[name] = value;
  }
  return { ...env, ...options.set };
}
