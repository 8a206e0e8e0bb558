/**
 * Writes the ConversionSandbox CRD generated from the TypeBox schemas
 * (internal/operator/schema.ts) to deploy/crds/conversionsandboxes.folio.dev.yaml.
 *
 *   npx tsx scripts/gen-crd.ts           regenerate the file
 *   npx tsx scripts/gen-crd.ts --check   exit 1 when the committed file differs
 */
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CRD_PATH, renderCrdYaml } from "../internal/operator/crd.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const file = join(root, CRD_PATH);
const wanted = renderCrdYaml();

if (process.argv.includes("--check")) {
  const committed = await readFile(file, "utf8").catch(() => "");
  if (committed !== wanted) {
    console.error(`${CRD_PATH} is out of date with internal/operator/schema.ts: run \`npx tsx scripts/gen-crd.ts\``);
    process.exit(1);
  }
  console.log(`${CRD_PATH} is up to date`);
} else {
  await writeFile(file, wanted);
  console.log(`wrote ${CRD_PATH}`);
}
