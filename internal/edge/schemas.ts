/** Shared wire schemas (TypeBox = JSON Schema; they also feed /v1/openapi.json). */
import { Type } from "typebox";
import { PERMISSIONS, type Permission as PermissionName } from "../auth/index.ts";
import { MINIMUM_CHARGE_CENTS, PLATFORM_FEE_PERCENT } from "../billing/index.ts";
import { MAX_PAGES_TEXT } from "../formats/pages.ts";

export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: "Stable machine-readable code, see docs/errors.md." }),
        message: Type.String({ description: "What went wrong, for people." }),
        param: Type.Optional(Type.String({ description: "The request field at fault." })),
      },
      { additionalProperties: true },
    ),
  },
  { $id: "Error", description: "The one error shape of every endpoint." },
);

export const errorResponses = {
  400: Type.Ref("Error"),
  401: Type.Ref("Error"),
  403: Type.Ref("Error"),
  404: Type.Ref("Error"),
  429: Type.Ref("Error"),
};

/**
 * A string from a fixed set, as a JSON Schema `enum` (not `anyOf` of
 * constants) so a wrong value's 400 lists the allowed values.
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string; default?: T[number] } = {}) {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });
}

export const Permission = StringEnum(PERMISSIONS, { description: "A permission name (docs/permissions.md)." });

export const UnixSeconds = Type.Integer({ minimum: 0, maximum: 253402300799, description: "Unix timestamp, seconds." });

/** Strings stored in Postgres text columns cannot hold NUL: refuse it with a 400 naming the field. */
export const NO_NUL = "^[^\\u0000]*$";

/** What to read and with which model: the request fields /v1/ocr and /v1/playground/process share. */
export const ReadingFields = {
  mime_type: Type.Optional(Type.String({ maxLength: 200, description: "Input MIME type; a hint, the bytes decide." })),
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: "A catalog model id or folio/<strategy>; wins over strategy." })),
  strategy: Type.Optional(Type.String({ maxLength: 50, description: "quality, accuracy, speed, cost or balanced (default)." })),
};

/** The document as base64, and the strategy's second home (JSON bodies). */
export const JsonReadingFields = {
  base64: Type.Optional(Type.String({ minLength: 1, description: "Base64 document data without a data-URL prefix." })),
  provider_preferences: Type.Optional(Type.Object({ strategy: Type.Optional(Type.String({ maxLength: 50 })) }, { additionalProperties: false })),
};

/** The `pages` option of /v1/ocr and /v1/convert (internal/formats/pages.ts has the rules). */
export const PagesField = Type.String({
  maxLength: MAX_PAGES_TEXT,
  description:
    'Only these pages, 1-based, e.g. "1-20,25" or "5-" (page 5 to the end); processed and answered in document order, each keeping its page number; ' +
    "billed for the pages processed. A page named twice, page 0, a range that runs backwards or a page beyond the document's end is a 400; so is selecting more pages than the limit (docs/conversion.md, Pages).",
});

/** The spec's OCR options. */
export const OcrOptions = Type.Object(
  {
    extract_tables: Type.Optional(Type.Boolean({ description: "Ask the model for table data (result.tables)." })),
    language: Type.Optional(Type.String({ pattern: "^[A-Za-z_]{2,16}$", description: "Language hint, ISO 639-1 (e.g. en, de)." })),
    output_format: Type.Optional(
      StringEnum(["text", "json", "markdown"], {
        description:
          "text (default): the text in reading order. Local models: markdown writes each page's text as GitHub-flavoured markdown from the layout " +
          "(headings, paragraphs, lists, tables; page headers and footers left out); json keeps the text and adds each page's `blocks`. " +
          "Upstream models: a request to the model, which answers in the format asked for (docs/structure.md, Output formats).",
      }),
    ),
    include_layout: Type.Optional(
      Type.Union([Type.Boolean(), StringEnum(["blocks", "words"])], {
        description:
          "Adds `layout` to every page: blocks in reading order (text, table, figure, header, footer) with boxes in pixels of the page image; " +
          "\"words\" adds each block's words with their confidence; true is \"blocks\". Local models only (docs/structure.md, Layout).",
      }),
    ),
  },
  { additionalProperties: false },
);

