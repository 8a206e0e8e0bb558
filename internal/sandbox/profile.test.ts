/**
 * The prepared LibreOffice profile against the machine's LibreOffice: it
 * records the installed version as seen, so that a start does not run the
 * graphics render tests (which LibreOffice otherwise runs at every headless
 * start and logs into the profile), and a profile prepared by an earlier
 * release is prepared again, with the font replacement table once.
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FONT_REPLACEMENTS } from "./fonts.ts";
import { SOFFICE_BIN, fileUrl, installedOfficeVersion, isPreparedProfile, prepareProfile } from "./profile.ts";
import { officeGreeting } from "./testdocs.ts";
import { officePipePath } from "./warm-office.ts";

const work = mkdtempSync(join(tmpdir(), "folio-profile-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const xcu = (dir: string) => readFileSync(join(dir, "user", "registrymodifications.xcu"), "utf8");

/**
 * Starts LibreOffice headless on a copy of `profile`, waits until it
 * answers on its pipe (it has started: the render tests, when it runs
 * them, are behind it), stops it and returns the copy.
 */
async function startOnCopy(profile: string, name: string): Promise<string> {
  const copy = join(work, name);
  cpSync(profile, copy, { recursive: true });
  const child = spawn(SOFFICE_BIN, [`-env:UserInstallation=${fileUrl(copy)}`, "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck"], {
    stdio: "ignore",
    detached: true,
    env: { PATH: "/usr/bin:/bin", HOME: work, SAL_USE_VCLPLUGIN: "svp" },
  });
  try {
    const pipe = officePipePath(fileUrl(copy), process.getuid!());
    const until = Date.now() + 60_000;
    while ((await officeGreeting(pipe)) !== "InternalIPC::SendArguments") {
      if (Date.now() > until) throw new Error("LibreOffice did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    process.kill(-child.pid!, "SIGKILL");
  }
  return copy;
}

describe("prepareProfile", () => {
  it("records the installed LibreOffice version as seen, and a start then runs no graphics render tests", async () => {
    const version = await installedOfficeVersion();
    expect(version, "ooSetupVersion of the installation").toMatch(/^\d+\.\d+$/);
    const profile = join(work, "prepared");
    await prepareProfile(profile);
    expect(xcu(profile)).toContain(`<prop oor:name="ooSetupLastVersion" oor:op="fuse"><value>${version}</value></prop>`);
    const started = await startOnCopy(profile, "prepared-started");
    expect(existsSync(join(started, "user", "GraphicsRenderTests.log")), "LibreOffice logs its render tests here when it runs them").toBe(false);
  }, 120_000);

  it("keeps LibreOffice's own behaviour with skipRenderTests false: every headless start runs the render tests", async () => {
    const profile = join(work, "untuned");
    await prepareProfile(profile, { skipRenderTests: false });
    expect(xcu(profile)).not.toContain("ooSetupLastVersion");
    expect(await isPreparedProfile(profile, { skipRenderTests: false })).toBe(true);
    expect(await isPreparedProfile(profile), "not the profile the sandboxes use").toBe(false);
    const started = await startOnCopy(profile, "untuned-started");
    expect(existsSync(join(started, "user", "GraphicsRenderTests.log"))).toBe(true);
  }, 120_000);

  it("prepares again a profile an earlier release prepared (its marker says otherwise), keeping one item per setting", async () => {
    const profile = join(work, "earlier");
    await prepareProfile(profile);
    writeFileSync(join(profile, ".folio-profile-ready"), "2026-01-01T00:00:00.000Z");
    const withoutVersion = xcu(profile).replace(/<item oor:path="\/org\.openoffice\.Setup\/Product">.*?<\/item>\n?/, "");
    writeFileSync(join(profile, "user", "registrymodifications.xcu"), withoutVersion);
    expect(await isPreparedProfile(profile)).toBe(false);
    await prepareProfile(profile);
    expect(await isPreparedProfile(profile)).toBe(true);
    expect(xcu(profile).match(/ooSetupLastVersion/g)).toHaveLength(1);
    expect(xcu(profile).match(/DisableMacrosExecution/g)).toHaveLength(1);
    // The replacement table is there once, whole: one pair per family of fonts.ts, none twice.
    expect(xcu(profile).match(/<node oor:name="_\d+" oor:op="replace"><prop oor:name="ReplaceFont"/g)).toHaveLength(FONT_REPLACEMENTS.length);
    for (const { family, substitute } of FONT_REPLACEMENTS) {
      expect(xcu(profile)).toContain(`<prop oor:name="ReplaceFont" oor:op="fuse"><value>${family}</value></prop><prop oor:name="SubstituteFont" oor:op="fuse"><value>${substitute}</value></prop>`);
    }
  }, 120_000);
});
