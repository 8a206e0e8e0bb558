// Lint configuration: typescript-eslint's recommended rules on every source
// folder, and the boundaries between Folio's parts (docs/architecture.md).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/**
 * Which folders of internal/ may not import which others. Each entry is a
 * gitignore-style group matched against the import path as written (a
 * relative path names the folder it enters, e.g. `../../extraction/…`); a
 * `!` pattern re-allows the one module that is the way in.
 *
 * Production code only: tests beside the code may reach into what they
 * arrange (a test fixture, an admin helper).
 */
const NOTHING_IMPORTS_THE_EDGE = {
  group: ["**/edge", "**/edge/**"],
  message: "nothing imports the edge: it is a process of its own (started by internal/cli and cmd/)",
};
const BOUNDARIES = {
  edge: [
    {
      group: ["**/extraction/**", "!**/extraction/client.ts"],
      message: "the edge uses the extraction service only through internal/extraction/client.ts and the shared types of internal/contracts",
    },
    {
      group: ["**/conversion/**", "!**/conversion/client.ts"],
      message: "the edge uses the conversion service only through internal/conversion/client.ts and the shared types of internal/contracts",
    },
    { group: ["**/sandbox/**", "**/operator/**", "**/cli/**"], message: "the edge reaches sandboxes only through the conversion service" },
  ],
  extraction: [NOTHING_IMPORTS_THE_EDGE, { group: ["**/conversion/**", "**/sandbox/**"], message: "extraction never imports conversion: the edge converts documents before extraction sees pages" }],
  sandbox: [
    NOTHING_IMPORTS_THE_EDGE,
    { group: ["**/billing/**"], message: "the sandbox never imports billing: the conversion service prices what a sandbox measured" },
  ],
  conversion: [NOTHING_IMPORTS_THE_EDGE, { group: ["**/extraction/**"], message: "conversion never imports extraction" }],
  jobs: [
    NOTHING_IMPORTS_THE_EDGE,
    {
      group: ["**/extraction/**", "!**/extraction/client.ts", "**/conversion/**", "!**/conversion/client.ts", "**/sandbox/**"],
      message: "jobs reach extraction and conversion only through their service clients, like the edge (DESIGN.md)",
    },
  ],
  billing: [
    NOTHING_IMPORTS_THE_EDGE,
    { group: ["**/extraction/**", "**/conversion/**", "**/sandbox/**"], message: "billing prices work from numbers it is given; it imports no service" },
  ],
  formats: [{ group: ["**/*", "!node:*"], message: "internal/formats imports nothing: the sandbox program, the playground page and the CLI use it as it is" }],
  "cli/client": [
    {
      group: [
        ...["edge", "extraction", "conversion", "sandbox", "operator", "platform", "auth", "accounts", "usage", "ratelimit", "documents", "cli/run", "cli/admin"].map((f) => `**/${f}/**`),
        "**/billing/*",
        "!**/billing/format.ts",
        "**/contracts/*",
        "!**/contracts/strategies.ts",
      ],
      message: "the CLI client speaks the public HTTP API only: it may use internal/formats, the strategy names and money formatting, nothing of the services",
    },
  ],
  "cli/admin": [NOTHING_IMPORTS_THE_EDGE],
};
const OTHER_FOLDERS = ["accounts", "auth", "contracts", "documents", "operator", "platform", "ratelimit", "usage"];

/**
 * sharp (libvips and the image libraries) decodes client bytes only in the
 * decoder's child process, which holds no secret (internal/platform/decoder,
 * docs/sandbox.md); the services use it on raw pixels through that module.
 * test/architecture.test.ts also looks for `import("sharp")`, which this rule does not see.
 */
const SHARP_ONLY_IN_THE_DECODER = {
  name: "sharp",
  message: "sharp is used only through internal/platform/decoder: client images are decoded in its child process, which holds no secret",
};
const DECODER = "internal/platform/decoder/**";

const boundaryConfigs = [
  { files: ["internal/**/*.ts", "cmd/**/*.ts"], ignores: ["**/*.test.ts", DECODER], rules: { "no-restricted-imports": ["error", { paths: [SHARP_ONLY_IN_THE_DECODER] }] } },
  ...[
    ...Object.entries(BOUNDARIES).map(([folder, patterns]) => ({ folder, patterns })),
    ...OTHER_FOLDERS.map((folder) => ({ folder, patterns: [NOTHING_IMPORTS_THE_EDGE] })),
  ].map(({ folder, patterns }) => ({
    files: [`internal/${folder}/**/*.ts`],
    ignores: ["**/*.test.ts", DECODER],
    rules: { "no-restricted-imports": ["error", { patterns, paths: [SHARP_ONLY_IN_THE_DECODER] }] },
  })),
  { files: [DECODER], ignores: ["**/*.test.ts"], rules: { "no-restricted-imports": ["error", { patterns: [NOTHING_IMPORTS_THE_EDGE] }] } },
];

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", ".folio/", ".tools/", "web/dist/", "internal/gen/", "test-artifacts/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": "off",
    },
  },
  ...boundaryConfigs,
);
