/**
 * The LibreOffice user profile every conversion starts from.
 *
 * A profile that does not exist yet makes LibreOffice create it and then
 * exit with code 81 ("restart me") before doing any work, so the profile is
 * prepared once, outside any sandbox, and each conversion uses its own fresh
 * copy of it. Preparing also writes the security settings below into the
 * profile's `registrymodifications.xcu`, which is read at start and wins over
 * the installation's defaults.
 *
 * Which settings LibreOffice 7.4 (Debian 12) honours, and why each is here:
 *
 * - `Common/Security/Scripting/MacroSecurityLevel = 3` ("very high": only
 *   macros from trusted locations run; there are none) and
 *   `DisableMacrosExecution = true` (no macro of any language runs, whatever
 *   the level or signature). Document event bindings are macros too.
 * - `Common/Security/Scripting/BlockUntrustedRefererLinks = true`: linked
 *   (not embedded) images and other resources whose referer is a document
 *   outside the trusted locations are not loaded at all - covers DOCX
 *   `r:link`, ODF `xlink:href` images, http(s) and file URLs alike.
 * - `Writer/Content/Update/Link = 0` (sw `UpdateLinks::NEVER`): linked
 *   sections, DDE and OLE links are never refreshed on load.
 *   `Calc/Content/Update/Link = 1` (sc `LM_NEVER`; Calc numbers it
 *   differently): same for spreadsheet links embedded in documents.
 * - `Common/Security/Scripting/DisableActiveContent = true`: newer releases
 *   (24.2+) use it to refuse OLE/DDE/active content; 7.4 does not know the
 *   key and ignores it, so it costs nothing and holds when LibreOffice moves.
 * - `Setup/L10N/ooSetupSystemLocale = en-GB`: documents that name no paper
 *   size (plain text) are laid out on A4 rather than the en-US Letter default.
 * - `Setup/Product/ooSetupLastVersion` = the installation's own version
 *   (`ooSetupVersion`, "7.4"): not a security setting but the largest cost
 *   of a start. LibreOffice runs its graphics render tests (vcl's
 *   `GraphicsRenderTests`: 16 drawings on 4096×4096 bitmaps of 64 MiB each)
 *   at every start whose profile has not recorded the running version as
 *   seen (`utl::isProductVersionUpgraded`), and only a start with a user
 *   interface records it. A profile used only headless, as every server
 *   uses it, therefore pays for them at each start: on this machine a start
 *   took 750–900 ms and 285,000 page faults with them, 90–100 ms and 6,900
 *   without (docs/benchmarks/conversion.md, "LibreOffice's start"). The results only
 *   go to a log file in the profile.
 *
 * - `Common/Font/Substitution/Replacement = true` and the `FontPairs` of
 *   `fonts.ts`'s FONT_REPLACEMENTS: LibreOffice's font replacement table,
 *   for families with no metric twin in the declared font set (not a
 *   security setting: page fidelity, docs/sandbox.md "Fonts").
 *
 * Inside a sandbox there is no network and nothing of the host to link to,
 * so these settings are the second line of defence there; in the
 * `unsandboxed` development backend they are the only one.
 */
