/**
 * The runsc work folder's lock and owner files: the lock excludes another
 * holder (in this process and in another one) until the work is done, and
 * is freed when its holder's process dies; an owner file names a live
 * process only while that process lives.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { liveOwner, liveOwners, writeOwner, withWorkLock } from "./owners.ts";
import { sandboxModule, startScript } from "./runsc.testkit.ts";

const work = mkdtempSync(join(tmpdir(), "folio-owners-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("withWorkLock", () => {
  it("runs one holder at a time: the second starts only once the first is done", async () => {
    const dir = join(work, "serial");
    const events: string[] = [];
    let release: () => void = () => undefined;
    const first = withWorkLock(dir, async () => {
      events.push("first in");
      await new Promise<void>((r) => (release = r));
      events.push("first out");
    });
    while (!events.includes("first in")) await new Promise((r) => setTimeout(r, 10));
    const second = withWorkLock(dir, async () => void events.push("second in"));
    await new Promise((r) => setTimeout(r, 300));
    expect(events, "the second waits while the first holds the lock").toEqual(["first in"]);
    release();
    await Promise.all([first, second]);
    expect(events).toEqual(["first in", "first out", "second in"]);
  });

  it("is held against another process, and freed when that process is killed holding it", async () => {
    const dir = join(work, "killed");
    const child = await startScript(
      join(work, "holder.mts"),
      `import { withWorkLock } from ${sandboxModule("owners.ts")};\n` +
        `await withWorkLock(${JSON.stringify(dir)}, async () => { console.log("holding"); await new Promise(() => setInterval(() => undefined, 1000)); });\n`,
      "holding",
    );
    let got = false;
    const mine = withWorkLock(dir, async () => void (got = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(got, "not while the other process holds it").toBe(false);
    process.kill(-child.pid!, "SIGKILL");
    await mine;
    expect(got).toBe(true);
  }, 30_000);
});

describe("owner files", () => {
  it("name a live owner while its process lives, with the image it restores from; a dead process's file names none", async () => {
    const dir = join(work, "owners");
    await writeOwner(dir, "0000abcd", { image: "k1" });
    expect(await liveOwner(dir, "0000abcd")).toMatchObject({ image: "k1" });
    writeFileSync(join(dir, "owners", "0000dead"), "1:1\nimage k2\n");
    expect(await liveOwner(dir, "0000dead")).toBeUndefined();
    expect([...(await liveOwners(dir)).keys()]).toEqual(["0000abcd"]);
  });
});
