/**
 * The edge's client of the conversion service: typed calls with deadlines,
 * returning domain types and FolioErrors. Convert collects the streamed
 * pages; the stream must end with exactly one summary that agrees with them.
 */
import { parseDecimal } from "../billing/index.ts";
import type { ConversionServiceClient } from "../gen/proto/folio/conversion/v1/ConversionService.ts";
import type { ConvertReply__Output } from "../gen/proto/folio/conversion/v1/ConvertReply.ts";
import type { EstimateRequest } from "../gen/proto/folio/conversion/v1/EstimateRequest.ts";
import type { EstimateResponse__Output } from "../gen/proto/folio/conversion/v1/EstimateResponse.ts";
import type { PricingRequest } from "../gen/proto/folio/conversion/v1/PricingRequest.ts";
import type { PricingResponse__Output } from "../gen/proto/folio/conversion/v1/PricingResponse.ts";
import { FolioError } from "../platform/errors/index.ts";
import { callUnary, fromGrpcError, grpc, serviceClient, type ServiceClientOptions } from "../platform/grpc/index.ts";
import { conversionProto } from "./grpc.ts";
import type { BackendName, Conversion, ConvertRequest, ConvertedPage, Estimate, PricingInfo } from "../contracts/index.ts";
import type { ConversionFormat } from "../formats/index.ts";
import { formatPages, isSelected } from "../formats/pages.ts";

export interface ConversionClientOptions extends ServiceClientOptions {
  /** Deadline of Estimate and Pricing. */
  infoDeadlineMs: number;
  /** Deadline of one Convert (queue wait and the sandbox's time limit included). */
  convertDeadlineMs: number;
}

/** The conversion format a declared MIME type names, or `unsupported_format`: callers refuse a wrong type before any call. */
export { formatForMimeType } from "./formats.ts";

const WHAT = "the conversion service";

export class ConversionClient {
  private readonly client: ConversionServiceClient;

  constructor(address: string, private readonly opts: ConversionClientOptions) {
    this.client = serviceClient(conversionProto().folio.conversion.v1.ConversionService, address, opts);
  }

  convert(req: ConvertRequest, signal?: AbortSignal): Promise<Conversion> {
    return new Promise((resolve, reject) => {
      const metadata = new grpc.Metadata();
      if (req.traceparent) metadata.set("traceparent", req.traceparent);
      const call = this.client.Convert(
        {
          document: req.document,
          mime_type: req.mimeType,
          filename: req.filename ?? "",
          max_pages: req.maxPages ?? 0,
          request_id: req.requestId ?? "",
          pages: req.pages ? formatPages(req.pages) : "",
          output: req.output ?? "",
        },
        metadata,
        { deadline: Date.now() + this.opts.convertDeadlineMs },
      );
      const pages: ConvertedPage[] = [];
      const pdf: Buffer[] = [];
      let summary: ConvertReply__Output["summary"];
      let failed = false;
      const fail = (err: FolioError) => {
        if (failed) return;
        failed = true;
        call.cancel();
        reject(err);
      };
      const cancel = () => call.cancel();
      signal?.addEventListener("abort", cancel, { once: true });
      call.on("data", (reply: ConvertReply__Output) => {
        if (reply.page) {
          // Every page, numbered 1, 2, …; or the selected ones, ascending, each with its number in the document.
          const n = reply.page.page_number;
          const inOrder = req.pages ? n > (pages.at(-1)?.pageNumber ?? 0) && isSelected(req.pages, n) : n === pages.length + 1;
          if (summary || !inOrder) {
            fail(new FolioError("internal_error", `${WHAT} sent page ${reply.page.page_number} out of order`));
            return;
          }
          pages.push({ pageNumber: reply.page.page_number, png: reply.page.png, width: reply.page.width, height: reply.page.height });
        } else if (reply.pdf_chunk) {
          if (summary || req.output !== "pdf") {
            fail(new FolioError("internal_error", `${WHAT} sent a PDF where none was asked for`));
            return;
          }
          pdf.push(reply.pdf_chunk);
        } else if (reply.summary) {
          summary = reply.summary;
        }
      });
      call.on("error", (err: grpc.ServiceError) => {
        signal?.removeEventListener("abort", cancel);
        if (!failed) {
          failed = true;
          reject(err.code === grpc.status.DEADLINE_EXCEEDED && !err.metadata?.get("folio-error-code").length
            ? new FolioError("timeout", `the conversion did not finish within ${Math.round(this.opts.convertDeadlineMs / 1000)} s`, { cause: err })
            : fromGrpcError(err, WHAT));
        }
      });
      call.on("end", () => {
        signal?.removeEventListener("abort", cancel);
        if (failed) return;
        const cost = summary ? parseDecimal(summary.provider_cost_cents) : undefined;
        if (req.output === "pdf") {
          // A service older than output pdf ignores it and sends pages: that is no answer to this request.
          const whole = Buffer.concat(pdf);
          if (!summary || !cost || pages.length > 0 || summary.page_count !== 0 || summary.document_page_count < 1 || whole.length === 0) {
            failed = true;
            reject(new FolioError("internal_error", `${WHAT} did not answer with a PDF (${pages.length} pages, ${whole.length} PDF bytes received)`));
            return;
          }
          resolve({
            pages: [],
            pageCount: 0,
            pdf: whole,
            documentPageCount: summary.document_page_count,
            computeMillis: summary.compute_millis,
            format: summary.format as ConversionFormat,
            backend: summary.backend as BackendName,
            providerCostCents: cost,
          });
          return;
        }
        // A conversion service older than document_page_count sends 0: the pages converted are then all that is known.
        const documentPageCount = summary?.document_page_count || pages.length;
        if (!summary || summary.page_count !== pages.length || documentPageCount < pages.length || !cost) {
          failed = true;
          reject(new FolioError("internal_error", `${WHAT} ended the stream without a consistent summary (${pages.length} pages received)`));
          return;
        }
        resolve({
          pages,
          pageCount: pages.length,
          documentPageCount,
          computeMillis: summary.compute_millis,
          format: summary.format as ConversionFormat,
          backend: summary.backend as BackendName,
          providerCostCents: cost,
        });
      });
    });
  }

  async estimate(mimeType: string): Promise<Estimate> {
    const r = await callUnary<EstimateRequest, EstimateResponse__Output>(this.client, this.client.Estimate, { mime_type: mimeType }, { deadlineMs: this.opts.infoDeadlineMs, what: WHAT });
    return { format: r.format as ConversionFormat, costCents: r.estimated_cost_cents, seconds: r.estimated_time_seconds, basis: r.basis as Estimate["basis"], samples: r.samples };
  }

  async pricing(): Promise<PricingInfo> {
    const r = await callUnary<PricingRequest, PricingResponse__Output>(this.client, this.client.Pricing, {}, { deadlineMs: this.opts.infoDeadlineMs, what: WHAT });
    return {
      baseRatePerMinute: r.base_rate_per_minute,
      platformFeePercentage: r.platform_fee_percentage,
      minimumCharge: r.minimum_charge,
      examples: r.examples.map((e) => ({
        format: e.format as ConversionFormat,
        mimeType: e.mime_type,
        costCents: e.estimated_cost_cents,
        seconds: e.estimated_time_seconds,
        basis: "default" as const,
        samples: 0,
      })),
      supportedFormats: r.supported_formats,
    };
  }

  close(): void {
    this.client.close();
  }
}

