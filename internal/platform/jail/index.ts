/**
 * The jail of a child process that parses client bytes (pdfinfo, pdftoppm, tesseract;
 * docs/adr/0006-parser-jail-bubblewrap.md): with `FOLIO_PARSER_JAIL=bwrap`
 * the tool runs under bubblewrap in namespaces of its own — no network (a
 * network namespace with only a loopback of its own), its own process and
 * IPC namespaces, a read-only view of `/usr` and the few files of `/etc` the
 * tools read (no `/root`, `/home`, `/var/run/secrets`, `/work`, `/proc` of
 * the host), a private empty `/tmp`, only the paths the call names bound in
 * — and under `prlimit` limits of address space, file size, processes, CPU
 * seconds and no core files. `none` runs the tool as it is (the environment
 * is allow-listed either way: platform/childenv).
 *
 * The mode is the process's, chosen once at start from its configuration
 * (`useParserJail`, called by cmd wiring in internal/cli/run): like PATH it
 * is a property of the machine the service runs on, and the PDF renderer is
 * reached from many call sites that have no configuration of their own.
 */
import { execFile } from "node:child_process";
import { lstatSync, readlinkSync } from "node:fs";

export type ParserJailMode = "none" | "bwrap";
/** What FOLIO_PARSER_JAIL asks for: a mode, or `auto` (bwrap where it can run, else none, said in the log: {@link startParserJail}). */
export type ParserJailSetting = ParserJailMode | "auto";

/**
 * Per jailed process. From measurements on the fixtures (docs/adr/0006):
 * pdftoppm of the ten-page PDF at 200 DPI peaks at 18 MB resident; a page
 * at the 40 MP pixel budget is at most 120 MB as RGB PNG (PGM: 40 MB).
 * The address-space limit leaves room for the shared libraries' mappings
 * (about 150 MB) and poppler's caches; the deadline of each call bounds
 * wall time, the CPU limit only a runaway that the deadline would also end.
 */
export const JAIL_LIMITS = Object.freeze({
  /** RLIMIT_AS: 2 GiB of address space. */
  addressSpaceBytes: 2 * 1024 ** 3,
  /** RLIMIT_FSIZE: no file written larger than 256 MiB (a 40 MP RGB page is 120 MB). */
  fileBytes: 256 * 1024 ** 2,
  /** RLIMIT_NPROC: the tools do not fork; 64 leaves room for their threads. Not enforced for root (the kernel exempts uid 0). */
  processes: 64,
  /** RLIMIT_CPU: FOLIO_PDF_TIMEOUT_SECONDS' maximum. */
  cpuSeconds: 600,
});

/** What a jailed tool may see of the host's files besides the system: paths it reads, folders it writes; and limits other than {@link JAIL_LIMITS}. */
export interface JailAccess {
  read?: readonly string[];
  write?: readonly string[];
  /**
   * A long-lived jailed program (the image decoder child) has its own: a CPU
   * limit counts a process's whole life, and Node reserves more address space
   * than a tool. `null`: unlimited.
   */
  limits?: { addressSpaceBytes?: number | null; cpuSeconds?: number | null };
}

let mode: ParserJailMode = "none";

/** Sets the process's jail for parser children (see the module comment); call once at start. */
export function useParserJail(m: ParserJailMode): void {
  mode = m;
}

export function parserJail(): ParserJailMode {
  return mode;
}

/** Files of /etc the tools read: the dynamic linker's cache and fontconfig's configuration. */
const ETC_FILES = ["/etc/ld.so.cache", "/etc/fonts", "/etc/localtime"];
/** Folders besides /usr: fontconfig's cache (read-only). */
const OTHER_SYSTEM = ["/var/cache/fontconfig"];

let systemView: string[] | undefined;
/** The read-only system the jail sees: /usr, the top-level links into it (merged /usr) or the folders themselves. */
function systemArgs(): string[] {
  if (systemView) return systemView;
  const args = ["--ro-bind", "/usr", "/usr"];
  for (const top of ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]) {
    const st = lstatOrUndefined(top);
    if (st?.isSymbolicLink()) args.push("--symlink", readlinkSync(top), top);
    else if (st?.isDirectory()) args.push("--ro-bind", top, top);
  }
  for (const path of [...ETC_FILES, ...OTHER_SYSTEM]) args.push("--ro-bind-try", path, path);
  systemView = args;
  return args;
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The command line that runs `command args` in the process's jail, and the
 * environment changes the jail needs (HOME and TMPDIR inside it). With
 * `none`: the command as given. `detached`: the jailed tree is a process
 * group of its own, to be signalled as one (pausing it), see
 * {@link signalJailed}.
 */
