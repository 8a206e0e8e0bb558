/** Host programs hidden inside the sandbox: an empty, read-only, non-executable file bound over each. */
import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MASKED_PROGRAMS, prepareAssets } from "./assets.ts";
import { DEFAULT_LIMITS, buildOciConfig } from "./oci.ts";

type Mount = { destination: string; type: string; source: string; options?: string[] };

describe("masked host programs", () => {
  it("are bound over with the empty file, read-only and noexec, after every other mount", () => {
    const files = ["/usr/bin/gpgconf", "/usr/bin/gpg"];
    const config = buildOciConfig({
      rootfs: "/srv/rootfs",
      jobDir: "/srv/job",
      nodeBinary: "/srv/node",
      program: "/srv/sandbox.mjs",
      profileDir: "/srv/profile",
      limits: DEFAULT_LIMITS,
      masks: { emptyFile: "/srv/empty", files },
    }) as { mounts: Mount[] };
    const masks = config.mounts.slice(-files.length);
    expect(masks.map((m) => [m.source, m.destination])).toEqual(files.map((f) => ["/srv/empty", f]));
    for (const m of masks) {
      expect(m.type).toBe("bind");
      expect(m.options).toEqual(expect.arrayContaining(["ro", "noexec", "nosuid", "nodev"]));
    }
    // The /usr bind comes first, so the masks land on top of it.
    expect(config.mounts.findIndex((m) => m.destination === "/usr")).toBeLessThan(config.mounts.length - files.length);
  });

  it("are the GnuPG programs of this host that exist, over an empty file nobody may execute", async () => {
    const dir = await mkdtemp(join(tmpdir(), "folio-assets-test-"));
    try {
      // A prebuilt program: this test is about the masks, not the bundle.
      const assets = await prepareAssets(dir, { program: "/dev/null" });
      expect(assets.maskedFiles).toEqual(MASKED_PROGRAMS.filter((f) => statSync(f, { throwIfNoEntry: false })?.isFile()));
      const empty = statSync(assets.emptyFile);
      expect(empty.size).toBe(0);
      expect(empty.mode & 0o111).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
