/**
 * The checkpoint image's key: the same inputs give the same key, and a
 * change of what the image's processes were loaded from (the program, the
 * profile, a system file such as dpkg's status or pdftoppm, the root's
 * font configuration) gives another,
 * so an image is never restored over files it was not made with. Real
 * runsc (its version is part of the key).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SYSTEM_FILES, imageKey, type ImageInputs } from "./checkpoint.ts";

const work = mkdtempSync(join(tmpdir(), "folio-checkpoint-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function inputs(): ImageInputs {
  const profileDir = join(work, "profile");
  mkdirSync(join(profileDir, "user"), { recursive: true });
  writeFileSync(join(profileDir, "user", "registrymodifications.xcu"), "<items/>");
  writeFileSync(join(work, "sandbox.mjs"), "console.log('program');");
  writeFileSync(join(work, "status"), "Package: poppler-utils\nVersion: 22.02.0-2\n");
  return {
    runsc: "runsc",
    runscFlags: ["--platform=ptrace"],
    config: { process: { args: ["node"] } },
    programFile: join(work, "sandbox.mjs"),
    nodeBinary: process.execPath,
    profileDir,
    systemFiles: [join(work, "status")],
  };
}

describe("imageKey", () => {
  it("is the same for the same inputs, and another when the program, the profile or a system file changes", async () => {
    const base = inputs();
    const key = await imageKey(base);
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect(await imageKey({ ...base })).toBe(key);

    expect(await imageKey({ ...base, prestart: { handIn: "signal", warmUp: true } }), "how the checkpointed sandbox waits and warms up").not.toBe(key);

    writeFileSync(base.programFile, "console.log('another program');");
    const program = await imageKey(base);
    expect(program).not.toBe(key);

    writeFileSync(join(base.profileDir, "user", "registrymodifications.xcu"), "<items><item/></items>");
    const profile = await imageKey(base);
    expect(profile).not.toBe(program);

    // A package upgraded: dpkg rewrites its status file.
    writeFileSync(join(work, "status"), "Package: poppler-utils\nVersion: 22.02.0-2+deb12u1\n");
    expect(await imageKey(base)).not.toBe(profile);
    expect(await imageKey({ ...base, systemFiles: [join(work, "no-such-file")] })).not.toBe(profile);
  });

  it("is another when the root folder's font configuration changes (another font set)", async () => {
    const root = join(work, "rootfs");
    mkdirSync(join(root, "etc", "fonts"), { recursive: true });
    writeFileSync(join(root, "etc", "fonts", "fonts.conf"), "<fontconfig><dir>/usr/share/fonts/a</dir></fontconfig>");
    const base = { ...inputs(), config: { root: { path: root, readonly: true } } };
    const key = await imageKey(base);
    expect(await imageKey(base)).toBe(key);
    writeFileSync(join(root, "etc", "fonts", "fonts.conf"), "<fontconfig><dir>/usr/share/fonts/b</dir></fontconfig>");
    expect(await imageKey(base)).not.toBe(key);
  });

  it("counts pdftoppm and dpkg's status among the system files by default", () => {
    expect(SYSTEM_FILES).toEqual(expect.arrayContaining(["/usr/bin/pdftoppm", "/var/lib/dpkg/status"]));
  });
});
