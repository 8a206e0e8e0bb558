/**
 * POST /v1/ocr: one image or document by URL or base64 → text, pages, tables,
 * usage and cost (the spec's OCR result).
 */
import { Type } from "typebox";
import { PRICE_TEXT, chargeFields } from "../../billing/index.ts";
import { PAGE_DPI } from "../../formats/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JsonReadingFields, OcrRouteOptions, PageEntry, PagesField, ReadingFields, ReadingUsage, TableEntry, paid } from "../schemas.ts";
import { idempotent } from "../idempotency.ts";
import { checkSearchablePdfSupport, loadDocument, ocrOptions, pageSelectionOf, readDocument, readingOf, strategyOf, tokensOf, urlOrBase64 } from "../pipeline.ts";
import { extractionOf } from "../services.ts";

/** The body of /v1/ocr; POST /v1/ocr/jobs takes it too, with `metadata`. */
export const OcrBody = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: "Publicly accessible document URL (http or https)." })),
    ...JsonReadingFields,
    ...ReadingFields,
    pages: Type.Optional(PagesField),
    options: Type.Optional(OcrRouteOptions),
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
    pages: Type.Array(PageEntry),
    tables: Type.Array(TableEntry),
    confidence: Type.Optional(Type.Number()),
    searchable_pdf: Type.Optional(
      Type.String({
        contentEncoding: "base64",
        contentMediaType: "application/pdf",
        description: "With options.searchable_pdf: the PDF of exactly these pages with an invisible text layer on each word, base64 (docs/ocr.md, Searchable PDF).",
      }),
    ),
  }),
  usage: ReadingUsage,
});

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    "/v1/ocr",
    paid(["ocr:write"], {
      summary: "Extract text (and tables) from one image or document",
      description:
        `Exactly one of url or base64. Images are one page; PDFs are rasterized at ${PAGE_DPI} DPI; office documents are converted when a conversion service is configured. ` +
        `Billed: ${PRICE_TEXT.rule}.`,
      tags: ["OCR"],
      body: OcrBody,
      response: { 200: OcrResult },
    }, [402, 500, 502, 503]),
    async (req, reply) => {
      const { strategy, param } = strategyOf(req.body);
      const model = await extractionOf(deps).resolveModel({ model: req.body.model, strategy, strategyParam: param });
      const options = ocrOptions(req.body.options);
      const searchablePdf = req.body.options?.searchable_pdf === true;
      checkSearchablePdfSupport(model, searchablePdf);
      const pages = pageSelectionOf(deps, req.body.pages);
      const input = urlOrBase64(req.body);
      const document = await loadDocument(deps, input.source, { param: input.param, ...(req.body.mime_type !== undefined ? { mimeType: req.body.mime_type } : {}) });
      const read = await readDocument(deps, {
        endpoint: "/v1/ocr",
        payer: principalOf(req),
        model,
        document,
        options,
        ...(pages ? { pages } : {}),
        ...(searchablePdf ? { searchablePdf } : {}),
        answer: (r) => ({
          id: r.requestId,
          object: "ocr.result" as const,
          created: Math.floor(Date.now() / 1000),
          model: model.model.id,
          result: { ...readingOf(r), ...(r.searchablePdf ? { searchable_pdf: r.searchablePdf.toString("base64") } : {}) },
          usage: { ...tokensOf(r), ...chargeFields(r.charge), processing_time_ms: r.processingTimeMs },
        }),
        ...idempotent(deps, req, reply),
      });
      return read.answer;
    },
  );
}
