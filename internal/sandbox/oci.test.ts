/** The generated OCI config: only the intended host paths, no privileges, limits set. */
import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS, NOBODY, SANDBOX_PATHS, buildOciConfig } from "./oci.ts";
import { applySettings, PROFILE_SETTINGS } from "./profile.ts";

const config = buildOciConfig({
  rootfs: "/srv/folio/rootfs",
  jobDir: "/srv/folio/jobs/x/job",
  nodeBinary: "/srv/node",
  program: "/srv/sandbox.mjs",
  profileDir: "/srv/profile",
  limits: DEFAULT_LIMITS,
}) as {
  process: { user: { uid: number; gid: number }; capabilities: Record<string, string[]>; noNewPrivileges: boolean; rlimits: { type: string }[] };
  root: { path: string; readonly: boolean };
  mounts: { destination: string; type: string; source: string; options?: string[] }[];
  linux: { namespaces: { type: string }[]; resources: { memory: { limit: number }; cpu: { quota: number; period: number }; pids: { limit: number } } };
};

describe("buildOciConfig", () => {
  it("binds exactly /usr, the font cache, node, the program, the profile (read-only) and the job folder (writable)", () => {
    const binds = config.mounts.filter((m) => m.type === "bind").map((m) => [m.source, m.destination, m.options?.includes("ro") ? "ro" : "rw"]);
    expect(binds).toEqual([
      ["/usr", "/usr", "ro"],
      ["/var/cache/fontconfig", "/var/cache/fontconfig", "ro"],
      ["/srv/node", SANDBOX_PATHS.node, "ro"],
      ["/srv/sandbox.mjs", SANDBOX_PATHS.program, "ro"],
      ["/srv/profile", SANDBOX_PATHS.profile, "ro"],
      ["/srv/folio/jobs/x/job", "/job", "rw"],
    ]);
    expect(config.root).toEqual({ path: "/srv/folio/rootfs", readonly: true });
    const tmp = config.mounts.find((m) => m.destination === "/tmp");
    expect(tmp?.type).toBe("tmpfs");
    expect(tmp?.options).toContain(`size=${DEFAULT_LIMITS.tmpfsBytes}`);
    expect(config.mounts.find((m) => m.destination === "/usr/local")?.type).toBe("tmpfs");
  });

  it("runs as nobody with no capabilities, no new privileges, rlimits and cgroup limits, in its own network namespace", () => {
    expect(config.process.user).toMatchObject({ uid: NOBODY, gid: NOBODY });
    expect(Object.values(config.process.capabilities).every((list) => list.length === 0)).toBe(true);
    expect(config.process.noNewPrivileges).toBe(true);
    expect(config.process.rlimits.map((r) => r.type)).toEqual(expect.arrayContaining(["RLIMIT_NOFILE", "RLIMIT_NPROC"]));
    expect(config.linux.namespaces.map((n) => n.type)).toContain("network");
    expect(config.linux.resources).toEqual({
      memory: { limit: DEFAULT_LIMITS.memoryBytes },
      cpu: { quota: 100_000, period: 100_000 },
      pids: { limit: DEFAULT_LIMITS.pids },
    });
  });
});

describe("profile settings", () => {
  it("replace what LibreOffice wrote for the same properties and keep the rest", () => {
    const written =
      '<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry">\n' +
      '<item oor:path="/org.openoffice.Setup/Office"><prop oor:name="ooSetupInstCompleted" oor:op="fuse"><value>true</value></prop></item>\n' +
      '<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>0</value></prop></item>\n' +
      "</oor:items>\n";
    const text = applySettings(written);
    expect(text).toContain("ooSetupInstCompleted");
    expect(text.match(/MacroSecurityLevel/g)).toHaveLength(1);
    for (const s of PROFILE_SETTINGS) expect(text).toContain(`<item oor:path="${s.path}"><prop oor:name="${s.name}"`);
    expect(text).toMatch(/MacroSecurityLevel" oor:op="fuse"><value>3</);
    expect(text).not.toMatch(/MacroSecurityLevel" oor:op="fuse"><value>0</);
  });
});
