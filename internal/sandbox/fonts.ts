/**
 * The fonts office documents are laid out with: a declared set, the same on
 * every machine (docs/sandbox.md, "Fonts").
 *
 * A document names its fonts (Word: Calibri, Times New Roman, Arial,
 * Cambria…); LibreOffice lays it out with whichever installed font
 * fontconfig matches. A wider substitute means more lines and more pages,
 * each of them read and billed, and a machine with other fonts installed
 * gives other pages. So:
 *
 * - {@link FONT_SET} lists every font file a sandbox's LibreOffice may use,
 *   chosen for metric-compatible families (the same advance widths as the
 *   font the document asks for, so the same line and page breaks):
 *   Liberation for Times New Roman, Arial, Arial Narrow and Courier New,
 *   Carlito for Calibri, Caladea for Cambria, URW's P052 / Bookman / C059 /
 *   Gothic for Palatino and Book Antiqua, Bookman Old Style, Century
 *   Schoolbook and Century Gothic; DejaVu as the general fallback;
 *   OpenSymbol for bullets and symbols; Noto Sans CJK and Symbola (emoji)
 *   for coverage. Debian packages them ({@link FONT_PACKAGES}); ensure-deps
 *   and both images install them.
 * - {@link fontsConf} is the fontconfig configuration a sandbox runs with:
 *   those files and nothing else (a `<selectfont>` that rejects every font
 *   but them, so an extra font in the same folder is not seen either),
 *   fontconfig's own rules in a fixed list (no per-user or local files), and
 *   the host's font cache for speed (the cache only saves scanning; it never
 *   adds a font that the selection rejects).
 * - {@link FONT_REPLACEMENTS} is LibreOffice's replacement table (written
 *   into the prepared profile, `profile.ts`) for families that fontconfig's
 *   metric aliases do not cover: each goes to the declared family closest to
 *   it in width rather than to DejaVu Sans, the widest fallback.
 */
import { stat } from "node:fs/promises";
import { dirname } from "node:path";

/** One Debian package's share of the set. */
export interface FontSource {
  package: string;
  /** Absolute paths of the files taken from it (not necessarily all it installs). */
  files: readonly string[];
  /** What documents ask for that these files stand in for. */
  standsFor: string;
}

const files = (dir: string, names: readonly string[]) => names.map((n) => `${dir}/${n}`);
const styles = (prefix: string, suffixes: readonly string[], ext: string) => suffixes.map((s) => `${prefix}-${s}.${ext}`);
const FOUR = ["Regular", "Bold", "Italic", "BoldItalic"] as const;