/** `options.searchable_pdf` (docs/ocr.md "Searchable PDF"). */
export const SearchablePdfOption = Type.Boolean({
  default: false,
  description:
    "Local models, POST /v1/ocr only: adds result.searchable_pdf, the document's own pages (a PDF's as they are, an image as a page at its resolution) " +
    "with an invisible text layer on each word read, so the text can be selected and searched in any viewer. Latin text only (other characters become \"?\"). " +
    "No extra charge. An upstream model, or a durable job, is a 400 (docs/ocr.md, Searchable PDF).",
});

/** The options of POST /v1/ocr (and of its durable jobs, which refuse `searchable_pdf` for now): the spec's, and the searchable PDF. */
export const OcrRouteOptions = Type.Object({ ...OcrOptions.properties, searchable_pdf: Type.Optional(SearchablePdfOption) }, { additionalProperties: false });

const Bbox = Type.Array(Type.Integer(), { minItems: 4, maxItems: 4, description: "[x0, y0, x1, y1] in pixels of the page image (PDF and office pages: rendered at 200 DPI)." });

/** How far a page as sent was turned from upright (docs/ocr.md "Turned and skewed pages"). */
const Rotation = Type.Union([Type.Literal(0), Type.Literal(90), Type.Literal(180), Type.Literal(270)], {
  description: "Local models: the page as sent was found turned clockwise by this many degrees from upright and was turned back before it was read (docs/ocr.md, Turned and skewed pages).",
});
const SkewDegrees = Type.Number({
  minimum: -15,
  maximum: 15,
  description: "Local models: the page as sent was found skewed clockwise by this many degrees beyond `rotation` (negative: counter-clockwise) and was deskewed before it was read; 0 when it was read as sent (skews under 1° are left alone). Boxes stay in pixels of the page as sent.",
});

/** `layout` of a page (docs/structure.md "Layout"). */
export const PageLayoutSchema = Type.Object({
  width: Type.Integer({ description: "The page image's width in pixels." }),
  height: Type.Integer({ description: "The page image's height in pixels." }),
  blocks: Type.Array(
    Type.Object({
      type: StringEnum(["text", "table", "figure", "header", "footer"]),
      bbox: Bbox,
      text: Type.String({ description: "The block's text; a table's rows on lines, cells separated by a tab; empty for a figure." }),
      words: Type.Optional(Type.Array(Type.Object({ text: Type.String(), bbox: Bbox, confidence: Type.Number({ minimum: 0, maximum: 1 }) }), { description: "Only with include_layout \"words\"." })),
    }),
  ),
  rotation: Type.Optional(Rotation),
  skew_degrees: Type.Optional(SkewDegrees),
});

/** A table's cell: where it starts and how many rows and columns it covers. */
export const TableCellSchema = Type.Object({
  row: Type.Integer({ minimum: 0 }),
  col: Type.Integer({ minimum: 0 }),
  row_span: Type.Integer({ minimum: 1 }),
  col_span: Type.Integer({ minimum: 1 }),
  text: Type.String(),
  bbox: Type.Optional(Type.Array(Type.Integer(), { minItems: 4, maxItems: 4, description: "Local models: the box of the cell's words, [x0, y0, x1, y1] in pixels of its page's image; absent for an empty cell." })),
  page_number: Type.Optional(Type.Integer({ description: "A table continued over pages: the page this cell is on (its bbox is in that page's pixels)." })),
});

/** One block of a page's structure (docs/structure.md "Output formats"). */
export const PageBlockSchema = Type.Object(
  {
    type: StringEnum(["heading", "paragraph", "list_item", "table", "figure", "header", "footer"], {
      description: "What the block is. Headers, footers and figures are outside the text's flow (markdown leaves them out).",
    }),
    text: Type.String({
      description: "A heading's, paragraph's or list item's text on one line (a list item without its marker); a table's rows on lines, cells separated by a tab; empty for a figure.",
    }),
    bbox: Bbox,
    level: Type.Optional(Type.Integer({ minimum: 1, maximum: 3, description: "Headings: 1 for the largest type, from the size of the text against the page's body text." })),
    ordered: Type.Optional(Type.Boolean({ description: "List items: numbered or lettered (true) or bulleted (false)." })),
    depth: Type.Optional(Type.Integer({ minimum: 0, description: "List items: nesting depth, 0 at the outermost level." })),
    marker: Type.Optional(Type.String({ description: 'List items: the marker as printed ("1.", "a)", "•").' })),
    cells: Type.Optional(Type.Array(Type.Array(Type.String()), { description: "Tables: rows of cell strings, empty strings for empty cells; a merged cell's text in the first position it covers." })),
    table_cells: Type.Optional(Type.Array(TableCellSchema, { description: "Tables: each cell once, where it starts and how many rows and columns it covers." })),
  },
  { description: "A block of a page, in reading order." },
);

