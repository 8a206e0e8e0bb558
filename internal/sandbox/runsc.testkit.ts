/**
 * Test helpers for the runsc backend's pool (pre-started and restored
 * sandboxes): what runsc still runs, waiting for the pool, and the check
 * that a test left nothing but the idle pool behind.
 */
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { RunscBackend } from "./runsc.ts";

type Idle = ReturnType<RunscBackend["idleSandboxes"]>[number];

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
