/**
 * What a client reads when poppler fails in a way the document does not
 * explain: the tool and its exit status or signal, never its command line
 * (our temporary paths) or its stderr, which stay in the error's cause
 * (logged). A stand-in `pdftoppm` first on PATH plays the failing tool.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { folioFailure } from "../../test/support.ts";
import { deadline, tool } from "./poppler.ts";

const bin = mkdtempSync(join(tmpdir(), "folio-poppler-test-"));
const said = "Internal Error: cannot map /var/lib/secret-host-path/fonts";
const path = process.env.PATH;
beforeAll(() => {
  writeFileSync(join(bin, "pdftoppm"), `#!/bin/sh\n[ "$1" = crash ] && { echo '${said}' >&2; kill -SEGV $$; }\necho '${said}' >&2\nexit 99\n`);
  chmodSync(join(bin, "pdftoppm"), 0o755);
  // The tool is found on PATH (poppler.ts names no directory); the stand-in goes first for this file only.
  process.env.PATH = `${bin}:${path}`;
});
afterAll(() => {
  process.env.PATH = path;
  rmSync(bin, { recursive: true, force: true });
});

/** The message of the error and its causes, as the log shows them. */
function causes(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) parts.push(String(e.message));
  return parts.join(" <- ");
}

describe("poppler failures as a client sees them", () => {
  const document = join(bin, "document.pdf");

  it("a tool killed by a signal: internal_error naming the signal, not the command line or stderr", async () => {
    const d = deadline(10_000, undefined);
    const err = await folioFailure(tool("pdftoppm", ["crash", document], { read: [document] }, d));
    d.dispose();
    expect(err.code).toBe("internal_error");
    expect(err.message).toBe("pdftoppm failed (SIGSEGV)");
    expect(causes(err), "the log has what the tool said").toContain(said);
  });

  it("a tool that exits with an unexpected status: internal_error naming the status only", async () => {
    const d = deadline(10_000, undefined);
    const err = await folioFailure(tool("pdftoppm", [document], { read: [document] }, d));
    d.dispose();
    expect(err.code).toBe("internal_error");
    expect(err.message).toBe("pdftoppm failed (exit 99)");
    expect(err.message).not.toContain(bin);
    expect(causes(err)).toContain(document);
  });
});
