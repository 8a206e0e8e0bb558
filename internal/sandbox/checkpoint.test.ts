/**
 * The checkpoint image's key: the same inputs give the same key, and a
 * change of what the image's processes were loaded from (the program, the
 * profile, a system file such as dpkg's status or pdftoppm, the root's
 * font configuration) gives another,
 * so an image is never restored over files it was not made with. Real
 * runsc (its version is part of the key).
 *
 * The store shared by backends on one work folder: a new image removes only
 * what no live backend needs (real owner files and the real lock; the
 * images are folders made by the test).
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SYSTEM_FILES, ensureImage, imageKey, type ImageInputs, type StoreUsers } from "./checkpoint.ts";
import { OWNERS_DIR, liveOwners, withWorkLock, writeOwner } from "./owners.ts";

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

describe("ensureImage on a store shared by backends", () => {
  const workDir = join(work, "shared");
  const store = join(workDir, "checkpoint");
  /** The store's users as a backend with `tag` sees them: the work folder's owner files, under its lock. */
  const usersOf = (tag: string): StoreUsers => ({
    builder: tag,
    locked: (w) => withWorkLock(workDir, w),
    claim: (key) => writeOwner(workDir, tag, { image: key }),
    inUse: async () => {
      const live = await liveOwners(workDir);
      return { tags: new Set(live.keys()), images: new Set([...live.values()].flatMap((o) => (o.image ? [o.image] : []))) };
    },
  });
  const image = (key: string) => {
    mkdirSync(join(store, key), { recursive: true });
    writeFileSync(join(store, key, "complete"), key);
  };
  /** An owner file of a process that is not alive (pid 1's identity with another start time). */
  const deadOwner = (tag: string, key: string) => {
    mkdirSync(join(workDir, OWNERS_DIR), { recursive: true });
    writeFileSync(join(workDir, OWNERS_DIR, tag), `1:1\nimage ${key}\n`);
  };

  it("keeps the image another live backend restores from and the folder a live backend is building; removes what only dead ones used", async () => {
    // Another live backend (this process) restores from `kept` and builds `next`.
    await withWorkLock(workDir, () => writeOwner(workDir, "0000000a", { image: "kept" }));
    image("kept");
    mkdirSync(join(store, "next.building-0000000a"), { recursive: true });
    // A dead backend's image and its half-built one.
    deadOwner("0000000d", "stale");
    image("stale");
    mkdirSync(join(store, "stale2.building-0000000d"), { recursive: true });

    let made = 0;
    const dir = await ensureImage(store, "mine", async (building) => void (made++, writeFileSync(join(building, "checkpoint.img"), "x")), usersOf("0000000b"));
    expect(dir).toBe(join(store, "mine"));
    expect(made).toBe(1);
    expect(readdirSync(store).sort(), "the live backends' image and build are kept").toEqual(["kept", "mine", "next.building-0000000a"]);
    expect(existsSync(join(store, "mine", "complete"))).toBe(true);

    // Once the other backend no longer restores from it, the next ensureImage removes it (a live builder's folder stays).
    await withWorkLock(workDir, () => writeOwner(workDir, "0000000a", {}));
    expect(await ensureImage(store, "mine", async () => void made++, usersOf("0000000b"))).toBe(dir);
    expect(made, "a complete image is not made again").toBe(1);
    expect(readdirSync(store).sort()).toEqual(["mine", "next.building-0000000a"]);
  });

  it("keeps the image another backend completed under the same key meanwhile", async () => {
    const users = usersOf("0000000c");
    await ensureImage(
      store,
      "same",
      async (building) => {
        // The other backend finished first and may already restore from its image.
        image("same");
        writeFileSync(join(store, "same", "theirs"), "");
        writeFileSync(join(building, "ours"), "");
      },
      users,
    );
    expect(readdirSync(join(store, "same")).sort()).toEqual(["complete", "theirs"]);
    expect(readdirSync(store).filter((e) => e.startsWith("same.building-"))).toEqual([]);
  });
});
