/**
 * Run by test/trace.test.ts in a child process started with
 * `--import ./test/trace-register.ts`: starts extraction, conversion (runsc)
 * and the edge in this process (they talk gRPC over loopback, as deployed;
 * one cold sandbox for the one document, no warm pool: test/harness.ts),
 * sends one /v1/ocr request with a DOCX, and prints every finished span as
 * one JSON document on stdout. DATABASE_URL and REDIS_URL come from the test.
 */
import { readFileSync } from "node:fs";
import type { InMemorySpanExporter } from "@opentelemetry/sdk-trace";
import { startConversion } from "../internal/conversion/index.ts";
import { startEdge } from "../internal/edge/index.ts";
import { startExtraction } from "../internal/extraction/index.ts";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { conversionSchema, edgeSchema, extractionSchema, parseConfig } from "../internal/platform/config/index.ts";
import { openDatabase } from "../internal/platform/db/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";

const exporter = (globalThis as { folioSpanExporter?: InMemorySpanExporter }).folioSpanExporter;
if (!exporter) throw new Error("run with --import ./test/trace-register.ts");

const log = createLogger("silent");
const loopback = { FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: "0", FOLIO_METRICS_ENABLED: "false", LOG_LEVEL: "silent" };
const extraction = await startExtraction({ config: parseConfig(extractionSchema, loopback), log });
const conversion = await startConversion({ config: parseConfig(conversionSchema, { ...loopback, FOLIO_SANDBOX: "runsc", FOLIO_RUNSC_PRESTART: "false", FOLIO_RUNSC_RESTORE: "false" }), log });
const edge = await startEdge({
  config: parseConfig(edgeSchema, {
    DATABASE_URL: process.env.DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL,
    FOLIO_HTTP_HOST: "127.0.0.1",
    FOLIO_HTTP_PORT: "0",
    FOLIO_METRICS_ENABLED: "false",
    FOLIO_EXTRACTION_ADDRESS: extraction.grpc.address,
    FOLIO_CONVERSION_ADDRESS: conversion.grpc.address,
    LOG_LEVEL: "silent",
  }),
  log,
});
const db = await openDatabase({ databaseUrl: process.env.DATABASE_URL, poolSize: 2 });
const account = await adminCreateAccount({ db: db.db }, { email: `trace.${Date.now()}@example.test`, name: "trace test", creditsCents: 100 });
// Setup traffic is not part of the trace under test.
exporter.reset();

const docx = readFileSync(new URL("./fixtures/convert/two-pages.docx", import.meta.url));
const res = await fetch(`${edge.url}/v1/ocr`, {
  method: "POST",
  headers: { authorization: `Bearer ${account.api_key.key}`, "content-type": "application/json" },
  body: JSON.stringify({ base64: docx.toString("base64"), model: "local/tesseract" }),
});
const body = (await res.json()) as { id?: string };
await edge.close();
await conversion.close();
await extraction.close();
await db.close();

const spans = exporter.getFinishedSpans().map((s) => ({
  name: s.name,
  kind: s.kind,
  traceId: s.spanContext().traceId,
  spanId: s.spanContext().spanId,
  parentSpanId: s.parentSpanContext?.spanId,
  attributes: s.attributes,
}));
process.stdout.write(JSON.stringify({ status: res.status, requestId: body.id, key: account.api_key.key, spans }));
process.exit(0);
