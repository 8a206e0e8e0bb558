/**
 * The conversion service over gRPC (the edge's side): Convert streams one
 * page per message (or the PDF in 1 MiB parts) and then a summary, so a 100-page deck never sits in one
 * message; Estimate and Pricing are unary. Errors cross with the one mapping
 * in platform/grpc/errors.ts.
 */
import { once } from "node:events";
import type { ProtoGrpcType } from "../gen/proto/conversion.ts";
import type { ConversionServiceHandlers } from "../gen/proto/folio/conversion/v1/ConversionService.ts";
import type { ConvertReply } from "../gen/proto/folio/conversion/v1/ConvertReply.ts";
import type { ConvertRequest__Output } from "../gen/proto/folio/conversion/v1/ConvertRequest.ts";
import { parsePages, type PageSelection } from "../formats/pages.ts";
import { FolioError } from "../platform/errors/index.ts";
import { failStream, grpc, loadProto, unary, withCallSignal } from "../platform/grpc/index.ts";
import type { ConversionService } from "./service.ts";

export const CONVERSION_SERVICE_NAME = "folio.conversion.v1.ConversionService";
/** PDF bytes per message (output pdf): a large PDF streams under flow control, never in one message. */
export const PDF_CHUNK_BYTES = 1024 * 1024;

export function conversionProto(): ProtoGrpcType {
  return loadProto<ProtoGrpcType>("folio/conversion/v1/conversion.proto");
}

export interface ConversionGrpcHooks {
  onError?: (err: unknown, method: string) => void;
}

/** Registers the service on `server`; returns the names for the health service. */
export function registerConversion(server: grpc.Server, svc: ConversionService, hooks: ConversionGrpcHooks = {}): string[] {
  const handlers: ConversionServiceHandlers = {
    Convert: (call: grpc.ServerWritableStream<ConvertRequest__Output, ConvertReply>) => {
      void streamConversion(svc, call).catch((err: unknown) => failStream(call as grpc.ServerWritableStream<unknown, unknown>, err, "Convert", hooks.onError));
    },
    Estimate: unary(
      async (req) => {
        const e = svc.estimate(req.mime_type);
        return { format: e.format, estimated_cost_cents: e.costCents, estimated_time_seconds: e.seconds, basis: e.basis, samples: e.samples };
      },
      hooks.onError,
      "Estimate",
    ),
    Pricing: unary(
      async () => {
        const p = svc.pricing();
        return {
          base_rate_per_minute: p.baseRatePerMinute,
          platform_fee_percentage: p.platformFeePercentage,
          minimum_charge: p.minimumCharge,
          examples: p.examples.map((e) => ({ format: e.format, mime_type: e.mimeType, estimated_cost_cents: e.costCents, estimated_time_seconds: e.seconds })),
          supported_formats: p.supportedFormats,
        };
      },
      hooks.onError,
      "Pricing",
    ),
  };
  server.addService(conversionProto().folio.conversion.v1.ConversionService.service, handlers);
  return [CONVERSION_SERVICE_NAME];
}

async function streamConversion(svc: ConversionService, call: grpc.ServerWritableStream<ConvertRequest__Output, ConvertReply>): Promise<void> {
  const req = call.request;
  const traceparent = call.metadata.get("traceparent")[0];
  const result = await withCallSignal(call, (signal) => svc.convert(
    {
      document: req.document,
      mimeType: req.mime_type,
      filename: req.filename,
      maxPages: req.max_pages,
      ...(req.pages ? { pages: selectionOf(req.pages) } : {}),
      ...(req.output ? { output: outputOf(req.output) } : {}),
      requestId: req.request_id,
      ...(typeof traceparent === "string" ? { traceparent } : {}),
    },
    signal,
  ));
  for (const page of result.pages) {
    if (call.cancelled) return;
    // Respect flow control: a slow edge must not make this process buffer every page at once.
    if (!call.write({ page: { page_number: page.pageNumber, png: page.png, width: page.width, height: page.height } })) await Promise.race([once(call, "drain"), once(call, "cancelled")]);
  }
  for (let at = 0; result.pdf && at < result.pdf.length; at += PDF_CHUNK_BYTES) {
    if (call.cancelled) return;
    if (!call.write({ pdf_chunk: result.pdf.subarray(at, at + PDF_CHUNK_BYTES) })) await Promise.race([once(call, "drain"), once(call, "cancelled")]);
  }
  call.write({
    summary: {
      page_count: result.pageCount,
      document_page_count: result.documentPageCount,
      compute_millis: result.computeMillis,
      format: result.format,
      backend: result.backend,
      provider_cost_cents: result.providerCostCents.toFixed(),
    },
  });
  call.end();
}

/** The request's `output`: pages or pdf. */
function outputOf(text: string): "pages" | "pdf" {
  if (text !== "pages" && text !== "pdf") throw new FolioError("invalid_request", `unknown output '${text.slice(0, 40)}': pages or pdf`, { param: "output" });
  return text;
}

/** The request's `pages` text, read with the edge's rules (a caller other than the edge may send anything). */
function selectionOf(text: string): PageSelection {
  const parsed = parsePages(text);
  if (!parsed.ok) throw new FolioError("invalid_request", parsed.problem, { param: "pages" });
  return parsed.selection;
}
