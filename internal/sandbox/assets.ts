/**
 * What a runsc sandbox is made of, prepared once per host and reused
 * read-only by every sandbox:
 *
 * - the root folder: almost empty. `bin`, `lib`, `lib64`, `sbin` are links
 *   into `/usr` (the host's, bound read-only by the OCI config); `etc/` holds
 *   only the fontconfig configuration of the declared font set (`fonts.ts`:
 *   not the host's, so the host's other fonts stay out of the sandbox),
 *   `ld.so.cache`, a `passwd`/`group` that know `nobody` alone, and
 *   LibreOffice's configuration; empty folders are the mount points. No
 *   host file is in it that is not copied here on purpose.
 * - the sandbox program: `cmd/sandbox/main.ts` bundled by esbuild into one
 *   `.mjs` (no node_modules inside the sandbox), run by the Node 24 binary.
 * - the prepared LibreOffice profile (`profile.ts`).
 * - an empty file bound over the host programs in {@link MASKED_PROGRAMS}.
 */
import { existsSync } from "node:fs";
import { execFile } from "node:child_process";
import { access, chmod, cp, mkdir, readFile, realpath, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { checkFontSet, fontsConf } from "./fonts.ts";
import { SANDBOX_PATHS } from "./oci.ts";
import { prepareProfile } from "./profile.ts";

const run = promisify(execFile);

/** The project's root folder (this file is internal/sandbox/assets.ts). */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** Where node_modules is: the project root, also when running compiled from dist/. */
const MODULES_ROOT = existsSync(join(PROJECT_ROOT, "node_modules")) ? PROJECT_ROOT : resolve(PROJECT_ROOT, "..");

/** Bump when the root folder's layout changes, so an old one is rebuilt. */
const ROOTFS_VERSION = "2: declared fonts";
/** Beside the root folder (not in it, where the sandbox would see it). */
const ROOTFS_MARKER_SUFFIX = ".version";

/** Host folders copied into the root folder's etc/ (configuration only, no secrets). */
const ETC_COPIES = ["libreoffice", "ld.so.cache"] as const;

/** Empty folders (or files) that mounts are placed on. */
const MOUNT_POINT_DIRS = [
  "proc",
  "dev",
  "sys",
  "usr",
  "tmp",
  "opt/folio/profile",
  "var/cache/fontconfig",
  SANDBOX_PATHS.job.slice(1),
  // LibreOffice's package links point here (/usr/lib/libreoffice/share/prereg/bundled etc.).
  "var/lib/libreoffice/share/prereg/bundled",
  "var/spool/libreoffice/uno_packages/cache",
];
const MOUNT_POINT_FILES = [SANDBOX_PATHS.node.slice(1), SANDBOX_PATHS.program.slice(1)];

/**
 * Host programs hidden inside the sandbox (an empty non-executable file is
 * bound over each that exists). LibreOffice 7.4 starts GnuPG five times per
 * conversion (gpgme probing `gpgconf --list-dirs`, `gpg --version`, …) to
 * offer document signing; a conversion needs none of it, each start is a
 * fork and exec of a dynamically linked program (slow under gVisor), and a
 * document gets one program fewer to drive.
 */
export const MASKED_PROGRAMS: readonly string[] = ["/usr/bin/gpg", "/usr/bin/gpg2", "/usr/bin/gpgconf", "/usr/bin/gpgsm", "/usr/bin/gpg-agent"];

/**
 * Creates the sandbox root folder at `dir` unless a current one is there.
 * Built beside and renamed into place, so a crash never leaves half a root.
 */
export async function prepareRootfs(dir: string): Promise<void> {
  const marker = `${dir}${ROOTFS_MARKER_SUFFIX}`;
  const current = await readFile(marker, "utf8").catch(() => "");
  // The font configuration is compared too: a release that changes the set makes the root again.
  if (current === ROOTFS_VERSION && (await readFile(join(dir, "etc", "fonts", "fonts.conf"), "utf8").catch(() => "")) === fontsConf()) return;
  const building = `${dir}.building-${process.pid}`;
  await rm(building, { recursive: true, force: true });
  await mkdir(join(building, "etc"), { recursive: true, mode: 0o755 });
  for (const link of ["bin", "lib", "lib64", "sbin"]) await symlink(`usr/${link}`, join(building, link));
  for (const name of ETC_COPIES) await cp(join("/etc", name), join(building, "etc", name), { recursive: true, verbatimSymlinks: true });
  await mkdir(join(building, "etc", "fonts"), { mode: 0o755 });
  await writeFile(join(building, "etc", "fonts", "fonts.conf"), fontsConf());
  await writeFile(join(building, "etc", "passwd"), "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  await writeFile(join(building, "etc", "group"), "nogroup:x:65534:\n");
  await writeFile(join(building, "etc", "hostname"), "sandbox\n");
  await writeFile(join(building, "etc", "hosts"), "127.0.0.1 localhost sandbox\n");
  for (const d of MOUNT_POINT_DIRS) await mkdir(join(building, d), { recursive: true, mode: 0o755 });
  await chmod(join(building, "tmp"), 0o1777);
  for (const f of MOUNT_POINT_FILES) {
    await mkdir(dirname(join(building, f)), { recursive: true });
    await writeFile(join(building, f), "");
  }
  await rm(marker, { force: true });
  await rm(dir, { recursive: true, force: true });
  await rename(building, dir);
  await writeFile(marker, ROOTFS_VERSION);
}

/**
 * Brings the host's font cache of the set's folders up to date (root only:
 * the cache folder is the system's), so that no sandbox scans fonts at its
 * start. Sandboxes see the cache read-only; a stale or missing one costs
 * them time, never another font (the configuration selects the files).
 */
async function refreshFontCache(conf: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await run("fc-cache", [], { env: { PATH: "/usr/bin:/bin", FONTCONFIG_FILE: conf } }).catch(() => undefined);
}

/** The Node binary sandboxes run: the project's Node 24 (npm package `node`), else this process's. */
export async function resolveNodeBinary(explicit?: string): Promise<string> {
  const candidates = explicit ? [explicit] : [join(MODULES_ROOT, "node_modules", "node", "bin", "node"), process.execPath];
  for (const candidate of candidates) {
    const ok = await access(candidate).then(
      () => true,
      () => false,
    );
    if (!ok) continue;
    const { stdout } = await run(candidate, ["--version"]);
    const major = Number(/^v(\d+)/.exec(stdout.trim())?.[1] ?? 0);
    if (major >= 24) return candidate;
    if (explicit) throw new Error(`${candidate} is Node ${stdout.trim()}; the sandbox program needs Node 24 or later`);
  }
  throw new Error("no Node 24 binary found for the sandbox (install the project's dependencies: npm ci)");
}

/** Beside a bundle: the files esbuild read to make it, each with its size and modification time. */
const INPUTS_SUFFIX = ".inputs.json";

interface BundleInput {
  path: string;
  size: number;
  mtimeMs: number;
}

async function statInput(path: string): Promise<BundleInput | undefined> {
  const s = await stat(path).catch(() => undefined);
  return s ? { path, size: s.size, mtimeMs: s.mtimeMs } : undefined;
}

/** Whether the bundle at `outFile` was made from exactly the files as they are now (same paths, sizes and times). */
async function bundleIsCurrent(outFile: string): Promise<boolean> {
  if (!(await stat(outFile).then((s) => s.isFile(), () => false))) return false;
  const recorded = (await readFile(`${outFile}${INPUTS_SUFFIX}`, "utf8").then(JSON.parse, () => undefined)) as BundleInput[] | undefined;
  if (!Array.isArray(recorded) || recorded.length === 0) return false;
  for (const input of recorded) {
    const now = await statInput(input.path);
    if (!now || now.size !== input.size || now.mtimeMs !== input.mtimeMs) return false;
  }
  return true;
}

/**
 * Bundles `cmd/sandbox/main.ts` into one ES module at `outFile` with the
 * project's esbuild. Returns `outFile`. A bundle made from the same files as
 * they are now (esbuild's own list of what it read, and esbuild itself) is
 * kept as it is: every backend's start and every test's work folder would
 * otherwise bundle the same program again.
 */
export async function buildSandboxProgram(outFile: string): Promise<string> {
  if (await bundleIsCurrent(outFile)) return outFile;
  // From the sources (tsx) or from the compiled tree (`make build`: dist/cmd/sandbox/main.js).
  const candidates = ["main.ts", "main.js"].map((f) => join(PROJECT_ROOT, "cmd", "sandbox", f));
  const found = await Promise.all(candidates.map((c) => stat(c).then(() => c, () => undefined)));
  const entry = found.find((c) => c !== undefined);
  if (!entry) throw new Error(`the sandbox program's source (${candidates.join(" or ")}) is missing; give a prebuilt bundle instead`);
  const esbuild = join(MODULES_ROOT, "node_modules", ".bin", "esbuild");
  await mkdir(dirname(outFile), { recursive: true });
  const building = `${outFile}.building-${process.pid}`;
  const meta = `${building}.meta.json`;
  await run(esbuild, [entry, "--bundle", "--platform=node", "--format=esm", "--target=node24", "--log-level=warning", `--outfile=${building}`, `--metafile=${meta}`], { cwd: PROJECT_ROOT });
  const { inputs } = JSON.parse(await readFile(meta, "utf8")) as { inputs: Record<string, unknown> };
  const read = await Promise.all([...Object.keys(inputs).map((p) => resolve(PROJECT_ROOT, p)), await realpath(esbuild)].map(statInput));
  await rm(meta, { force: true });
  await chmod(building, 0o644);
  await rm(`${outFile}${INPUTS_SUFFIX}`, { force: true });
  await rename(building, outFile);
  await writeFile(`${outFile}${INPUTS_SUFFIX}`, JSON.stringify(read.filter((i) => i !== undefined)));
  return outFile;
}

export interface PreparedAssets {
  rootfs: string;
  program: string;
  nodeBinary: string;
  profileDir: string;
  /** An empty read-only file (host path) bound over {@link maskedFiles}. */
  emptyFile: string;
  /** Those of {@link MASKED_PROGRAMS} that exist on this host. */
  maskedFiles: string[];
}

/**
 * Prepares everything under `dir` (root folder, program bundle, profile)
 * and resolves the Node binary. Safe to call again: finished parts are kept,
 * the program as long as the files it was bundled from are unchanged.
 */
export async function prepareAssets(folder: string, options: { nodeBinary?: string; program?: string } = {}): Promise<PreparedAssets> {
  await mkdir(folder, { recursive: true, mode: 0o711 });
  // The folder may be a link to assets another work folder prepared (the tests share one set a run):
  // the sandbox's bundle names the real paths.
  const dir = await realpath(folder);
  const rootfs = join(dir, "rootfs");
  const profileDir = join(dir, "profile");
  await checkFontSet();
  await prepareRootfs(rootfs);
  await refreshFontCache(join(rootfs, "etc", "fonts", "fonts.conf"));
  await prepareProfile(profileDir);
  const program = options.program ?? (await buildSandboxProgram(join(dir, "sandbox.mjs")));
  const nodeBinary = await resolveNodeBinary(options.nodeBinary);
  const emptyFile = join(dir, "empty");
  await writeFile(emptyFile, "", { mode: 0o444 });
  const maskedFiles: string[] = [];
  for (const file of MASKED_PROGRAMS) {
    if (await stat(file).then((s) => s.isFile(), () => false)) maskedFiles.push(file);
  }
  return { rootfs, program, nodeBinary, profileDir, emptyFile, maskedFiles };
}
