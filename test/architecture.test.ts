/**
 * The boundaries `make lint` keeps (eslint.config.js, docs/architecture.md),
 * checked by linting small sources placed in each folder: the forbidden
 * imports are errors naming the rule, the allowed ones pass.
 */
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint();

/** The boundary messages ESLint reports for `code` as if it were the file at `path`. */
async function boundaryErrors(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path });
  return (result?.messages ?? []).filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message);
}

describe("architecture boundaries (eslint)", () => {
  it.each([
    ["internal/edge/x.ts", 'import "../extraction/service.ts";', /extraction service only through internal\/extraction\/client.ts/],
    ["internal/edge/routes/x.ts", 'import type { Engine } from "../../extraction/types.ts";', /extraction service only through/],
    ["internal/edge/x.ts", 'import "../conversion/formats.ts";', /conversion service only through internal\/conversion\/client.ts/],
    ["internal/edge/x.ts", 'import "../sandbox/index.ts";', /reaches sandboxes only through the conversion service/],
    ["internal/usage/x.ts", 'import "../edge/index.ts";', /nothing imports the edge/],
    ["internal/billing/x.ts", 'export * from "../edge/pipeline.ts";', /nothing imports the edge/],
    ["internal/extraction/x.ts", 'import "../conversion/client.ts";', /extraction never imports conversion/],
    ["internal/sandbox/x.ts", 'import { holdCents } from "../billing/index.ts";', /sandbox never imports billing/],
    ["internal/sandbox/kubernetes/x.ts", 'import "../../edge/index.ts";', /nothing imports the edge/],
    ["internal/billing/x.ts", 'import "../conversion/index.ts";', /imports no service/],
    ["internal/formats/x.ts", 'import "../platform/errors/index.ts";', /internal\/formats imports nothing/],
    ["internal/cli/client/x.ts", 'import "../../extraction/client.ts";', /CLI client speaks the public HTTP API only/],
    ["internal/cli/client/x.ts", 'import { formatUsd } from "../../billing/index.ts";', /CLI client speaks the public HTTP API only/],
    ["internal/extraction/engines/x.ts", 'import sharp from "sharp";', /sharp is used only through internal\/platform\/decoder/],
    ["internal/edge/routes/x.ts", 'import sharp from "sharp";', /sharp is used only through internal\/platform\/decoder/],
    ["internal/documents/x.ts", 'import { type Sharp } from "sharp";', /sharp is used only through internal\/platform\/decoder/],
    ["internal/cli/run/x.ts", 'import sharp from "sharp";', /sharp is used only through internal\/platform\/decoder/],
    ["cmd/folio/x.ts", 'import sharp from "sharp";', /sharp is used only through internal\/platform\/decoder/],
    ["internal/webhooks/x.ts", 'import "../billing/index.ts";', /webhooks .* import no service and no billing/],
    ["internal/webhooks/x.ts", 'import "../edge/index.ts";', /nothing imports the edge/],
    ["internal/edge/x.ts", 'import { JobWorker } from "../jobs/worker.ts";', /import internal\/jobs through its index.ts/],
    ["internal/edge/routes/x.ts", 'export { a } from "../../platform/db/schema.ts";', /import internal\/platform\/db through its index.ts/],
    ["internal/platform/grpc/x.ts", 'import "../errors/codes.ts";', /import internal\/platform\/errors through its index.ts/],
    ["internal/cli/run/x.ts", 'import "../client/http.ts";', /import internal\/cli\/client through its index.ts/],
    ["internal/sandbox/kubernetes/x.ts", 'import "../../operator/kube.ts";', /import internal\/operator through its index.ts \(or its door types.ts\)/],
    ["internal/cli/client/x.ts", 'import "../run/index.ts";', /CLI client speaks the public HTTP API only/],
  ])("%s: %s is refused", async (path, code, why) => {
    const errors = await boundaryErrors(path, code);
    expect(errors.length, JSON.stringify(errors)).toBe(1);
    expect(errors[0]).toMatch(why);
  });

  it.each([
    ["internal/edge/x.ts", 'import "../extraction/client.ts";\nimport "../conversion/client.ts";\nimport "../contracts/index.ts";\nimport "../billing/index.ts";'],
    ["internal/conversion/x.ts", 'import "../sandbox/index.ts";\nimport "../billing/index.ts";'],
    ["internal/extraction/x.ts", 'import "../billing/index.ts";\nimport "../contracts/index.ts";'],
    ["internal/edge/x.test.ts", 'import "../extraction/service.ts";'],
    ["internal/cli/client/x.ts", 'import "../../formats/index.ts";\nimport "../../billing/format.ts";\nimport "../../contracts/strategies.ts";'],
    ["internal/cli/run/x.ts", 'import "../../edge/index.ts";\nimport "../../extraction/index.ts";'],
    ["internal/platform/decoder/x.ts", 'import sharp from "sharp";'],
    ["internal/extraction/x.test.ts", 'import sharp from "sharp";'],
    ["internal/edge/x.ts", 'import "../jobs/index.ts";\nimport "../webhooks/index.ts";\nimport "../formats/pages.ts";'],
    ["internal/extraction/engines/x.ts", 'import "../layout/grid.ts";\nimport "../client.ts";\nimport "../../platform/decoder/index.ts";'],
    ["internal/platform/grpc/x.ts", 'import "../errors/index.ts";'],
    [
      "internal/sandbox/kubernetes/x.ts",
      'import "../converter.ts";\nimport "../../operator/types.ts";\nimport "../../platform/grpc/load-options.ts";\nimport "../../gen/proto/folio/conversion/v1/JobHeader.ts";',
    ],
  ])("%s: allowed imports pass", async (path, code) => {
    expect(await boundaryErrors(path, code)).toEqual([]);
  });
});

describe("client images are decoded only in the decoder's child process", () => {
  it("no production source but internal/platform/decoder names the sharp package, also not in a dynamic import", async () => {
    const { globSync, readFileSync } = await import("node:fs");
    const offenders = globSync(["internal/**/*.ts", "cmd/**/*.ts"])
      .filter((f) => !f.endsWith(".test.ts") && !f.startsWith("internal/platform/decoder/"))
      .filter((f) => /(\bfrom|\bimport\s*\(|\brequire\s*\(|=)\s*["'`]sharp["'`]/.test(readFileSync(f, "utf8")));
    expect(offenders).toEqual([]);
  });
});
