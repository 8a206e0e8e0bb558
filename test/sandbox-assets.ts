/**
 * One set of runsc sandbox assets a test run (the root folder, the sandbox
 * program's bundle, the prepared LibreOffice profile): the default work
 * folder's, prepared once by the sandbox tiers' global setup
 * (test/global-setup.sandbox.ts) instead of by each of some thirty files
 * in a work folder of its own. Free of vitest, so the global setup can load it.
 */
import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { prepareAssets } from "../internal/sandbox/assets.ts";
import { defaultWorkDir } from "../internal/sandbox/runsc.ts";

export const SHARED_ASSETS = join(defaultWorkDir(), "assets");

/** Prepares {@link SHARED_ASSETS}; seconds when they are current (nothing is made again). */
export async function prepareSharedAssets(): Promise<void> {
  mkdirSync(defaultWorkDir(), { recursive: true, mode: 0o700 });
  await prepareAssets(SHARED_ASSETS);
}

/**
 * Makes `workDir` (when missing) with `assets` a link to {@link SHARED_ASSETS}
 * and returns it: a backend on it keeps its own job folders, runsc state and
 * checkpoint image, and prepares no assets; removing it leaves the link's target.
 */
export function sharingAssets(workDir: string): string {
  mkdirSync(workDir, { recursive: true, mode: 0o700 });
  symlinkSync(SHARED_ASSETS, join(workDir, "assets"));
  return workDir;
}

/** The shared assets' program bundle (current once {@link prepareSharedAssets} ran). */
export const SHARED_PROGRAM = join(SHARED_ASSETS, "sandbox.mjs");
