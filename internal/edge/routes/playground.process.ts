/**
 * POST /v1/playground/process: one document (multipart upload, or JSON with
 * url/base64) → everything the playground page shows: per page the image the
 * model read, its text, tables and confidence, plus the model used, timings
 * and the cost breakdown. Office documents are converted automatically.
 *
 * Billing and the work are /v1/ocr's: the document pipeline (`../pipeline.ts`),
 * logged under this endpoint. With `Accept: application/x-ndjson` the answer
 * is a stream of the pipeline's progress events ending in the same result;
 * see docs/playground.md.
 */
import { Type, type Static } from "typebox";
import { chargeFields, formatUsd } from "../../billing/index.ts";
import type { PageInput } from "../../contracts/index.ts";
import { PAGE_DPI, PGM_MIME_TYPE, parsePgm } from "../../formats/index.ts";
import { decodeToPng, fromPixels } from "../../platform/decoder/index.ts";
import { FolioError, toHttpError } from "../../platform/errors/index.ts";
import { readMultipart, registerMultipart, uploadOf } from "../multipart.ts";
import { NDJSON, NdjsonStream, acceptsNdjson } from "../ndjson.ts";
import {
  PipelineEventSchemas,
  formatLabel,
  loadDocument,
  pageSelectionOf,
  readDocument,
  readingOf,
  tokensOf,
  type KeptImage,
  type LoadedDocument,
  type PipelineEvent,
  type ReadResult,
} from "../pipeline.ts";
import { ChargeFields, PageBlockSchema, PageLayoutSchema, ReadingUsage, StringEnum, TableEntry, paid } from "../schemas.ts";
import { idempotent } from "../idempotency.ts";
import { extractionOf } from "../services.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { JsonBody, MultipartBody, fromJson, fromMultipart, type PlaygroundInput } from "./playground.input.ts";

export const PLAYGROUND_PATH = "/v1/playground/process";
export { NDJSON };

/**
 * Page images travel inline as data URLs (docs/playground.md: stateless, so
 * any edge replica can answer, and nothing is kept after the response). The
 * edge already holds every page to extract it; this caps what a response adds
 * on top: past it, further pages come without their image.
 */
export const MAX_INLINE_IMAGE_BYTES = 48 * 1024 * 1024;

export const PlaygroundResult = Type.Object({
  id: Type.String({ description: "req_<id>, the usage log entry's id." }),
  object: Type.Literal("playground.result"),
  created: Type.Integer(),
  model: Type.String({ description: "The model actually used." }),
  strategy: Type.Optional(Type.String({ description: "The strategy that chose the model, when one did." })),
  document: Type.Object({
    filename: Type.Optional(Type.String()),
    mime_type: Type.String({ description: "What the bytes are (sniffed), not the hint." }),
    format: Type.String({ description: "PNG, JPEG, …, PDF, DOCX, …" }),
    kind: StringEnum(["image", "pdf", "office"]),
    bytes: Type.Integer(),
    converted: Type.Boolean({ description: "True when the conversion service made the page images." }),
  }),
  result: Type.Object({
    text: Type.String({ description: "Page texts joined by a blank line." }),
    pages: Type.Array(
      Type.Object({
        page_number: Type.Integer(),
        text: Type.String(),
        confidence: Type.Optional(Type.Number()),
        layout: Type.Optional(PageLayoutSchema),
        blocks: Type.Optional(Type.Array(PageBlockSchema, { description: "Local models with output_format json: the page's structure in reading order (docs/structure.md)." })),
        tables: Type.Array(TableEntry),
        image: Type.Union([
          Type.Object({
            url: Type.String({
              description: `data:<mime>;base64,… — the image the model read (converted and PDF pages: ${PAGE_DPI}-DPI PNG; a PDF page read by a local model is grey, as the model read it).`,
            }),
            mime_type: Type.String(),
            bytes: Type.Integer(),
          }),
          Type.Null(),
        ]),
        image_omitted: Type.Optional(StringEnum(["not_requested", "response_image_limit"])),
      }),
    ),
    tables: Type.Array(TableEntry, { description: "Every page's tables, flattened (as in ocr.result)." }),
    confidence: Type.Optional(Type.Number({ description: "Mean of the page confidences, present only when every page has one." })),
  }),
  timings: Type.Object({
    load_ms: Type.Integer({ description: "Resolving the model, decoding or fetching the document, identifying it and taking the hold." }),
    conversion_ms: Type.Integer({ description: "Making page images: office conversion (with queueing) or PDF rasterization; 0 for images." }),
    extraction_ms: Type.Integer({ description: "From the first page sent to the model to the last page back." }),
    total_ms: Type.Integer({ description: "The whole request, as the edge saw it." }),
  }),
  usage: ReadingUsage,
  cost: Type.Object({
    currency: Type.Literal("USD"),
    components: Type.Array(
      Type.Object({
        component: StringEnum(["model", "conversion"]),
        ...ChargeFields,
        pages: Type.Optional(Type.Integer()),
        compute_time_ms: Type.Optional(Type.Integer({ description: "Conversion only: sandbox compute time, what is billed." })),
      }),
    ),
    ...ChargeFields,
    formatted: Type.String({ description: "The amount charged in dollars, e.g. $1,234.56." }),
  }),
});
export type PlaygroundResult = Static<typeof PlaygroundResult>;

