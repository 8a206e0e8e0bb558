/**
 * The conversion service: checks a document against its declared format
 * and the limits, waits for a sandbox slot, runs one single-use sandbox
 * through the configured backend, checks what comes back, and prices the
 * compute time. Transport-free: `grpc.ts` serves it, `client.ts` calls it.
 */
import { CONVERSION_RATE_PER_MINUTE_USD, MINIMUM_CHARGE_USD, PLATFORM_FEE_PERCENT, conversionCostCents } from "../billing/index.ts";
import { CONVERSION_FORMATS, CONVERSION_MIME_TYPES, FORMAT_LABELS, pngSize } from "../formats/index.ts";
import { planPages, selectionOverLimit, type PageSelection } from "../formats/pages.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { Logger } from "../platform/log/index.ts";
import type { ConversionMetrics } from "../platform/metrics/index.ts";
import type { SandboxBackend } from "../sandbox/index.ts";
import type { Conversion, ConvertRequest, ConvertedPage, Estimate, PricingInfo, BackendName } from "../contracts/index.ts";
import { EstimateBook } from "./estimates.ts";
import { checkDocumentIsFormat, formatForMimeType } from "./formats.ts";
import { Slots } from "./slots.ts";
import { currentTraceparent, inSpan } from "../platform/telemetry/index.ts";

export interface ConversionLimits {
  /** Wall-clock limit of one sandbox. */
  timeoutMs: number;
  maxDocumentBytes: number;
  maxPages: number;
  maxOutputBytes: number;
  /** Sandboxes at the same time. */
  concurrency: number;
  /** Conversions waiting for a slot before new ones are refused. */
  queueLimit: number;
}

export interface ConversionServiceOptions {
  backend: SandboxBackend;
  backendName: BackendName;
  limits: ConversionLimits;
  log: Logger;
  metrics?: ConversionMetrics;
}

export class ConversionService {
  readonly estimates = new EstimateBook();
  private readonly slots: Slots;

  constructor(private readonly o: ConversionServiceOptions) {
    this.slots = new Slots(o.limits.concurrency, o.limits.queueLimit);
  }

  /** Sandboxes running and conversions waiting, for metrics and readiness. */
  load(): { running: number; waiting: number } {
    return { running: this.slots.running, waiting: this.slots.waiting };
  }

  async convert(req: ConvertRequest, signal?: AbortSignal): Promise<Conversion> {
    const { limits, metrics } = this.o;
    const format = formatForMimeType(req.mimeType);
    const started = performance.now();
    let outcome = "error";
    try {
      if (req.document.length > limits.maxDocumentBytes) {
        throw new FolioError("payload_too_large", `the document is ${req.document.length} bytes; the conversion limit is ${limits.maxDocumentBytes}`, { param: "file" });
      }
      await checkDocumentIsFormat(req.document, format);
      const asksPdf = req.output === "pdf";
      if (asksPdf && req.pages) throw new FolioError("invalid_request", "a page selection cannot be combined with output pdf (the PDF holds every page)", { param: "pages" });
      // The service's page limit bounds the pages it renders; a PDF renders none, so there the caller's limit (a durable job's) is the bound.
      const asked = req.maxPages && req.maxPages > 0 ? req.maxPages : limits.maxPages;
      const maxPages = asksPdf ? asked : Math.min(asked, limits.maxPages);
      // A selection of more pages than the limit is refused before any sandbox starts (an open one, inside it).
      const over = req.pages && selectionOverLimit(req.pages, maxPages);
      if (over) throw new FolioError("invalid_request", over, { param: "pages", extra: { max_pages: maxPages } });
      const release = await inSpan("conversion.queue", { "folio.waiting": this.slots.waiting }, () => this.slots.acquire(signal));
      metrics?.sandboxesRunning.inc({ backend: this.o.backendName });
      let result;
      try {
        result = await inSpan("sandbox.run", { "folio.backend": this.o.backendName, "folio.format": format }, async (span) => {
          // The sandbox's own steps belong to this span: it gets this span's trace context.
          const traceparent = currentTraceparent() ?? req.traceparent;
          const r = await this.o.backend.convert(
            {
              document: req.document,
              format,
              maxPages,
              ...(req.pages ? { pages: req.pages } : {}),
              ...(asksPdf ? { output: "pdf" as const } : {}),
              timeoutMs: limits.timeoutMs,
              ...(traceparent ? { traceparent } : {}),
            },
            signal,
          );
          span.setAttributes({ "folio.compute_ms": r.computeMillis, "folio.pages": r.pageCount });
          return r;
        });
      } catch (err) {
        // More pages than the limit (the sandbox counted them): the limit named, as a PDF's refusal names it.
        if (err instanceof FolioError && err.code === "invalid_request" && err.param === undefined) {
          throw new FolioError("invalid_request", err.message, { extra: { ...err.extra, max_pages: maxPages } });
        }
        throw err;
      } finally {
        metrics?.sandboxesRunning.dec({ backend: this.o.backendName });
        release();
      }
      const pdf = asksPdf ? checkPdf(result, maxPages, limits.maxOutputBytes) : undefined;
      const pages = asksPdf ? [] : checkPages(result, { maxPages, ...(req.pages ? { pages: req.pages } : {}) }, limits.maxOutputBytes);
      this.estimates.record(format, result.computeMillis);
      metrics?.computeSeconds.inc({ format, backend: this.o.backendName }, result.computeMillis / 1000);
      metrics?.pages.inc({ format }, pages.length);
      outcome = "ok";
      this.o.log.info(
        { requestId: req.requestId, format, bytes: req.document.length, pages: pages.length, ...(pdf ? { pdfBytes: pdf.length, documentPages: result.documentPageCount } : {}), computeMillis: result.computeMillis, backend: this.o.backendName },
        "document converted",
      );
      return {
        pages,
        pageCount: pages.length,
        ...(pdf ? { pdf } : {}),
        documentPageCount: result.documentPageCount,
        computeMillis: result.computeMillis,
        format,
        backend: this.o.backendName,
        providerCostCents: conversionCostCents(result.computeMillis),
      };
    } catch (err) {
      outcome = err instanceof FolioError ? err.code : "internal_error";
      if (outcome === "internal_error") this.o.log.error({ err, requestId: req.requestId, format }, "conversion failed inside the service");
      else this.o.log.info({ requestId: req.requestId, format, code: outcome, message: (err as Error).message }, "conversion refused or failed");
      throw err;
    } finally {
      metrics?.conversions.inc({ format, outcome });
      metrics?.duration.observe({ format, outcome }, (performance.now() - started) / 1000);
    }
  }

