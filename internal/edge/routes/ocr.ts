/**
 * POST /v1/ocr: one image or document by URL or base64 → text, pages, tables,
 * usage and cost (the spec's OCR result).
 */
import { Type } from "typebox";
import { centsToNumber, chargeComponent } from "../../billing/index.ts";
import { estimateCostCents } from "../../extraction/cost.ts";
import type { ExtractOptions, Table } from "../../extraction/types.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { StringEnum, errorResponses } from "../schemas.ts";
import { conversionHoldCents, countPages, loadDocument, mapLimit, pageImages } from "../document-input.ts";
import { runPaid } from "../paid.ts";
import { extractionOf } from "./models.shared.ts";

export const STRATEGIES = ["quality", "accuracy", "speed", "cost", "balanced"] as const;

export const OcrOptions = Type.Object(
  {
    extract_tables: Type.Optional(Type.Boolean({ description: "Ask the model for table data (result.tables)." })),
    language: Type.Optional(Type.String({ pattern: "^[A-Za-z_]{2,16}$", description: "Language hint, ISO 639-1 (e.g. en, de)." })),
    output_format: Type.Optional(StringEnum(["text", "json", "markdown"])),
  },
  { additionalProperties: false },
);

const Body = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: "Publicly accessible document URL (http or https)." })),
    base64: Type.Optional(Type.String({ minLength: 1, description: "Base64 document data without a data-URL prefix." })),
    mime_type: Type.Optional(Type.String({ maxLength: 200, description: "Input MIME type; a hint, the bytes decide." })),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: "A catalog model id or folio/<strategy>; wins over strategy." })),
    strategy: Type.Optional(Type.String({ maxLength: 50, description: "quality, accuracy, speed, cost or balanced (default)." })),
    provider_preferences: Type.Optional(Type.Object({ strategy: Type.Optional(Type.String({ maxLength: 50 })) }, { additionalProperties: false })),
    options: Type.Optional(OcrOptions),
  },
  { additionalProperties: false },
);

const OcrResult = Type.Object({
  id: Type.String(),
  object: Type.Literal("ocr.result"),
  created: Type.Integer(),
  model: Type.String(),
  result: Type.Object({
    text: Type.String(),
    pages: Type.Array(Type.Object({ page_number: Type.Integer(), text: Type.String(), confidence: Type.Optional(Type.Number()) })),
    tables: Type.Array(Type.Object({ page_number: Type.Integer(), rows: Type.Array(Type.Array(Type.String())), markdown: Type.String() })),
    confidence: Type.Optional(Type.Number()),
  }),
  usage: Type.Object({
    pages_processed: Type.Integer(),
    prompt_tokens: Type.Integer(),
    completion_tokens: Type.Integer(),
    tokens_used: Type.Integer(),
    provider_cost_cents: Type.Number(),
    platform_fee_cents: Type.Number(),
    total_cost_cents: Type.Number(),
    processing_time_ms: Type.Integer(),
  }),
});

export function ocrOptions(o: { extract_tables?: boolean; language?: string; output_format?: "text" | "json" | "markdown" } | undefined): ExtractOptions {
  return { extractTables: o?.extract_tables ?? false, outputFormat: o?.output_format ?? "text", ...(o?.language ? { language: o.language } : {}) };
}

