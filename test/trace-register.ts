/**
 * Test-only tracing bootstrap for test/trace-stack.ts: the same SDK and
 * instrumentations as internal/platform/telemetry/register.ts, but spans go
 * to an in-memory exporter the stack script reads back instead of to an
 * OTLP endpoint. Loaded with `--import` before anything else.
 */
import { register } from "node:module";
import { createAddHookMessageChannel } from "import-in-the-middle";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace";
import { startTelemetry } from "../internal/platform/telemetry/sdk.ts";

const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
register("import-in-the-middle/hook.mjs", import.meta.url, registerOptions);
const exporter = new InMemorySpanExporter();
(globalThis as { folioSpanExporter?: InMemorySpanExporter }).folioSpanExporter = exporter;
startTelemetry({ env: { OTEL_SERVICE_NAME: "folio-trace-test" }, argv: process.argv, spanProcessors: [new SimpleSpanProcessor({ exporter })] });
await waitForAllMessagesAcknowledged();
