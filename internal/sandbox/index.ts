/**
 * Sandboxes: where office documents are opened. See `interface.ts` for the
 * contract, `runsc.ts` and `unsandboxed.ts` for the backends, `converter.ts`
 * for the program that runs inside every sandbox.
 */
export type {
  ConversionFormat,
  JobResult,
  JobSpec,
  ProbeReport,
  ProbeSpec,
  SandboxBackend,
  SandboxInput,
  SandboxResult,
} from "./interface.ts";
export { RunscBackend, type RunscBackendOptions } from "./runsc.ts";
export { UnsandboxedBackend, type UnsandboxedBackendOptions } from "./unsandboxed.ts";
export { runJob } from "./converter.ts";
export { PROFILE_SETTINGS, prepareProfile } from "./profile.ts";
export { DEFAULT_LIMITS, buildOciConfig, type SandboxLimits } from "./oci.ts";
export { prepareAssets, prepareRootfs, buildSandboxProgram } from "./assets.ts";
export { FONT_PACKAGES, FONT_SET, FONT_REPLACEMENTS, fontsConf } from "./fonts.ts";