/** `strategy` and `provider_preferences.strategy` are the same value in two places; both given and different is a 400. */
export function strategyOf(body: { strategy?: string; provider_preferences?: { strategy?: string } }): { strategy?: string; param: string } {
  const a = body.strategy;
  const b = body.provider_preferences?.strategy;
  if (a !== undefined && b !== undefined && a !== b) {
    throw new FolioError("invalid_request", "'strategy' and 'provider_preferences.strategy' disagree; send one", { param: "provider_preferences.strategy" });
  }
  return a !== undefined ? { strategy: a, param: "strategy" } : { strategy: b, param: "provider_preferences.strategy" };
}

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    "/v1/ocr",
    {
      config: { permissions: ["ocr:write"] },
      schema: {
        summary: "Extract text (and tables) from one image or document",
        description:
          "Exactly one of url or base64. Images are one page; PDFs are rasterized at 200 DPI; office documents are converted when a conversion service is configured. Billed: provider cost + 5%, rounded up to whole cents, at least 1 cent.",
        tags: ["OCR"],
        security: [{ bearer: [] }],
        body: Body,
        response: { 200: OcrResult, ...errorResponses, 402: Type.Ref("Error"), 500: Type.Ref("Error"), 502: Type.Ref("Error"), 503: Type.Ref("Error") },
      },
    },
    async (req) => {
      const principal = principalOf(req);
      const body = req.body;
      const extraction = extractionOf(deps);
      const { strategy, param } = strategyOf(body);
      const resolved = await extraction.resolveModel({ model: body.model, strategy, strategyParam: param });
      const options = ocrOptions(body.options);
      const doc = await loadDocument(deps, { url: body.url, base64: body.base64, mimeType: body.mime_type });
      const pageCount = await countPages(deps, doc);
      const modelHold = (pages: number) => chargeComponent(estimateCostCents(resolved.model, pages, resolved.maxCompletionTokens)).chargedCents;
      // An office document's pages are known once it is converted: hold for the
      // conversion and one page, then grow the hold before extraction starts.
      const conversionHold = pageCount === null ? conversionHoldCents(deps) : 0;
      const estimate = modelHold(pageCount ?? 1) + conversionHold;

      const outcome = await runPaid(deps.billing, principal, { endpoint: "/v1/ocr", model: resolved.model.id, estimateCents: estimate }, async ({ meter, requestId, raiseHold }) => {
        const abort = new AbortController();
        try {
          const pages = await pageImages(deps, doc, abort.signal, { meter, requestId });
          if (pageCount === null) await raiseHold(modelHold(pages.length) + conversionHold);
          return await mapLimit(pages, deps.documents.pageConcurrency, async (page) => {
            const r = await extraction.extractPage(resolved.model.id, page, options, abort.signal);
            meter.modelCall(r.providerCostCents, { prompt: r.result.usage.promptTokens, completion: r.result.usage.completionTokens });
            meter.pages++;
            return { page, r };
          });
        } catch (err) {
          abort.abort();
          throw err;
        }
      });

      const pages = outcome.result.map(({ page, r }) => ({
        page_number: page.pageNumber,
        text: r.result.text,
        ...(r.result.confidence !== undefined ? { confidence: r.result.confidence } : {}),
      }));
      const tables: Table[] = outcome.result.flatMap(({ page, r }) => r.result.tables.map((t) => ({ ...t, page_number: page.pageNumber })));
      const confidences = pages.map((p) => p.confidence);
      const allScored = confidences.length > 0 && confidences.every((c) => c !== undefined);
      const usage = outcome.result.reduce((u, { r }) => ({ p: u.p + r.result.usage.promptTokens, c: u.c + r.result.usage.completionTokens }), { p: 0, c: 0 });
      return {
        id: outcome.requestId,
        object: "ocr.result" as const,
        created: Math.floor(Date.now() / 1000),
        model: resolved.model.id,
        result: {
          text: pages.map((p) => p.text).join("\n\n"),
          pages,
          tables,
          ...(allScored ? { confidence: (confidences as number[]).reduce((a, b) => a + b, 0) / confidences.length } : {}),
        },
        usage: {
          pages_processed: pages.length,
          prompt_tokens: usage.p,
          completion_tokens: usage.c,
          tokens_used: usage.p + usage.c,
          provider_cost_cents: centsToNumber(outcome.charge.providerCostCents),
          platform_fee_cents: centsToNumber(outcome.charge.platformFeeCents),
          total_cost_cents: outcome.charge.chargedCents,
          processing_time_ms: outcome.processingTimeMs,
        },
      };
    },
  );
}