  estimate(mimeType: string): Estimate {
    return this.estimates.estimate(formatForMimeType(mimeType));
  }

  pricing(): PricingInfo {
    return {
      baseRatePerMinute: CONVERSION_RATE_PER_MINUTE_USD,
      platformFeePercentage: PLATFORM_FEE_PERCENT,
      minimumCharge: MINIMUM_CHARGE_USD,
      examples: CONVERSION_FORMATS.map((f) => ({ ...this.estimates.estimate(f), mimeType: CONVERSION_MIME_TYPES[f][0]! })),
      supportedFormats: CONVERSION_FORMATS.map((f) => FORMAT_LABELS[f]),
    };
  }
}

/** Output pdf, checked again here whatever the backend: a PDF of 1..maxPages pages within the output limit, and no page image. */
function checkPdf(result: { pages: readonly Buffer[]; pageCount: number; documentPageCount: number; pdf?: Buffer }, maxPages: number, maxOutputBytes: number): Buffer {
  const { pdf, documentPageCount } = result;
  if (!pdf || result.pages.length > 0 || result.pageCount !== 0 || !Number.isInteger(documentPageCount) || documentPageCount < 1 || documentPageCount > maxPages) {
    throw new FolioError("conversion_failed", `the sandbox returned no usable PDF (${documentPageCount} pages of at most ${maxPages}, ${result.pages.length} page images)`);
  }
  if (pdf.length > maxOutputBytes) throw new FolioError("conversion_failed", `the rendered PDF exceeds ${maxOutputBytes} bytes`);
  if (pdf.subarray(0, 5).toString("latin1") !== "%PDF-") throw new FolioError("conversion_failed", "the sandbox's PDF does not start like a PDF");
  return pdf;
}

/**
 * The pages are checked again here whatever the backend: a sandbox's output
 * is as untrusted as the document that ran in it. The sandbox returns the
 * pages it converted in document order; their numbers in the document
 * follow from its page count and the selection.
 */
function checkPages(
  result: { pages: readonly Buffer[]; pageCount: number; documentPageCount: number },
  asked: { maxPages: number; pages?: PageSelection },
  maxOutputBytes: number,
): ConvertedPage[] {
  const { pages, pageCount, documentPageCount } = result;
  const plan = planPages(documentPageCount, asked.pages, asked.maxPages);
  if (pages.length !== pageCount || pageCount < 1 || !plan.ok || plan.pages.length !== pageCount) {
    throw new FolioError(
      "conversion_failed",
      `the sandbox returned ${pages.length} pages for a page count of ${pageCount} of ${documentPageCount} (limit ${asked.maxPages})`,
    );
  }
  let total = 0;
  return pages.map((png, i) => {
    total += png.length;
    if (total > maxOutputBytes) throw new FolioError("conversion_failed", `the rendered pages exceed ${maxOutputBytes} bytes`);
    const size = pngSize(png);
    const pageNumber = plan.pages[i]!;
    if (!size) throw new FolioError("conversion_failed", `page ${pageNumber} returned by the sandbox is not a PNG image`);
    return { pageNumber, png, ...size };
  });
}