import { spawn } from "node:child_process";
import { chmod, readFile, readdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { FONT_REPLACEMENTS, xmlEscape } from "./fonts.ts";

export const SOFFICE_BIN = "/usr/lib/libreoffice/program/soffice.bin";

/** The settings written into every prepared profile (see the module comment). */
export const PROFILE_SETTINGS: readonly { path: string; name: string; type: "int" | "boolean" | "string"; value: string }[] = [
  { path: "/org.openoffice.Office.Common/Security/Scripting", name: "MacroSecurityLevel", type: "int", value: "3" },
  { path: "/org.openoffice.Office.Common/Security/Scripting", name: "DisableMacrosExecution", type: "boolean", value: "true" },
  { path: "/org.openoffice.Office.Common/Security/Scripting", name: "BlockUntrustedRefererLinks", type: "boolean", value: "true" },
  { path: "/org.openoffice.Office.Common/Security/Scripting", name: "DisableActiveContent", type: "boolean", value: "true" },
  { path: "/org.openoffice.Office.Writer/Content/Update", name: "Link", type: "int", value: "0" },
  { path: "/org.openoffice.Office.Calc/Content/Update", name: "Link", type: "int", value: "1" },
  { path: "/org.openoffice.Setup/L10N", name: "ooSetupSystemLocale", type: "string", value: "en-GB" },
  // The replacement table (FONT_PAIRS_PATH, from fonts.ts) applies only when this is on.
  { path: "/org.openoffice.Office.Common/Font/Substitution", name: "Replacement", type: "boolean", value: "true" },
];

/** Where LibreOffice keeps its font replacement table (Tools > Options > Fonts), a set of FontReplacement nodes. */
const FONT_PAIRS_PATH = "/org.openoffice.Office.Common/Font/Substitution/FontPairs";

/** The `<item>` lines of the replacement table: each family of {@link FONT_REPLACEMENTS}, always, on screen and in print. */
export function fontPairsXcuItems(pairs: typeof FONT_REPLACEMENTS = FONT_REPLACEMENTS): string {
  const prop = (name: string, value: string) => `<prop oor:name="${name}" oor:op="fuse"><value>${value}</value></prop>`;
  return pairs
    .map(
      (p, i) =>
        `<item oor:path="${FONT_PAIRS_PATH}"><node oor:name="_${i}" oor:op="replace">` +
        prop("ReplaceFont", xmlEscape(p.family)) +
        prop("SubstituteFont", xmlEscape(p.substitute)) +
        prop("Always", "true") +
        prop("OnScreenOnly", "false") +
        "</node></item>",
    )
    .join("\n");
}

/** Exit code of a first start that created the profile and wants to be restarted. */
const RESTART_EXIT_CODE = 81;
/** Marker written last, so a half-prepared folder is never taken for a prepared one. */
const READY_MARKER = ".folio-profile-ready";
/**
 * What the marker says: bump it when the prepared profile changes, so that
 * a profile prepared by an earlier release is prepared again.
 */
const PROFILE_FORMAT = "3: settings, last version, font replacements";
/** The installation's configuration, where `ooSetupVersion` is set (relative to soffice.bin's folder). */
const MAIN_XCD = ["..", "share", "registry", "main.xcd"] as const;

/** One property of `registrymodifications.xcu`. */
type ProfileSetting = (typeof PROFILE_SETTINGS)[number];

/**
 * The property that records a version as already seen, so that a start
 * does not run the graphics render tests (see the module comment); its
 * value is the installed version.
 */
const LAST_VERSION = { path: "/org.openoffice.Setup/Product", name: "ooSetupLastVersion", type: "string" } as const;

/** The `<item>` lines for `settings` (default {@link PROFILE_SETTINGS}). */
export function settingsXcuItems(settings: readonly ProfileSetting[] = PROFILE_SETTINGS): string {
  return settings
    .map((s) => `<item oor:path="${s.path}"><prop oor:name="${s.name}" oor:op="fuse">` + `<value>${s.value}</value></prop></item>`)
    .join("\n");
}

const EMPTY_XCU =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n' +
  "</oor:items>\n";

/**
 * Adds `settings` (default: the security settings) to an existing
 * `registrymodifications.xcu` text, dropping any item LibreOffice wrote for
 * the same properties, and for the properties in `dropped`.
 */
export function applySettings(xcu: string, settings: readonly ProfileSetting[] = PROFILE_SETTINGS, dropped: readonly Pick<ProfileSetting, "path" | "name">[] = []): string {
  let text = xcu.includes("</oor:items>") ? xcu : EMPTY_XCU;
  for (const s of [...settings, ...dropped]) {
    const escaped = s.path.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    const item = new RegExp(`<item oor:path="${escaped}"><prop oor:name="${s.name}"[^]*?</item>\\n?`, "g");
    text = text.replace(item, "");
  }
  // The replacement table is written whole each time: an earlier release's pairs go first.
  text = text.replace(new RegExp(`<item oor:path="${FONT_PAIRS_PATH}">[^]*?</item>\\n?`, "g"), "");
  return text.replace("</oor:items>", `${settingsXcuItems(settings)}\n${fontPairsXcuItems()}\n</oor:items>`);
}

/** What the marker of a profile prepared with `options` says. */
function markerText(options: PrepareProfileOptions): string {
  return `${PROFILE_FORMAT}${options.skipRenderTests === false ? " (render tests kept)" : ""}`;
}

/** Whether `dir` holds a profile that {@link prepareProfile} of this release finished with the same options. */
export async function isPreparedProfile(dir: string, options: PrepareProfileOptions = {}): Promise<boolean> {
  return (await readFile(join(dir, READY_MARKER), "utf8").catch(() => "")) === markerText(options);
}

/**
 * The version LibreOffice calls its own (`/org.openoffice.Setup/Product/
 * ooSetupVersion` in the installation's main.xcd, "7.4" for 7.4.7), or
 * undefined when it cannot be read.
 */
export async function installedOfficeVersion(soffice = SOFFICE_BIN): Promise<string | undefined> {
  const xcd = await readFile(join(dirname(soffice), ...MAIN_XCD), "utf8").catch(() => "");
  return /<prop oor:name="ooSetupVersion">\s*<value>(\d+\.\d+)<\/value>/.exec(xcd)?.[1];
}

export interface PrepareProfileOptions {
  sofficePath?: string;
  /** Per start of LibreOffice; default 60 s. */
  timeoutMs?: number;
  /**
   * Record the installed version as seen, so that no start runs the
   * graphics render tests (see the module comment). Default true; false
   * gives the profile LibreOffice itself makes for a headless-only user,
   * which benchmarks use as the untuned baseline.
   */
  skipRenderTests?: boolean;
}

/**
 * Creates a LibreOffice profile in `dir` (which should be empty or absent)
 * by starting LibreOffice headless until it stops asking for a restart, then
 * writes the settings above and makes the folder readable by everyone
 * (sandboxes run as `nobody` and only read it). Idempotent: a folder already
 * prepared (by this release, with the same options) is left as it is; one
 * prepared by an earlier release gets the settings again.
 */
export async function prepareProfile(dir: string, options: PrepareProfileOptions = {}): Promise<void> {
  if (await isPreparedProfile(dir, options)) return;
  const soffice = options.sofficePath ?? SOFFICE_BIN;
  const timeoutMs = options.timeoutMs ?? 60_000;
  let code: number | null = RESTART_EXIT_CODE;
  let output = "";
  for (let attempt = 0; attempt < 3 && code === RESTART_EXIT_CODE; attempt++) {
    ({ code, output } = await runOnce(soffice, [
      `-env:UserInstallation=${fileUrl(dir)}`,
      "--headless",
      "--norestore",
      "--nologo",
      "--nodefault",
      "--nolockcheck",
      "--terminate_after_init",
    ], timeoutMs));
  }
  if (code !== 0) {
    throw new Error(`preparing the LibreOffice profile in ${dir} failed (exit ${String(code)}): ${output.trim()}`);
  }
  const xcuPath = join(dir, "user", "registrymodifications.xcu");
  const existing = await readFile(xcuPath, "utf8").catch(() => EMPTY_XCU);
  const version = options.skipRenderTests === false ? undefined : await installedOfficeVersion(soffice);
  const settings = version ? [...PROFILE_SETTINGS, { ...LAST_VERSION, value: version }] : PROFILE_SETTINGS;
  await writeFile(xcuPath, applySettings(existing, settings, [LAST_VERSION]));
  await makeWorldReadable(dir);
  await writeFile(join(dir, READY_MARKER), markerText(options));
}

/** `file://` URL of an absolute path, as `-env:UserInstallation` wants it. */
export function fileUrl(absolutePath: string): string {
  return `file://${absolutePath.split("/").map(encodeURIComponent).join("/")}`;
}

async function makeWorldReadable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) await chmod(path, 0o755);
    else if (entry.isFile()) await chmod(path, 0o644);
  }
}

function runOnce(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs, killSignal: "SIGKILL" });
    let output = "";
    const keep = (chunk: Buffer) => {
      if (output.length < 8192) output += chunk.toString("utf8");
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
  });
}