/** One line of the NDJSON stream (docs/playground.md). */
export const PlaygroundEvent = Type.Union([
  ...PipelineEventSchemas,
  Type.Object({ event: Type.Literal("result"), result: PlaygroundResult }),
  Type.Object({ event: Type.Literal("error"), status: Type.Integer(), error: Type.Ref("Error") }),
]);
type Line = PipelineEvent | { event: "result"; result: PlaygroundResult } | { event: "error"; status: number; error: Record<string, unknown> };

export default function register(app: App, deps: EdgeDeps): void {
  void app.register(async (scope) => {
    const fileLimit = Math.min(deps.documents.maxBytes, deps.bodyLimitBytes);
    await registerMultipart(scope, { fileLimit, bodyLimit: deps.bodyLimitBytes });
    scope.post(
      PLAYGROUND_PATH,
      {
        ...paid(
          ["playground:write"],
          {
            summary: "Process one document for the playground: page images, text, tables, timings and cost",
            description:
              "A file (multipart/form-data, field `file`) or JSON with exactly one of url/base64; office documents are converted automatically. Billed like /v1/ocr. " +
              "With `Accept: application/x-ndjson` the answer streams progress events (started, converting|rasterizing, extracting, page…) and ends with a `result` or `error` event; " +
              "errors found before the hold is taken (validation, format, 402) are plain HTTP errors either way. See docs/playground.md.",
            tags: ["Playground"],
            body: { content: { "application/json": { schema: JsonBody }, "multipart/form-data": { schema: MultipartBody } } } as never,
            response: {
              200: {
                description: "The result (JSON), or the event stream (NDJSON) when asked for with Accept.",
                content: { "application/json": { schema: PlaygroundResult }, [NDJSON]: { schema: PlaygroundEvent } },
              },
            },
          },
          [402, 413, 500, 502, 503],
        ),
        // The form is parsed before validation, so the same schema machinery (and the same 400s) applies to it.
        preValidation: async (req) => {
          if (req.isMultipart()) req.body = await readMultipart(req, fileLimit);
        },
      },
      async (req, reply) => {
        const started = Date.now();
        const input = req.isMultipart() ? fromMultipart(req.body as MultipartBody, uploadOf(req)) : fromJson(req.body as JsonBody);
        const pages = pageSelectionOf(deps, input.pages);
        const model = await extractionOf(deps).resolveModel({ model: input.model, strategy: input.strategy.strategy, strategyParam: input.strategy.param });
        const document = await loadDocument(deps, input.source, { param: input.param, ...(input.mimeType ? { mimeType: input.mimeType } : {}) });
        const stream = acceptsNdjson(req) ? new NdjsonStream<Line>(reply) : null;
        // A client that goes away (the tab closed) stops the work; what was billed until then is charged.
        const cancel = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) cancel.abort(new FolioError("invalid_request", "the client closed the connection before the result was ready; the work was cancelled"));
        };
        reply.raw.on("close", onClose);
        let loadMs = 0;
        try {
          const read = await readDocument(deps, {
            endpoint: PLAYGROUND_PATH,
            payer: principalOf(req),
            model,
            document,
            options: input.options,
            ...(input.filename ? { filename: input.filename } : {}),
            ...(pages ? { pages } : {}),
            signal: cancel.signal,
            ...(input.includeImages ? { keepImage: displayable } : {}),
            onEvent: (event) => {
              if (event.event === "started") loadMs = Date.now() - started;
              stream?.send(event);
            },
            answer: (r) => buildResult({ read: r, model, input, document, timings: { loadMs, totalMs: Date.now() - started } }),
            // A replay answers the result as JSON, whether or not the first request streamed.
            ...idempotent(deps, req, reply, (body) => JSON.stringify(body)),
          });
          const result = read.answer;
          if (!stream) return result;
          stream.end({ event: "result", result });
          return reply;
        } catch (err) {
          if (!stream?.open) throw err;
          // The stream has begun (200 sent): the error is its last event, in the one error shape.
          const mapped = toHttpError(err);
          if (mapped.body.error.code === "internal_error") req.log.error({ err }, "request failed");
          else if (mapped.status >= 500) req.log.warn({ code: mapped.body.error.code, msg: mapped.body.error.message }, "request failed");
          stream.end({ event: "error", status: mapped.status, error: mapped.body.error });
          return reply;
        } finally {
          reply.raw.off("close", onClose);
        }
      },
    );
  });
}

