/**
 * POST /v1/convert: an office document (base64) → one 200-DPI PNG per page
 * (the spec's conversion result), billed by sandbox compute time.
 */
import { Type } from "typebox";
import { PRICE_TEXT, chargeFields, holdCents, runPaid, type PaidRequest } from "../../billing/index.ts";
import { formatForMimeType } from "../../conversion/client.ts";
import { decodeBase64Strict } from "../../documents/index.ts";
import { PAGE_DPI } from "../../formats/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { conversionOf } from "../services.ts";
import { NO_NUL, PagesField, paid } from "../schemas.ts";
import { pageSelectionOf } from "../pipeline.ts";
import { idempotent } from "../idempotency.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";

const Body = Type.Object(
  {
    file: Type.String({ minLength: 1, description: "The document, base64 (no data-URL prefix)." }),
    filename: Type.String({ minLength: 1, maxLength: 255, pattern: NO_NUL, description: "Echoed in the result." }),
    mimeType: Type.String({ minLength: 1, maxLength: 200, description: "One of the supported conversion types (docs/conversion.md); the bytes must agree." }),
    pages: Type.Optional(PagesField),
  },
  { additionalProperties: false },
);

const ConversionResult = Type.Object({
  id: Type.String({ description: "req_<id>" }),
  object: Type.Literal("conversion.result"),
  created: Type.Integer(),
  filename: Type.String(),
  mime_type: Type.String(),
  result: Type.Object({
    page_count: Type.Integer({ description: "Pages converted: the document's, or those `pages` selected." }),
    document_page_count: Type.Integer({ description: "The document's pages; more than page_count when `pages` selected some." }),
    images: Type.Array(
      Type.Object({
        page_number: Type.Integer({ description: "The page's number in the document (with `pages`, not necessarily 1, 2, …)." }),
        base64: Type.String({ description: `PNG, ${PAGE_DPI} DPI.` }),
        mime_type: Type.Literal("image/png"),
        width: Type.Integer({ description: "Pixels (an A4 page is 1654)." }),
        height: Type.Integer({ description: "Pixels (an A4 page is 2339)." }),
      }),
    ),
  }),
  usage: Type.Object({
    processing_time_ms: Type.Integer(),
    compute_time_ms: Type.Integer({ description: "Sandbox start to exit: what is billed." }),
    provider_cost_cents: Type.Number(),
    platform_fee_cents: Type.Number(),
    total_cost_cents: Type.Integer(),
  }),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    "/v1/convert",
    paid(["convert:write"], {
      summary: "Convert an office document to PNG page images",
      description:
        `DOCX, PPTX, DOC, ODT, RTF or TXT → one ${PAGE_DPI}-DPI PNG per page (or per page \`pages\` selects), in a single-use gVisor sandbox. ` +
        `Billed: ${PRICE_TEXT.conversion}; a failed conversion is not charged.`,
      tags: ["Conversion"],
      body: Body,
      response: { 200: ConversionResult },
    }, [402, 413, 500, 503]),
    async (req, reply) => {
      const principal = principalOf(req);
      const { file, filename, mimeType } = req.body;
      formatForMimeType(mimeType, "mimeType");
      const pages = pageSelectionOf(deps, req.body.pages);
      const document = decodeBase64Strict(file, "file");
      if (document.length > deps.documents.maxBytes) {
        throw new FolioError("payload_too_large", `document is ${document.length} bytes; the limit is ${deps.documents.maxBytes}`, { param: "file" });
      }
      const conversion = conversionOf(deps);
      const estimateCents = holdCents({ pages: 0, maxCompletionTokens: 0, conversions: 1, conversionDeadlineMs: deps.conversionDeadlineMs, parserPages: 0 });
      const outcome = await runPaid(
        deps.billing,
        principal,
        {
          endpoint: "/v1/convert",
          model: "folio/conversion",
          estimateCents,
          answer: (o) => ({
            id: o.requestId,
            object: "conversion.result" as const,
            created: Math.floor(Date.now() / 1000),
            filename,
            mime_type: mimeType,
            result: {
              page_count: o.result.pageCount,
              document_page_count: o.result.documentPageCount,
              images: o.result.pages.map((p) => ({ page_number: p.pageNumber, base64: p.png.toString("base64"), mime_type: "image/png" as const, width: p.width, height: p.height })),
            },
            usage: {
              processing_time_ms: o.processingTimeMs,
              compute_time_ms: o.result.computeMillis,
              ...chargeFields(o.charge),
            },
          }),
          ...idempotent(deps, req, reply),
        },
        async ({ meter, requestId }: PaidRequest) => {
          const abort = new AbortController();
          const r = await conversion.convert({ document, mimeType, filename, maxPages: deps.documents.maxPages, ...(pages ? { pages } : {}), requestId }, abort.signal);
          meter.conversion(r);
          meter.pages = r.pageCount;
          return r;
        },
      );
      return outcome.answer;
    },
  );
}
