/**
 * Two live runsc backends on one work folder (real gVisor sandboxes; root,
 * runsc, LibreOffice, poppler-utils): the second one's leftover cleanup
 * leaves the first one's sandboxes alone and the first still converts; a
 * backend that starts while the work folder's lock is held (another's
 * cleanup under way) waits for it before it registers or starts anything.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT, buildSandboxProgram } from "./assets.ts";
import { ownerTags, withWorkLock } from "./owners.ts";
import { RunscBackend } from "./runsc.ts";
import { containers, poolHolds } from "./runsc.testkit.ts";
import { SHARED_PROGRAM, sharingAssets } from "../../test/sandbox-assets.ts";

const work = mkdtempSync(join(tmpdir(), "folio-runsc-owners-test-"));
const workDir = sharingAssets(join(work, "shared"));
const backends: RunscBackend[] = [];
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  rmSync(work, { recursive: true, force: true });
});

const docx = () => readFileSync(join(PROJECT_ROOT, "test", "fixtures", "convert", "one-page.docx"));
let program: string | undefined;
async function backend(): Promise<RunscBackend> {
  // One program for all (the tree's sources may change meanwhile).
  program ??= await buildSandboxProgram(SHARED_PROGRAM);
  const b = new RunscBackend({ workDir, prestart: true, prestartPool: 1, program });
  backends.push(b);
  return b;
}

describe("two live backends on one work folder", () => {
  it("the second's leftover cleanup leaves the first's pre-started sandbox running, and the first converts in it", async () => {
    const first = await backend();
    await first.prepare();
    await poolHolds(first, 1);
    const [theirs] = first.idleSandboxes().map((s) => s.id);
    const second = await backend();
    await second.prepare();
    await poolHolds(second, 1);
    expect(containers(second), "the first's sandbox survived the second's cleanup").toContain(theirs);
    expect(first.idleSandboxes().map((s) => s.id)).toEqual([theirs]);
    const result = await first.convert({ document: docx(), format: "DOCX", maxPages: 10, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(1);
    await first.settled();
    expect(existsSync(join(workDir, "jobs", theirs!)), "its folder is removed once it was used").toBe(false);
  }, 240_000);

  it("a backend that starts while the lock is held (a cleanup under way) registers and starts nothing until it is free", async () => {
    // Both pools full again (the first refills after its conversion), so that only a new backend could start a sandbox.
    await Promise.all(backends.map((b) => poolHolds(b, 1)));
    const owners = (await ownerTags(workDir)).sort();
    const live = containers(backends[0]!);
    const late = await backend();
    let preparing: Promise<unknown> | undefined;
    await withWorkLock(workDir, async () => {
      preparing = late.prepare();
      await new Promise((r) => setTimeout(r, 2000));
      expect((await ownerTags(workDir)).sort(), "no owner file written under another's lock").toEqual(owners);
      expect(containers(late), "no sandbox started under another's lock").toEqual(live);
    });
    await preparing;
    expect(await ownerTags(workDir)).toHaveLength(owners.length + 1);
    await poolHolds(late, 1);
  }, 240_000);
});
