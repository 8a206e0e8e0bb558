/**
 * The README's `npx folio …`, as a new user runs it: in a copy of the
 * checkout's tracked files (what a fresh clone holds: no node_modules, no
 * dist), dependencies installed with the machine's own npm and Node (not the
 * project's Node 24), then `npx folio` with nothing of the project on PATH.
 * The launcher (bin/folio, linked by npm as node_modules/.bin/folio) must
 * start, run under the project's Node 24, and draw no engine warnings.
 *
 * `npm ci --offline`: the packages come from npm's cache, which the checkout's
 * own install filled (this machine reaches no registry during a test).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The machine's own tools only: not the checkout's node_modules/.bin (whose `node` is Node 24). */
const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";
const env = { PATH: SYSTEM_PATH, HOME: process.env.HOME ?? "/root", LANG: "C.UTF-8" };
const systemNode = spawnSync("node", ["--version"], { env, encoding: "utf8" }).stdout.trim();
const systemNpm = spawnSync("npm", ["--version"], { env, encoding: "utf8" }).stdout.trim();

let clone: string;
let install: { status: number | null; stderr: string };

beforeAll(() => {
  clone = mkdtempSync(join(tmpdir(), "folio-fresh-clone-"));
  // The tracked files as the working tree has them: a clone of this commit plus any change not committed yet.
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT }).toString().split("\0").filter((f) => f !== "" && existsSync(join(ROOT, f)));
  const tar = spawnSync("sh", ["-c", `tar -c --null -T - -f - 2>/dev/null | tar -x -C '${clone}'`], { cwd: ROOT, input: files.join("\0") });
  expect(tar.status, tar.stderr?.toString()).toBe(0);
  const r = spawnSync("npm", ["ci", "--offline", "--no-audit", "--no-fund"], { cwd: clone, env, encoding: "utf8", timeout: 240_000 });
  install = { status: r.status, stderr: r.stderr };
}, 300_000);
afterAll(() => rmSync(clone, { recursive: true, force: true }));

describe("npx folio from a fresh clone, with the machine's npm and Node", () => {
  it(`installs with npm ${systemNpm} on Node ${systemNode} and links the folio command`, () => {
    expect(install.status, install.stderr).toBe(0);
    expect(readFileSync(join(clone, "node_modules", ".bin", "folio"), "utf8")).toMatch(/^#!\/bin\/sh/);
  });

  it("starts, prints its help, and says nothing of engines", () => {
    const r = spawnSync("npx", ["folio", "--help"], { cwd: clone, env, encoding: "utf8", timeout: 120_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/^Usage: folio /m);
    expect(r.stdout).toMatch(/^\s+dev\b/m);
    expect(r.stderr, "npx printed warnings").not.toMatch(/EBADENGINE|npm warn/i);
  });

  it("runs under the project's Node 24, not the machine's", () => {
    const r = spawnSync("npx", ["folio", "--version"], { cwd: clone, env, encoding: "utf8", timeout: 120_000 });
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout.trim()).toMatch(/^folio \d+\.\d+\.\d+ \(Node v24\.\d+\.\d+\)$/);
  });

  it("works from a subfolder too, and bin/folio is the same command", () => {
    const sub = spawnSync("npx", ["folio", "--version"], { cwd: join(clone, "docs"), env, encoding: "utf8", timeout: 120_000 });
    const direct = spawnSync(join(clone, "bin", "folio"), ["--version"], { cwd: tmpdir(), env, encoding: "utf8", timeout: 120_000 });
    expect(sub.status, sub.stderr).toBe(0);
    expect(direct.status, direct.stderr).toBe(0);
    expect(sub.stdout).toBe(direct.stdout);
  });
});
