/**
 * Prepares the runsc sandbox assets every sandbox test shares (test/sandbox-assets.ts)
 * once, before any file of the tier runs; where runsc cannot run (not root, not
 * installed) there is nothing to prepare and the files say why they skip.
 */
import { spawnSync } from "node:child_process";
import { prepareSharedAssets } from "./sandbox-assets.ts";

export default async function setup(): Promise<void> {
  if (process.getuid?.() !== 0 || spawnSync("runsc", ["--version"], { stdio: "ignore" }).status !== 0) return;
  await prepareSharedAssets();
}
