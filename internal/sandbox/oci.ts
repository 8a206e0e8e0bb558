/**
 * The OCI runtime `config.json` of one runsc sandbox, generated in code.
 *
 * The shape follows what `runsc spec` (runsc 0.0~20221219, OCI 1.0) writes,
 * tightened: a read-only, almost empty root (see `rootfs.ts`) with the
 * host's `/usr` and font cache bound read-only over it, `/usr/local` masked,
 * a size-limited tmpfs on `/tmp`, the job folder as the only writable host
 * path, the Node binary, the sandbox program and the prepared LibreOffice
 * profile bound read-only; user `nobody`, no capabilities, no new
 * privileges, rlimits, and cgroup limits on memory, CPU and pids.
 */

/** Where things appear inside the sandbox. */
export const SANDBOX_PATHS = Object.freeze({
  node: "/opt/folio/node",
  program: "/opt/folio/sandbox.mjs",
  profile: "/opt/folio/profile",
  job: "/job",
  tmp: "/tmp",
});

/** uid/gid of `nobody` (Debian), the only user the sandbox's /etc/passwd knows. */
export const NOBODY = 65534;

export interface SandboxLimits {
  /** Memory limit of the sandbox (bytes), enforced through its cgroup. */
  memoryBytes: number;
  /** CPUs the sandbox may use (CFS quota / period), e.g. 1 or 1.5. */
  cpus: number;
  /** Most processes/threads at once (pids cgroup and RLIMIT_NPROC). */
  pids: number;
  /** Size of the private tmpfs on /tmp (bytes). */
  tmpfsBytes: number;
  /** RLIMIT_NOFILE. */
  openFiles: number;
}

export const DEFAULT_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  memoryBytes: 1536 * 1024 * 1024,
  cpus: 1,
  pids: 256,
  tmpfsBytes: 768 * 1024 * 1024,
  openFiles: 1024,
});

export interface OciConfigInput {
  /** The prepared root folder (host path). */
  rootfs: string;
  /** Host path of the job folder, bound writable at {@link SANDBOX_PATHS.job}. */
  jobDir: string;
  /** Host path of the Node binary. */
  nodeBinary: string;
  /** Host path of the bundled sandbox program (.mjs). */
  program: string;
  /** Host path of the prepared LibreOffice profile. */
  profileDir: string;
  limits: SandboxLimits;
  /** Extra environment of the sandbox program (e.g. TRACEPARENT). */
  env?: Record<string, string>;
  /**
   * Host files under `/usr` hidden inside the sandbox: an empty, read-only,
   * non-executable file (`emptyFile`, a host path) is bound over each.
   */
  masks?: { emptyFile: string; files: readonly string[] };
}

type Mount = { destination: string; type: string; source: string; options?: string[] };

const CFS_PERIOD_US = 100_000;

/** Builds the OCI runtime configuration (the JSON object written as config.json). */
export function buildOciConfig(input: OciConfigInput): Record<string, unknown> {
  const { limits } = input;
  const readOnlyBind = (source: string, destination: string): Mount => ({
    destination,
    type: "bind",
    source,
    options: ["rbind", "ro", "nosuid", "nodev"],
  });
  const mounts: Mount[] = [
    { destination: "/proc", type: "proc", source: "proc" },
    { destination: "/dev", type: "tmpfs", source: "tmpfs" },
    { destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "ro"] },
    readOnlyBind("/usr", "/usr"),
    // /usr/local holds whatever was installed by hand on the host (tools,
    // credentials helpers); LibreOffice and poppler need none of it.
    { destination: "/usr/local", type: "tmpfs", source: "tmpfs", options: ["ro", "nosuid", "nodev", "noexec", "size=4096"] },
    // Without the host's font cache every sandbox rebuilds it: seconds per document.
    readOnlyBind("/var/cache/fontconfig", "/var/cache/fontconfig"),
    {
      destination: SANDBOX_PATHS.tmp,
      type: "tmpfs",
      source: "tmpfs",
      options: ["nosuid", "nodev", "mode=1777", `size=${limits.tmpfsBytes}`],
    },
    readOnlyBind(input.nodeBinary, SANDBOX_PATHS.node),
    readOnlyBind(input.program, SANDBOX_PATHS.program),
    readOnlyBind(input.profileDir, SANDBOX_PATHS.profile),
    { destination: SANDBOX_PATHS.job, type: "bind", source: input.jobDir, options: ["rbind", "rw", "nosuid", "nodev"] },
  ];
  for (const file of input.masks?.files ?? []) {
    mounts.push({ destination: file, type: "bind", source: input.masks!.emptyFile, options: ["bind", "ro", "nosuid", "nodev", "noexec"] });
  }
  const env = {
    PATH: "/usr/bin:/bin",
    HOME: SANDBOX_PATHS.tmp,
    TMPDIR: SANDBOX_PATHS.tmp,
    LANG: "C.UTF-8",
    FOLIO_JOB_DIR: SANDBOX_PATHS.job,
    ...input.env,
  };
  return {
    ociVersion: "1.0.0",
    process: {
      terminal: false,
      user: { uid: NOBODY, gid: NOBODY, additionalGids: [] },
      args: [SANDBOX_PATHS.node, "--max-old-space-size=256", SANDBOX_PATHS.program, SANDBOX_PATHS.job],
      env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      cwd: SANDBOX_PATHS.tmp,
      capabilities: { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] },
      rlimits: [
        { type: "RLIMIT_NOFILE", hard: limits.openFiles, soft: limits.openFiles },
        { type: "RLIMIT_NPROC", hard: limits.pids, soft: limits.pids },
        { type: "RLIMIT_CORE", hard: 0, soft: 0 },
      ],
      noNewPrivileges: true,
    },
    root: { path: input.rootfs, readonly: true },
    hostname: "sandbox",
    mounts,
    linux: {
      namespaces: [{ type: "pid" }, { type: "network" }, { type: "ipc" }, { type: "uts" }, { type: "mount" }],
      resources: {
        memory: { limit: limits.memoryBytes },
        cpu: { quota: Math.round(limits.cpus * CFS_PERIOD_US), period: CFS_PERIOD_US },
        pids: { limit: limits.pids },
      },
      maskedPaths: ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
      readonlyPaths: ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"],
    },
  };
}
