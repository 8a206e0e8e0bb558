/**
 * Loaded with `node --import` (or `tsx --import`) before the program, so the
 * instrumentations can patch modules before anything imports them: under
 * ESM only a loader hook registered first sees those imports. Does nothing
 * unless the OTEL_* variables ask for traces (see sdk.ts).
 */
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";
import { createAddHookMessageChannel } from "import-in-the-middle";
import { startTelemetry, tracingRequested } from "./sdk.ts";

if (isMainThread && tracingRequested(process.env)) {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register("import-in-the-middle/hook.mjs", import.meta.url, registerOptions);
  startTelemetry({ env: process.env, argv: process.argv });
  await waitForAllMessagesAcknowledged();
}
