/**
 * A hostile program in a real runsc sandbox (root, runsc, LibreOffice for
 * the prepared profile): what a document that took over LibreOffice could
 * write into the job folder is read by the host as hostile (jobdir.ts). The
 * program here stands in for the sandbox program: it writes a symbolic link
 * to a host file as a page, or a page over the bound, or fills the job
 * folder, and claims success (or says what stopped it); the host refuses, reads nothing it did not
 * mean to, and names no host path.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { RunscBackend } from "./runsc.ts";
import { sharingAssets } from "../../test/sandbox-assets.ts";

const work = mkdtempSync(join(tmpdir(), "folio-runsc-hostile-test-"));
const backends: RunscBackend[] = [];
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  rmSync(work, { recursive: true, force: true });
});

/** A host file a planted link would read if the host followed it. */
const secret = join(work, "host-secret");
writeFileSync(secret, "host secret: never in an answer\n", { mode: 0o644 });

/** A sandbox program (an ES module run by the sandbox's node) that runs `body`, then claims one page converted, or says what stopped it. */
function hostileProgram(name: string, body: string): string {
  const file = join(work, `${name}.mjs`);
  writeFileSync(
    file,
    [
      `import { closeSync, openSync, renameSync, rmSync, symlinkSync, writeFileSync, writeSync } from "node:fs";`,
      `const out = "/job/output";`,
      `let said = "";`,
      `try { ${body} } catch (err) { said = String(err.code ?? err.message); }`,
      // A full folder has no room for the result: what filled it goes first.
      `rmSync(out + "/filler", { force: true });`,
      `writeFileSync(out + "/result.tmp", JSON.stringify(said ? { ok: false, pageCount: 0, error: { code: "conversion_failed", message: said } } : { ok: true, pageCount: 1 }));`,
      `renameSync(out + "/result.tmp", out + "/result.json");`,
      // Used only by the names above: keeps the imports used whatever the body.
      `void closeSync; void openSync; void symlinkSync; void writeSync;`,
    ].join("\n"),
  );
  return file;
}

async function convertWith(program: string, maxOutputBytes?: number): Promise<unknown> {
  const backend = new RunscBackend({ workDir: sharingAssets(join(work, `work-${backends.length}`)), program, ...(maxOutputBytes ? { maxOutputBytes } : {}) });
  backends.push(backend);
  return backend.convert({ document: Buffer.from("hello\n"), format: "TXT", maxPages: 5, timeoutMs: 60_000 }).then(
    (v) => v,
    (e: unknown) => e,
  );
}

function expectRefused(got: unknown, message: RegExp): void {
  expect(got, `expected a refusal, got ${JSON.stringify(got)}`).toBeInstanceOf(FolioError);
  const err = got as FolioError;
  expect(err.code).toBe("conversion_failed");
  expect(err.message).toMatch(message);
  expect(err.message, "names no host path").not.toContain(work);
  expect(err.message).not.toContain("host secret");
}

describe("a runsc sandbox whose program turned hostile", () => {
  it("a symbolic link to a host file written as a page is refused, and the host file is never read", async () => {
    const got = await convertWith(hostileProgram("link", `symlinkSync(${JSON.stringify(secret)}, out + "/page-1.png");`));
    expectRefused(got, /page 1 is not a regular file/);
  }, 180_000);

  it("a symbolic link written as result.json is refused", async () => {
    const program = join(work, "link-result.mjs");
    writeFileSync(program, `import { symlinkSync } from "node:fs";\nsymlinkSync(${JSON.stringify(secret)}, "/job/output/result.json");\n`);
    expectRefused(await convertWith(program), /result\.json is not a regular file/);
  }, 180_000);

  it("a page over the output bound is refused without being read whole", async () => {
    const bound = 1024 * 1024;
    const got = await convertWith(hostileProgram("big", `writeFileSync(out + "/page-1.png", Buffer.alloc(${2 * bound}, 1));`), bound);
    expectRefused(got, new RegExp(`exceed ${bound} bytes`));
  }, 180_000);

  it("cannot write past its job folder's size: the write fails inside (ENOSPC) and the host disk is untouched", async () => {
    const bound = 1024 * 1024;
    // The job folder holds the document, `bound` and 64 MiB for the small files: 128 MiB cannot fit.
    const body = `const fd = openSync(out + "/filler", "w"); const chunk = Buffer.alloc(1024 * 1024); try { for (let i = 0; i < 128; i++) writeSync(fd, chunk); } finally { closeSync(fd); }`;
    const got = await convertWith(hostileProgram("fill", body), bound);
    // The program reports what stopped its writing as its result's error.
    expect(got, `expected the program's failure, got ${JSON.stringify(got)}`).toBeInstanceOf(FolioError);
    expect((got as FolioError).message).toBe("ENOSPC");
  }, 180_000);
});
