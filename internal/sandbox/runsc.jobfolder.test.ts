/**
 * The size limit of a runsc sandbox's job folder, the one host folder a
 * sandbox writes (real gVisor sandboxes; root, runsc, LibreOffice,
 * poppler-utils): a tmpfs of its own on the host, the small files' size
 * while the sandbox waits for its document and resized for it at the
 * hand-in; writes past it fail; unmounted when the sandbox is removed.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT, buildSandboxProgram } from "./assets.ts";
import { JOB_FILES_BYTES } from "./jobfs.ts";
import { RunscBackend } from "./runsc.ts";
import { poolHolds } from "./runsc.testkit.ts";
import { SHARED_PROGRAM, sharingAssets } from "../../test/sandbox-assets.ts";

const work = mkdtempSync(join(tmpdir(), "folio-runsc-jobfolder-test-"));
let backend: RunscBackend | undefined;
afterAll(async () => {
  await backend?.close();
  rmSync(work, { recursive: true, force: true });
});

/** The mounts under `dir`: mount point and its filesystem's options, from mountinfo. */
function mountsUnder(dir: string): { at: string; type: string; options: string }[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const fields = line.split(" ");
      const rest = fields.slice(fields.indexOf("-") + 1);
      return { at: fields[4]!, type: rest[0]!, options: rest[2] ?? "" };
    })
    .filter((m) => m.at.startsWith(`${dir}/`));
}

/** Writes `bytes` zeros to `file`, as far as it goes; the error that stopped it, if any. */
function fill(file: string, bytes: number): string | undefined {
  const fd = openSync(file, "w");
  try {
    const chunk = Buffer.alloc(1024 * 1024);
    for (let done = 0; done < bytes; done += chunk.length) writeSync(fd, chunk);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code;
  } finally {
    closeSync(fd);
  }
}

describe("a runsc sandbox's job folder", () => {
  it("is a tmpfs of the small files' size while it waits, takes no more, is resized for the document, and is unmounted with the sandbox", async () => {
    const workDir = sharingAssets(join(work, "pool"));
    const program = await buildSandboxProgram(SHARED_PROGRAM);
    backend = new RunscBackend({ workDir, prestart: true, prestartPool: 1, program });
    await backend.prepare();
    await poolHolds(backend, 1);
    const [id] = backend.idleSandboxes().map((s) => s.id);
    const jobDir = join(workDir, "jobs", id!, "job");
    const mounted = mountsUnder(workDir);
    expect(mounted, JSON.stringify(mounted)).toEqual([{ at: jobDir, type: "tmpfs", options: expect.stringContaining(`size=${JOB_FILES_BYTES / 1024}k`) }]);

    // What a sandbox (or anyone) writes past the limit fails.
    expect(fill(join(jobDir, "filler"), JOB_FILES_BYTES + 1024 * 1024), "writing past the limit").toBe("ENOSPC");
    rmSync(join(jobDir, "filler"));

    const document = readFileSync(join(PROJECT_ROOT, "test", "fixtures", "convert", "one-page.docx"));
    const result = await backend.convert({ document, format: "DOCX", maxPages: 10, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(1);
    await backend.settled();
    await poolHolds(backend, 1);
    const [next] = backend.idleSandboxes().map((s) => s.id);
    expect(
      mountsUnder(workDir).map((m) => m.at),
      "the used sandbox's folder is unmounted; the replacement has its own",
    ).toEqual([join(workDir, "jobs", next!, "job")]);
    await backend.close();
    expect(mountsUnder(workDir), "nothing stays mounted once the pool is closed").toEqual([]);
  }, 240_000);
});