function buildResult(o: {
  read: ReadResult;
  model: { model: { id: string }; strategy?: string };
  input: PlaygroundInput;
  document: LoadedDocument;
  timings: { loadMs: number; totalMs: number };
}): PlaygroundResult {
  const { read, input, document: doc } = o;
  const reading = readingOf(read);
  let inlineBudget = MAX_INLINE_IMAGE_BYTES;
  const pages: PlaygroundResult["result"]["pages"] = [];
  for (const [i, { pageNumber, image: shown }] of read.pages.entries()) {
    let image: PlaygroundResult["result"]["pages"][number]["image"] = null;
    let omitted: "not_requested" | "response_image_limit" | undefined = input.includeImages ? undefined : "not_requested";
    if (shown) {
      if (shown.bytes.length <= inlineBudget) {
        inlineBudget -= shown.bytes.length;
        image = { url: `data:${shown.mimeType};base64,${shown.bytes.toString("base64")}`, mime_type: shown.mimeType, bytes: shown.bytes.length };
      } else {
        // Past the cap no further page gets its image, so the cut is one place, not scattered.
        omitted = "response_image_limit";
        inlineBudget = -1;
      }
    }
    const tables = reading.tables.filter((t) => t.page_number === pageNumber);
    pages.push({ ...reading.pages[i]!, tables, image, ...(omitted ? { image_omitted: omitted } : {}) });
  }
  const components: PlaygroundResult["cost"]["components"] = [];
  if (read.components.model) components.push({ component: "model", ...chargeFields(read.components.model), pages: pages.length });
  for (const [i, c] of read.components.conversion.entries()) {
    const ms = read.conversionMillis[i];
    components.push({ component: "conversion", ...chargeFields(c), ...(ms !== undefined ? { compute_time_ms: ms } : {}) });
  }
  const total = chargeFields(read.charge);
  return {
    id: read.requestId,
    object: "playground.result",
    created: Math.floor(Date.now() / 1000),
    model: o.model.model.id,
    ...(o.model.strategy && input.model === undefined ? { strategy: o.model.strategy } : {}),
    document: {
      ...(input.filename !== undefined ? { filename: input.filename } : {}),
      mime_type: doc.sniffed.mimeType,
      format: formatLabel(doc.sniffed),
      kind: doc.sniffed.kind === "text" ? "office" : doc.sniffed.kind,
      bytes: doc.bytes.length,
      converted: doc.sniffed.kind === "office",
    },
    result: { ...reading, pages },
    timings: { load_ms: o.timings.loadMs, conversion_ms: read.timings.conversionMs, extraction_ms: read.timings.extractionMs, total_ms: o.timings.totalMs },
    usage: { ...tokensOf(read), ...total, processing_time_ms: read.processingTimeMs },
    cost: { currency: "USD", components, ...total, formatted: formatUsd(total.total_cost_cents) },
  };
}

/**
 * The page image as a browser can show it: what the model read, except TIFF
 * and the raw grey pixels (PGM) a PDF's pages are rendered to for local
 * engines, which browsers do not display, re-encoded as PNG. Called as each
 * page is read, so only the PNG stays in memory.
 */
async function displayable(page: PageInput): Promise<KeptImage> {
  if (page.mimeType === PGM_MIME_TYPE) {
    // sharp does not read PGM: its header gives the size, the rest is one byte per pixel.
    const pgm = parsePgm(page.image);
    if (!pgm) throw new FolioError("internal_error", `page ${page.pageNumber} is not the binary PGM the PDF was rendered to`);
    // b-w: a grey PNG (one byte per pixel, about half the size); sharp would otherwise write RGB.
    const png = await fromPixels(pgm.pixels, { width: pgm.width, height: pgm.height, channels: 1 }).toColourspace("b-w").png().toBuffer();
    return { bytes: png, mimeType: "image/png" };
  }
  if (page.mimeType !== "image/tiff") return { bytes: page.image, mimeType: page.mimeType };
  // The client's TIFF is decoded by the decoder's child process, not in the edge (platform/decoder).
  return { bytes: (await decodeToPng(page.image)).png, mimeType: "image/png" };
}