/** One entry of `result.pages`. */
export const PageEntry = Type.Object({
  page_number: Type.Integer(),
  text: Type.String({ description: "The page's text in the output format (docs/structure.md, Output formats)." }),
  confidence: Type.Optional(Type.Number()),
  rotation: Type.Optional(Rotation),
  skew_degrees: Type.Optional(SkewDegrees),
  layout: Type.Optional(PageLayoutSchema),
  blocks: Type.Optional(
    Type.Array(PageBlockSchema, {
      description: "Local models with output_format json: the page's headings, paragraphs, list items, tables, figures, headers and footers in reading order.",
    }),
  ),
});

/** One table of `result.tables`. */
export const TableEntry = Type.Object({
  page_number: Type.Integer({ description: "The page the table starts on." }),
  page_numbers: Type.Array(Type.Integer(), { description: "Every page the table is on: a table continued on the next pages is one table (docs/structure.md, Tables)." }),
  rows: Type.Array(Type.Array(Type.String()), { description: "Rows of cell strings, the first row the header; a merged cell's text in the first position it covers, the others empty." }),
  markdown: Type.String({ description: "The rows as a GitHub markdown table (which cannot say a merged cell)." }),
  cells: Type.Array(TableCellSchema, { description: "Each cell once, where it starts and how many rows and columns it covers." }),
  html: Type.String({ description: "The table as HTML, with rowspan and colspan for merged cells." }),
});

/** A charge's three figures (billing/display.ts `chargeFields`). */
export const ChargeFields = {
  provider_cost_cents: Type.Number({ description: "Exact, may be fractional." }),
  platform_fee_cents: Type.Number({ description: `${PLATFORM_FEE_PERCENT}% of the provider cost, exact.` }),
  total_cost_cents: Type.Integer({ description: `Charged: provider + fee rounded up, at least ${MINIMUM_CHARGE_CENTS} cent.` }),
};

/** `usage` of a reading answer: pages and tokens, the charge, and the billed time. */
export const ReadingUsage = Type.Object({
  pages_processed: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  tokens_used: Type.Integer(),
  ...ChargeFields,
  processing_time_ms: Type.Integer({ description: "Billed work, hold to settle." }),
});

/**
 * Options of a route that needs an API key holding `permissions`: the bearer
 * scheme in the OpenAPI document and the error answers every such route can
 * give (400, 401, 403, 404, 429), plus `moreErrors` (402, 500, …), beside its
 * own responses.
 */
export function keyed<const S extends { response: Record<number, unknown> }>(permissions: readonly PermissionName[], schema: S, moreErrors: readonly number[] = []) {
  const more = Object.fromEntries(moreErrors.map((status) => [status, Type.Ref("Error")]));
  return {
    config: { permissions },
    schema: { ...schema, security: [{ bearer: [] }], response: { ...schema.response, ...errorResponses, ...more } },
  };
}

/** The `Idempotency-Key` header of a paid POST, as the OpenAPI document states it (docs/idempotency.md). */
export const IdempotencyHeaders = Type.Object({
  "idempotency-key": Type.Optional(
    Type.String({
      description:
        "Up to 255 characters, no control characters. The first request with a key runs; its final answer (status, body, charge) is kept for this account for 24 hours " +
        "and replayed to a retry with the same body (header Idempotent-Replayed: true), without a second charge; another body under the key is a 422, " +
        "a retry while the first runs a 409 with Retry-After. See docs/idempotency.md.",
    }),
  ),
});

/** A paid POST: a keyed route that takes an Idempotency-Key (409 and 422 answers included). */
export function paid<const S extends { response: Record<number, unknown> }>(permissions: readonly PermissionName[], schema: S, moreErrors: readonly number[] = []) {
  const route = keyed(permissions, { ...schema, headers: IdempotencyHeaders }, [...moreErrors, 409, 422]);
  return { ...route, config: { ...route.config, idempotent: true } };
}
