/**
 * Test helpers for the runsc backend and its work folder: a backend for a
 * test file on a work folder of its own; for its pool (pre-started and
 * restored sandboxes), what runsc still runs, waiting for the pool, and the
 * check that a test left nothing but the idle pool behind; and a script
 * run as a process of its own, to be killed holding the work folder's lock
 * or its sandboxes.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { sharingAssets } from "../../test/sandbox-assets.ts";
import { PROJECT_ROOT } from "./assets.ts";
import { RunscBackend } from "./runsc.ts";

type Idle = ReturnType<RunscBackend["idleSandboxes"]>[number];

/**
 * A backend with the default options for the calling test file, on a work
 * folder of its own (`folio-runsc-<name>-…`, sharing the run's assets:
 * test/sandbox-assets.ts): prepared before the file's tests; after them its
 * finished sandboxes are removed (their job folders are mounts, jobfs.ts)
 * and then the folder. `work` is the folder, for the test's own files.
 */
export function backendForTests(name: string): { backend: RunscBackend; work: string } {
  const work = mkdtempSync(join(tmpdir(), `folio-runsc-${name}-`));
  const backend = new RunscBackend({ workDir: sharingAssets(join(work, "backend")) });
  beforeAll(async () => {
    await backend.prepare();
  }, 120_000);
  afterAll(async () => {
    // Job folders are mounts (jobfs.ts), unmounted when their sandbox's removal, after its answer, is done.
    await backend.settled();
    rmSync(work, { recursive: true, force: true });
  });
  return { backend, work };
}

/** The backend's live containers, by id, sorted. */
export function containers(b: RunscBackend): string[] {
  return execFileSync("runsc", [`--root=${b.stateDir}`, "list", "-quiet"], { encoding: "utf8" }).split("\n").filter(Boolean).sort();
}

/** Waits until the pool holds `size` idle sandboxes that are all `fit` (default: LibreOffice listens). */
export async function poolHolds(b: RunscBackend, size: number, fit: (s: Idle) => boolean = (s) => s.ready): Promise<void> {
  const until = Date.now() + 60_000;
  while (!(b.idleSandboxes().length === size && b.idleSandboxes().every(fit))) {
    if (Date.now() > until) throw new Error(`pool not ready: ${JSON.stringify(b.idleSandboxes())}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Only the idle pool is left: its sandboxes are the only live ones and the only job folders. */
export async function onlyThePoolIsLeft(b: RunscBackend, size: number, fit?: (s: Idle) => boolean): Promise<void> {
  await b.settled();
  await poolHolds(b, size, fit);
  const idle = b.idleSandboxes().map((s) => s.id).sort();
  expect(containers(b)).toEqual(idle);
  expect(readdirSync(join(b.workDir, "jobs")).sort()).toEqual(idle);
}

/** A module of internal/sandbox as a script imports it: its absolute path, quoted. */
export function sandboxModule(file: string): string {
  return JSON.stringify(join(PROJECT_ROOT, "internal", "sandbox", file));
}

/**
 * Writes `source` to `script` and runs it with tsx in a process group of
 * its own (tsx runs the script in a child process: `process.kill(-pid)`
 * ends both, as a killed service dies); resolves once it prints `line`,
 * rejects when it exits first.
 */
export async function startScript(script: string, source: string, line: string): Promise<ChildProcess> {
  writeFileSync(script, source);
  const child = spawn(join(PROJECT_ROOT, "node_modules", ".bin", "tsx"), [script], { stdio: ["ignore", "pipe", "inherit"], detached: true });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => chunk.toString().includes(line) && resolve());
    child.once("exit", (code) => reject(new Error(`${basename(script)} exited (${code}) before it printed "${line}"`)));
  });
  return child;
}