export function jailed(command: string, args: readonly string[], access: JailAccess = {}, m: ParserJailMode = mode): { command: string; args: string[]; env: Record<string, string>; detached: boolean } {
  if (m === "none") return { command, args: [...args], env: {}, detached: false };
  const bwrap = [
    // Every namespace bwrap knows (user, ipc, pid, net, uts, cgroup): the network one has no interface but its own loopback.
    "--unshare-all",
    // Killing bwrap (a deadline, an abort) kills the tool.
    "--die-with-parent",
    ...systemArgs(),
    "--proc", "/proc",
    "--dev", "/dev",
    "--tmpfs", "/tmp",
    // Folders written first, files read over them (a document inside the folder stays read-only).
    ...(access.write ?? []).flatMap((p) => ["--bind", p, p]),
    ...(access.read ?? []).flatMap((p) => ["--ro-bind", p, p]),
    "--chdir", "/",
    "--",
    "prlimit",
    `--as=${limit(access.limits?.addressSpaceBytes, JAIL_LIMITS.addressSpaceBytes)}`,
    `--fsize=${JAIL_LIMITS.fileBytes}`,
    `--nproc=${JAIL_LIMITS.processes}`,
    `--cpu=${limit(access.limits?.cpuSeconds, JAIL_LIMITS.cpuSeconds)}`,
    "--core=0",
    "--",
    command,
    ...args,
  ];
  // The parent's HOME (say /root) is not in the jail; a tool that looks for a cache there gets the private /tmp.
  // setsid(1) makes bwrap a process group (and session, without a terminal) of its own, so that the jailed tree can be
  // paused as one (child_process.execFile has no `detached`); not a group leader, it execs bwrap without forking.
  return { command: "setsid", args: ["bwrap", ...bwrap], env: { HOME: "/tmp", TMPDIR: "/tmp" }, detached: true };
}

/** prlimit's value: the call's own limit (null: unlimited), else the default. */
function limit(own: number | null | undefined, otherwise: number): string {
  return own === null ? "unlimited" : String(own ?? otherwise);
}

/**
 * Sends `signal` to a tool started with {@link jailed}: to its whole process
 * group when jailed (bwrap, its init and the tool), else to the process.
 */
export function signalJailed(child: { pid?: number | undefined; kill(signal: NodeJS.Signals): boolean }, detached: boolean, signal: NodeJS.Signals): boolean {
  if (!detached || child.pid === undefined) return child.kill(signal);
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves once no process of a jailed tool's group (`pid`: the group's
 * leader, started with {@link jailed}) is left, or after `timeoutMs`. Killing
 * bwrap ends the tool through `--die-with-parent`, a moment later: whoever
 * removes the tool's folder next must not race its last write.
 */
export async function jailGone(pid: number, timeoutMs = 2_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      process.kill(-pid, 0);
    } catch {
      return; // ESRCH: the group is empty
    }
    if (Date.now() > end) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Checks at start that the jail works here (bubblewrap installed, user
 * namespaces allowed); rejects naming FOLIO_PARSER_JAIL and what failed.
 */
/**
 * Chooses the process's jail from its setting at start and uses it: `bwrap`
 * must run here (else the start stops, {@link checkParserJail}); `auto`
 * takes bwrap when it runs and otherwise `none`, calling `warn` with why
 * (a machine without bubblewrap, a container whose seccomp profile refuses
 * namespaces, a gVisor sandbox). Resolves with the mode in use.
 */
export async function startParserJail(setting: ParserJailSetting, warn: (message: string) => void, check: (m: ParserJailMode) => Promise<void> = checkParserJail): Promise<ParserJailMode> {
  let m: ParserJailMode = setting === "auto" ? "bwrap" : setting;
  try {
    if (m !== "none") await check(m);
  } catch (err) {
    if (setting !== "auto") throw err;
    m = "none";
    warn(`FOLIO_PARSER_JAIL=auto: the parsers of client bytes run without a jail (no network namespace, the service's view of the files; still no secret in their environment): ${(err as Error).message.replace(/^configuration: FOLIO_PARSER_JAIL=bwrap: /, "").replace(/; install bubblewrap.*$/s, "")}; set FOLIO_PARSER_JAIL=bwrap to require the jail`);
  }
  useParserJail(m);
  return m;
}

export function checkParserJail(m: ParserJailMode): Promise<void> {
  if (m === "none") return Promise.resolve();
  const { command, args, env } = jailed("true", [], {}, m);
  return new Promise((resolve, reject) => {
    execFile(command, args, { env: { PATH: "/usr/bin:/bin", ...env }, timeout: 10_000, encoding: "utf8" }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      const said = (stderr || err.message).trim().split("\n")[0];
      reject(new Error(`configuration: FOLIO_PARSER_JAIL=${m}: bubblewrap cannot run a jail here (${said}); install bubblewrap and allow user namespaces, or set FOLIO_PARSER_JAIL=none`));
    });
  });
}
