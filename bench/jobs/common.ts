/** What every part of the jobs benchmark (bench/jobs.ts) shares: where the checkout is, how to start `folio`, clocks and units. */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const FOLIO = ["--import", "tsx", join(ROOT, "cmd", "folio", "main.ts")];

const KIB_PER_MIB = 1024;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const now = () => performance.now();
export const mib = (kib: number) => kib / KIB_PER_MIB;
