/**
 * What a client reads when the runsc backend fails: no host path and none
 * of runsc's output in the message; both stay in the error's cause (logged).
 * A work folder that cannot be made, a runsc that cannot be started and a
 * runsc that fails saying where (a stand-in script; prepare needs
 * LibreOffice for the profile, no real runsc).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { buildSandboxProgram } from "./assets.ts";
import { RunscBackend, type RunscBackendOptions } from "./runsc.ts";
import { SHARED_PROGRAM, sharingAssets } from "../../test/sandbox-assets.ts";

const work = mkdtempSync(join(tmpdir(), "folio-runsc-errors-test-"));
let program: string;
beforeAll(async () => {
  program = await buildSandboxProgram(SHARED_PROGRAM);
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

const input = () => ({ document: Buffer.from("hello\n"), format: "TXT" as const, maxPages: 1, timeoutMs: 30_000 });

async function failure(p: Promise<unknown>): Promise<FolioError> {
  const err = await p.then(
    (v) => v,
    (e: unknown) => e,
  );
  expect(err, `expected a failure, got ${JSON.stringify(err)}`).toBeInstanceOf(FolioError);
  return err as FolioError;
}

/** The message names nothing of the host: no path under the test's folder, no runsc output. */
function expectNoHostDetail(err: FolioError, ...details: string[]): void {
  for (const detail of [work, ...details]) expect(err.message, `"${err.message}" names ${detail}`).not.toContain(detail);
}

/** The message of the error and its causes, as the log shows them. */
function causes(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) parts.push(String(e.message));
  return parts.join(" <- ");
}

describe("a runsc backend's failures as a client sees them", () => {
  it("a work folder that cannot be made: internal_error naming no path; the path in the cause", async () => {
    const file = join(work, "a-file");
    writeFileSync(file, "");
    const b = new RunscBackend({ workDir: join(file, "work"), program });
    const err = await failure(b.prepare());
    expect(err.code).toBe("internal_error");
    expectNoHostDetail(err);
    expect(causes(err)).toContain(file);
  });

  it("a runsc that cannot be started: internal_error naming neither the binary nor the work folder", async () => {
    const missing = join(work, "bin", "no-such-runsc");
    const b = new RunscBackend({ workDir: sharingAssets(join(work, "missing")), runsc: missing, program });
    const err = await failure(b.convert(input()));
    expect(err.code).toBe("internal_error");
    expectNoHostDetail(err, missing);
    expect(causes(err)).toContain(missing);
  }, 120_000);

  it("a runsc that fails saying host paths on stderr: the message has its exit status, not its words", async () => {
    const said = "cannot open /var/lib/secret-host-path/config: permission denied";
    const runsc = join(work, "failing-runsc");
    writeFileSync(runsc, `#!/bin/sh\necho '${said}' >&2\nexit 1\n`);
    chmodSync(runsc, 0o755);
    const options: RunscBackendOptions = { workDir: sharingAssets(join(work, "failing")), runsc, program };
    const err = await failure(new RunscBackend(options).convert(input()));
    expect(err.code).toBe("internal_error");
    expect(err.message).toMatch(/exit 1/);
    expectNoHostDetail(err, said, "/var/lib/secret-host-path");
    expect(causes(err)).toContain(said);
  }, 120_000);
});