/** Every font file a sandbox may use (docs/sandbox.md, "Fonts", says what each adds). */
export const FONT_SET: readonly FontSource[] = [
  {
    package: "fonts-dejavu-core",
    files: files("/usr/share/fonts/truetype/dejavu", ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf"]),
    standsFor: "Verdana and any family without a closer match (the general fallback); the test fixtures' own font",
  },
  {
    package: "fonts-liberation2",
    files: files("/usr/share/fonts/truetype/liberation2", ["Sans", "Serif", "Mono"].flatMap((f) => styles(`Liberation${f}`, FOUR, "ttf"))),
    standsFor: "Arial and Helvetica, Times New Roman and Times, Courier New and Courier (metric twins); LibreOffice's own defaults",
  },
  {
    // Only the 1.x release has the narrow family; its regular families are left to liberation2.
    package: "fonts-liberation",
    files: files("/usr/share/fonts/truetype/liberation", styles("LiberationSansNarrow", FOUR, "ttf")),
    standsFor: "Arial Narrow (metric twin)",
  },
  { package: "fonts-crosextra-carlito", files: files("/usr/share/fonts/truetype/crosextra", styles("Carlito", FOUR, "ttf")), standsFor: "Calibri (metric twin)" },
  { package: "fonts-crosextra-caladea", files: files("/usr/share/fonts/truetype/crosextra", styles("Caladea", FOUR, "ttf")), standsFor: "Cambria (metric twin)" },
  {
    package: "fonts-urw-base35",
    files: files("/usr/share/fonts/opentype/urw-base35", [
      ...styles("P052", ["Roman", "Bold", "Italic", "BoldItalic"], "otf"),
      ...styles("URWBookman", ["Light", "Demi", "LightItalic", "DemiItalic"], "otf"),
      ...styles("C059", ["Roman", "Bold", "Italic", "BdIta"], "otf"),
      ...styles("URWGothic", ["Book", "Demi", "BookOblique", "DemiOblique"], "otf"),
    ]),
    standsFor: "Palatino Linotype and Book Antiqua, Bookman Old Style, Century Schoolbook, Century Gothic (metric twins)",
  },
  { package: "fonts-opensymbol", files: ["/usr/share/fonts/truetype/libreoffice/opens___.ttf"], standsFor: "Symbol and Wingdings bullets, LibreOffice's own symbols" },
  {
    // Sans only: the serif collections would add 53 MB; serif CJK text falls back to the sans (docs/sandbox.md).
    package: "fonts-noto-cjk",
    files: files("/usr/share/fonts/opentype/noto", ["NotoSansCJK-Regular.ttc", "NotoSansCJK-Bold.ttc"]),
    standsFor: "Chinese, Japanese and Korean text (MS Mincho, SimSun, Meiryo, Malgun Gothic…: full-width glyphs, as theirs)",
  },
  // Noto Color Emoji (11 MB) is embedded by LibreOffice 7.4 but renders blank (its glyphs are colour
  // bitmaps, which neither its PDF export nor poppler draws); Symbola's outlines render (docs/sandbox.md).
  { package: "fonts-symbola", files: ["/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf"], standsFor: "emoji and other pictographs (Segoe UI Emoji, Apple Color Emoji)" },
];

/** Every file of {@link FONT_SET}. */
export const FONT_FILES: readonly string[] = FONT_SET.flatMap((s) => s.files);

/** The Debian packages that install {@link FONT_SET} (ensure-deps and both Dockerfiles install each; a test checks). */
export const FONT_PACKAGES: readonly string[] = [...new Set(FONT_SET.map((s) => s.package))];

/**
 * fontconfig's own rules (package fontconfig-config, Debian 12): the files
 * Debian enables in `/etc/fonts/conf.d`, less `50-user.conf` and
 * `51-local.conf` (a user's or an administrator's additions are exactly
 * what must not change a sandbox's pages), plus the metric aliases of the
 * URW families the set holds and Noto CJK's language preferences.
 */
export const FONTCONFIG_RULES: readonly string[] = [
  "10-scale-bitmap-fonts.conf",
  "10-yes-antialias.conf",
  "11-lcdfilter-default.conf",
  "20-unhint-small-vera.conf",
  "30-metric-aliases.conf",
  "40-nonlatin.conf",
  "45-generic.conf",
  "45-latin.conf",
  "48-spacing.conf",
  "49-sansserif.conf",
  "60-generic.conf",
  "60-latin.conf",
  "65-fonts-persian.conf",
  "65-nonlatin.conf",
  "69-unifont.conf",
  "80-delicious.conf",
  "90-synthetic.conf",
  "urw-p052.conf",
  "urw-bookman.conf",
  "urw-c059.conf",
  "urw-gothic.conf",
  "70-fonts-noto-cjk.conf",
].map((f) => `/usr/share/fontconfig/conf.avail/${f}`);

/** The host's font cache, bound read-only into runsc sandboxes (a cache only saves scanning time). */
export const FONT_CACHE_DIR = "/var/cache/fontconfig";

/**
 * LibreOffice's replacement table ("Always" replace, on screen and in
 * print) for families that are common in office documents and have no
 * metric twin in the set nor an alias in fontconfig's rules. Widths are
 * the average advance of running text relative to Arial, as published for
 * each family; the substitute is the declared family nearest in width, so
 * that a line holds about as many words as the author saw.
 */
export const FONT_REPLACEMENTS: readonly { family: string; substitute: string }[] = [
  // Calibri's light weight has Calibri's advance widths.
  { family: "Calibri Light", substitute: "Carlito" },
  // Microsoft 365's default since 2023 and the UI sans families: about Arial's width (DejaVu Sans is ~12% wider).
  { family: "Aptos", substitute: "Liberation Sans" },
  { family: "Aptos Display", substitute: "Liberation Sans" },
  { family: "Aptos Narrow", substitute: "Liberation Sans Narrow" },
  { family: "Segoe UI", substitute: "Liberation Sans" },
  { family: "Tahoma", substitute: "Liberation Sans" },
  { family: "Trebuchet MS", substitute: "Liberation Sans" },
  { family: "Microsoft Sans Serif", substitute: "Liberation Sans" },
  { family: "Helvetica Neue", substitute: "Liberation Sans" },
  // Calibri's companions of the ClearType collection.
  { family: "Corbel", substitute: "Carlito" },
  { family: "Candara", substitute: "Carlito" },
  { family: "Constantia", substitute: "Caladea" },
  // Georgia (its metric twin Gelasio is not packaged here) is wider than Times; Cambria's twin is closer.
  { family: "Georgia", substitute: "Caladea" },
  // Book Antiqua has Palatino's metrics; Century Gothic was drawn on ITC Avant Garde's.
  { family: "Book Antiqua", substitute: "P052" },
  { family: "Century Gothic", substitute: "URW Gothic" },
  // Verdana and Lucida are as wide as DejaVu Sans (both descend from wide screen designs).
  { family: "Verdana", substitute: "DejaVu Sans" },
  { family: "Lucida Sans Unicode", substitute: "DejaVu Sans" },
  { family: "Lucida Grande", substitute: "DejaVu Sans" },
];

/**
 * What a family the set does not know falls back to. fontconfig's rules
 * prefer DejaVu, about 12% wider than Arial and 25% wider than Times; the
 * families office documents name are mostly of Arial's and Times' widths
 * (Word's own fallbacks), so an unknown family gets Liberation instead.
 */
export const GENERIC_FAMILIES: Readonly<Record<"sans-serif" | "sans" | "serif" | "monospace", string>> = {
  "sans-serif": "Liberation Sans",
  // fontconfig 2.14 asks for "sans" where a pattern said "sans-serif".
  sans: "Liberation Sans",
  serif: "Liberation Serif",
  monospace: "Liberation Mono",
};

/** Text for an XML element or attribute value (the font configuration, the profile's replacement table). */
export const xmlEscape = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** The fontconfig configuration of a sandbox: the declared files, the fixed rules, the cache (see the module comment). */
export function fontsConf(): string {
  const dirs = [...new Set(FONT_FILES.map((f) => dirname(f)))].sort();
  return [
    '<?xml version="1.0"?>',
    '<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">',
    "<!-- Folio's declared font set (internal/sandbox/fonts.ts): these files and no others. -->",
    "<fontconfig>",
    ...dirs.map((d) => `  <dir>${xmlEscape(d)}</dir>`),
    `  <cachedir>${FONT_CACHE_DIR}</cachedir>`,
    "  <selectfont>",
    "    <rejectfont><glob>*</glob></rejectfont>",
    "    <acceptfont>",
    ...FONT_FILES.map((f) => `      <glob>${xmlEscape(f)}</glob>`),
    "    </acceptfont>",
    "  </selectfont>",
    ...FONTCONFIG_RULES.flatMap((r) => [
      `  <include ignore_missing="no">${xmlEscape(r)}</include>`,
      // What an unknown family falls back to (GENERIC_FAMILIES): after 49-sansserif has given every
      // pattern a generic family, before 60-latin puts DejaVu first in each.
      ...(r.endsWith("/49-sansserif.conf")
        ? Object.entries(GENERIC_FAMILIES).map(([generic, family]) => `  <alias><family>${generic}</family><prefer><family>${family}</family></prefer></alias>`)
        : []),
    ]),
    "</fontconfig>",
    "",
  ].join("\n");
}

/** Files of the set, and rules, missing on this machine (empty when the set is complete). */
export async function missingFontFiles(): Promise<string[]> {
  const all = [...FONT_FILES, ...FONTCONFIG_RULES];
  const present = await Promise.all(all.map((f) => stat(f).then((s) => s.isFile(), () => false)));
  return all.filter((_, i) => !present[i]);
}

/** Throws, naming what to install, when a file of the set or a rule is missing. */
export async function checkFontSet(): Promise<void> {
  const missing = await missingFontFiles();
  if (missing.length === 0) return;
  const packages = FONT_SET.filter((s) => s.files.some((f) => missing.includes(f))).map((s) => s.package);
  throw new Error(
    `the declared font set is incomplete (${missing.length} files missing, e.g. ${missing[0]}); ` +
      `install: apt-get install ${packages.length > 0 ? packages.join(" ") : "fontconfig-config"} (or run make deps)`,
  );
}
