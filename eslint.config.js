// Lint configuration: typescript-eslint's recommended rules on every source
// folder, and the boundaries between Folio's parts (docs/architecture.md).
import js from "@eslint/js";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import tseslint from "typescript-eslint";

/**
 * The rooms: each folder of internal/, but each folder of internal/cli/ and
 * internal/platform/ is a room of its own; internal/gen/ is generated and no
 * room (anyone imports it, and it is not linted).
 */
const folders = (...path) => readdirSync(join(import.meta.dirname, "internal", ...path), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
const ROOMS = folders()
  .filter((f) => f !== "gen")
  .flatMap((f) => (f === "cli" || f === "platform" ? folders(f).map((g) => `${f}/${g}`) : [f]))
  .sort();

/**
 * How an import names room `to` from a file of room `from`: its path from
 * the folder they share (`../../billing/…` from `edge/routes`, `../db/…` from
 * `platform/grpc`, `../run/…` from `cli/client`). The patterns below are
 * matched against that path as written.
 */
function named(from, to) {
  const a = from.split("/");
  const b = to.split("/");
  let i = 0;
  while (i < a.length - 1 && a[i] === b[i]) i++;
  return b.slice(i).join("/");
}

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
  webhooks: [
    NOTHING_IMPORTS_THE_EDGE,
    {
      group: ["**/extraction/**", "**/conversion/**", "**/sandbox/**", "**/billing/**"],
      message: "webhooks sign and deliver job events from the database; they import no service and no billing",
    },
  ],
  formats: [{ group: ["**/*", "!node:*"], message: "internal/formats imports nothing: the sandbox program, the playground page and the CLI use it as it is" }],
  "cli/client": [
    {
      group: [
        ...["edge", "extraction", "conversion", "sandbox", "operator", "platform", "auth", "accounts", "usage", "ratelimit", "documents", "cli/run", "cli/admin"].map(
          (f) => `**/${named("cli/client", f)}/**`,
        ),
        "**/billing/*",
        "!**/billing/format.ts",
        "**/contracts/*",
        "!**/contracts/strategies.ts",
      ],
      message: "the CLI client speaks the public HTTP API only: it may use internal/formats, the strategy names and money formatting, nothing of the services",
    },
  ],
};
/** The one room that may import the edge: it starts it. Every other room not in BOUNDARIES keeps only NOTHING_IMPORTS_THE_EDGE. */
const STARTS_THE_EDGE = "cli/run";

/**
 * One room imports another only through its index.ts, its public face: what
 * a room does not export there is its own business, free to change, and a
 * reader sees at one place what the rest of Folio uses of it. Inside a room
 * (its subfolders too: extraction/engines and extraction/layout,
 * sandbox/kubernetes and sandbox) imports are free.
 *
 * The doors: the few other modules a room lets in, each for a reason
 * (docs/architecture.md "Rules the linter keeps"). A room's own BOUNDARIES entry decides
 * alone about the rooms it names (cli/client's doors billing/format.ts and
 * contracts/strategies.ts are there).
 */
const DOORS = {
  // The services' gRPC clients, for the edge and the jobs worker; index.ts starts the service.
  extraction: ["client.ts"],
  conversion: ["client.ts"],
  // internal/formats imports nothing, not even its own modules, so index.ts cannot re-export it.
  formats: ["pages.ts"],
  // The CRD's types without the Kubernetes client: the sandbox program bundles them.
  operator: ["types.ts"],
  // The proto load options, importing nothing: the sandbox program bundles them.
  "platform/grpc": ["load-options.ts"],
  // Test documents built in code, for the sandbox tests' helper (sandbox/testdocs.ts); index.ts keeps them out of production.
  documents: ["testdata.ts"],
};
// Not seen by the rule (a dynamic import): conversion/index.ts loads sandbox/kubernetes/index.ts only for the kubernetes backend.

/** The pattern groups of a room's files: its BOUNDARIES entry, then one group for each other room its entry does not name. */
function roomPatterns(room) {
  const own = BOUNDARIES[room] ?? (room === STARTS_THE_EDGE ? [] : [NOTHING_IMPORTS_THE_EDGE]);
  // A positive pattern of the entry (`**/x`, `**/x/*`, `**/x/**`, `**/*`) names room `to` when it enters its folder or one above it.
  const entered = own.flatMap((g) => g.group.filter((p) => !p.startsWith("!")).map((p) => p.replace(/^\*\*\//, "").replace(/\/\*\*?$/, "")));
  const decided = (to) => entered.some((f) => f === "*" || f === named(room, to) || named(room, to).startsWith(`${f}/`));
  const rest = ROOMS.filter((to) => to !== room && !decided(to)).map((to) => {
    const name = named(room, to);
    const doors = DOORS[to] ?? [];
    return {
      // internal/gen is no room, but its folders bear the services' names (gen/proto/folio/conversion/…).
      group: [`**/${name}/**`, `!**/${name}/index.ts`, ...doors.map((d) => `!**/${name}/${d}`), "!**/gen/**"],
      message: `import internal/${to} through its index.ts${doors.length ? ` (or its door ${doors.join(", ")})` : ""}: outside a room only its public face is imported (docs/architecture.md)`,
    };
  });
  return [...own, ...rest];
}

/**
 * sharp (libvips and the image libraries) decodes client bytes only in the
 * decoder's child process, which holds no secret (internal/platform/decoder,
 * docs/sandbox-parsers.md); the services use it on raw pixels through that module.
 * test/architecture.test.ts also looks for `import("sharp")`, which this rule does not see.
 */
const SHARP_ONLY_IN_THE_DECODER = {
  name: "sharp",
  message: "sharp is used only through internal/platform/decoder: client images are decoded in its child process, which holds no secret",
};
const DECODER = "internal/platform/decoder/**";

const boundaryConfigs = [
  { files: ["internal/**/*.ts", "cmd/**/*.ts"], ignores: ["**/*.test.ts", DECODER], rules: { "no-restricted-imports": ["error", { paths: [SHARP_ONLY_IN_THE_DECODER] }] } },
  // One block a room: no-restricted-imports takes one options object, so the room's groups are one list.
  ...ROOMS.map((room) => ({
    files: [`internal/${room}/**/*.ts`],
    ignores: ["**/*.test.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: roomPatterns(room), paths: room === "platform/decoder" ? [] : [SHARP_ONLY_IN_THE_DECODER] }] },
  })),
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
