/**
 * Writes the CRDs generated from the TypeBox schemas (internal/operator/schema.ts)
 * to deploy/crds/: conversionsandboxes.folio.dev.yaml and
 * conversionsandboxpools.folio.dev.yaml.
 *
 *   npx tsx scripts/gen-crd.ts           regenerate the files
 *   npx tsx scripts/gen-crd.ts --check   exit 1 when a committed file differs
 */
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { renderCrds } from "../internal/operator/crd.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");
let stale = false;

for (const [path, wanted] of Object.entries(renderCrds())) {
  const file = join(root, path);
  if (check) {
    const committed = await readFile(file, "utf8").catch(() => "");
    if (committed !== wanted) {
      console.error(`${path} is out of date with internal/operator/schema.ts: run \`npx tsx scripts/gen-crd.ts\``);
      stale = true;
    } else {
      console.log(`${path} is up to date`);
    }
  } else {
    await writeFile(file, wanted);
    console.log(`wrote ${path}`);
  }
}
if (stale) process.exit(1);
