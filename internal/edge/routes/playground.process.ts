/**
 * POST /v1/playground/process: one document (multipart upload, or JSON with
 * url/base64) → everything the playground page shows: per page the image the
 * model read, its text, tables and confidence, plus the model used, timings
 * and the cost breakdown. Office documents are converted automatically.
 *
 * Billing is /v1/ocr's, through runPaid (hold, raise once an office document's
 * pages are known, settle, usage log with this endpoint). With
 * `Accept: application/x-ndjson` the answer is a stream of progress events
 * ending in the same result; see docs/playground.md.
 */
import { PassThrough } from "node:stream";
import multipart from "@fastify/multipart";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type, type Static } from "typebox";
import { centsToNumber, chargeComponent, type ComponentCharge } from "../../billing/index.ts";
import { sniffDocument } from "../../documents/index.ts";
import { estimateCostCents } from "../../extraction/cost.ts";
import type { PageInput, Table } from "../../extraction/types.ts";
import { FolioError, toHttpError } from "../../platform/errors/index.ts";
import { conversionHoldCents, conversionOf, countPages, loadDocument, mapLimit, pageImages, type LoadedDocument } from "../document-input.ts";
import { runPaid } from "../paid.ts";
import { StringEnum, errorResponses } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { extractionOf } from "./models.shared.ts";
import { OcrOptions, ocrOptions, strategyOf } from "./ocr.ts";

export const PLAYGROUND_PATH = "/v1/playground/process";
export const NDJSON = "application/x-ndjson";

/**
 * Page images travel inline as data URLs (docs/playground.md: stateless, so
 * any edge replica can answer, and nothing is kept after the response). The
 * edge already holds every page to extract it; this caps what a response adds
 * on top: past it, further pages come without their image.
 */
export const MAX_INLINE_IMAGE_BYTES = 48 * 1024 * 1024;

const Common = {
  url: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: "Publicly accessible document URL (http or https), instead of a file." })),
  mime_type: Type.Optional(Type.String({ maxLength: 200, description: "Input MIME type; a hint, the bytes decide." })),
  filename: Type.Optional(Type.String({ maxLength: 255, pattern: "^[^\\u0000]*$", description: "Echoed in the result (a file part's own name is used when absent)." })),
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: "A catalog model id or folio/<strategy>; wins over strategy." })),
  strategy: Type.Optional(Type.String({ maxLength: 50, description: "quality, accuracy, speed, cost or balanced (default)." })),
};

const JsonBody = Type.Object(
  {
    ...Common,
    base64: Type.Optional(Type.String({ minLength: 1, description: "Base64 document data without a data-URL prefix." })),
    provider_preferences: Type.Optional(Type.Object({ strategy: Type.Optional(Type.String({ maxLength: 50 })) }, { additionalProperties: false })),
    options: Type.Optional(OcrOptions),
    include_images: Type.Optional(Type.Boolean({ description: "Return each page's image as a data URL (default true)." })),
  },
  { additionalProperties: false, description: "Exactly one of url or base64." },
);
type JsonBody = Static<typeof JsonBody>;

const Flag = StringEnum(["true", "false"]);
/** Form fields are strings; the options are flat (`extract_tables=true`). */
const MultipartBody = Type.Object(
  {
    file: Type.Optional(Type.Unsafe<Buffer>({ format: "binary", description: "The document, as a file part (exactly one of file or url)." })),
    ...Common,
    extract_tables: Type.Optional(Flag),
    language: Type.Optional(Type.String({ pattern: "^[A-Za-z_]{2,16}$", description: "Language hint, ISO 639-1 (e.g. en, de)." })),
    output_format: Type.Optional(StringEnum(["text", "json", "markdown"])),
    include_images: Type.Optional(Flag),
  },
  { additionalProperties: false },
);
type MultipartBody = Static<typeof MultipartBody>;

const TableEntry = Type.Object({ page_number: Type.Integer(), rows: Type.Array(Type.Array(Type.String())), markdown: Type.String() });
const Charge = {
  provider_cost_cents: Type.Number({ description: "Exact, may be fractional." }),
  platform_fee_cents: Type.Number({ description: "5% of the provider cost, exact." }),
  total_cost_cents: Type.Integer({ description: "Charged: provider + fee rounded up, at least 1 cent." }),
};

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
        tables: Type.Array(TableEntry),
        image: Type.Union([
          Type.Object({
            url: Type.String({ description: "data:<mime>;base64,… — the image the model read (converted and PDF pages: 200-DPI PNG)." }),
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
    load_ms: Type.Integer({ description: "Resolving the model, decoding or fetching the document and identifying it (before the hold)." }),
    conversion_ms: Type.Integer({ description: "Making page images: office conversion (with queueing) or PDF rasterization; 0 for images." }),
    extraction_ms: Type.Integer({ description: "From the first page sent to the model to the last page back." }),
    total_ms: Type.Integer({ description: "The whole request, as the edge saw it." }),
  }),
  usage: Type.Object({
    pages_processed: Type.Integer(),
    prompt_tokens: Type.Integer(),
    completion_tokens: Type.Integer(),
    tokens_used: Type.Integer(),
    ...Charge,
    processing_time_ms: Type.Integer({ description: "Billed work, hold to settle (as in ocr.result)." }),
  }),
  cost: Type.Object({
    currency: Type.Literal("USD"),
    components: Type.Array(
      Type.Object({
        component: StringEnum(["model", "conversion"]),
        ...Charge,
        pages: Type.Optional(Type.Integer()),
        compute_time_ms: Type.Optional(Type.Integer({ description: "Conversion only: sandbox compute time, what is billed." })),
      }),
    ),
    ...Charge,
    formatted: Type.String({ description: "The amount charged in dollars, e.g. $0.02." }),
  }),
});
export type PlaygroundResult = Static<typeof PlaygroundResult>;

/** One line of the NDJSON stream (docs/playground.md). */
export const PlaygroundEvent = Type.Union([
  Type.Object({ event: Type.Literal("started"), id: Type.String(), model: Type.String(), document: Type.Object({ format: Type.String(), kind: Type.String(), bytes: Type.Integer() }) }),
  Type.Object({ event: Type.Literal("converting"), format: Type.String() }),
  Type.Object({ event: Type.Literal("rasterizing") }),
  Type.Object({ event: Type.Literal("extracting"), page_count: Type.Integer() }),
  Type.Object({ event: Type.Literal("page"), page_number: Type.Integer(), completed: Type.Integer(), of: Type.Integer() }),
  Type.Object({ event: Type.Literal("result"), result: PlaygroundResult }),
  Type.Object({ event: Type.Literal("error"), status: Type.Integer(), error: Type.Ref("Error") }),
]);
type ProgressEvent =
  | { event: "started"; id: string; model: string; document: { format: string; kind: string; bytes: number } }
  | { event: "converting"; format: string }
  | { event: "rasterizing" }
  | { event: "extracting"; page_count: number }
  | { event: "page"; page_number: number; completed: number; of: number };

/** A normalised request, whichever body it came in. */
interface PlaygroundInput {
  source: { kind: "url"; url: string } | { kind: "base64"; base64: string } | { kind: "upload"; bytes: Buffer };
  mimeType?: string;
  filename?: string;
  model?: string;
  strategy: { strategy?: string; param: string };
  options: ReturnType<typeof ocrOptions>;
  includeImages: boolean;
}

/** The uploaded file's own name and type, kept beside the body (the body holds the bytes only). */
const uploads = new WeakMap<FastifyRequest, { filename: string; mimetype: string }>();

export default function register(app: App, deps: EdgeDeps): void {
  // Multipart is parsed only in this scope: every other route keeps the
  // JSON-only parser (a non-JSON body elsewhere stays 415).
  void app.register(async (scope) => {
    const fileLimit = Math.min(deps.documents.maxBytes, deps.bodyLimitBytes);
    await scope.register(multipart, {
      limits: { fileSize: fileLimit, files: 1, fields: 20, fieldSize: 16 * 1024, parts: 21, headerPairs: 100 },
    });
    // A refusal before the body is read (rate limit, permission) closes the
    // connection mid-upload, and HTTP clients then report a broken pipe instead
    // of the answer. For a caller whose key is valid, the rest of an upload of
    // allowed size is read and dropped first, so "429, retry in 17 s" arrives
    // as such. Anonymous and oversized requests are still cut off.
    const drainLimit = Math.max(deps.bodyLimitBytes, fileLimit + 1024 * 1024);
    scope.addHook("onError", async (req) => {
      if (!req.raw.complete && req.principal) await discardBody(req.raw, drainLimit, DRAIN_TIMEOUT_MS);
    });

    scope.post(
      PLAYGROUND_PATH,
      {
        config: { permissions: ["playground:write"] },
        // Parse the form before validation so the same schema machinery (and the same 400s) applies to it.
        preValidation: async (req) => {
          if (req.isMultipart()) req.body = await readMultipart(req, fileLimit);
        },
        schema: {
          summary: "Process one document for the playground: page images, text, tables, timings and cost",
          description:
            "A file (multipart/form-data, field `file`) or JSON with exactly one of url/base64; office documents are converted automatically. Billed like /v1/ocr. " +
            "With `Accept: application/x-ndjson` the answer streams progress events (started, converting|rasterizing, extracting, page…) and ends with a `result` or `error` event; " +
            "errors found before the hold is taken (validation, format, 402) are plain HTTP errors either way. See docs/playground.md.",
          tags: ["Playground"],
          security: [{ bearer: [] }],
          body: { content: { "application/json": { schema: JsonBody }, "multipart/form-data": { schema: MultipartBody } } } as never,
          response: {
            200: {
              description: "The result (JSON), or the event stream (NDJSON) when asked for with Accept.",
              content: { "application/json": { schema: PlaygroundResult }, [NDJSON]: { schema: PlaygroundEvent } },
            },
            ...errorResponses,
            402: Type.Ref("Error"),
            413: Type.Ref("Error"),
            500: Type.Ref("Error"),
            502: Type.Ref("Error"),
            503: Type.Ref("Error"),
          } as never,
        },
      },
      async (req, reply) => {
        const started = Date.now();
        const principal = principalOf(req);
        const input = req.isMultipart() ? fromMultipart(req.body as MultipartBody, uploads.get(req)) : fromJson(req.body as JsonBody);
        const extraction = extractionOf(deps);
        const resolved = await extraction.resolveModel({ model: input.model, strategy: input.strategy.strategy, strategyParam: input.strategy.param });
        const doc = await loadInput(deps, input);
        const pageCount = await countPages(deps, doc);
        const loadMs = Date.now() - started;
        const modelHold = (pages: number) => chargeComponent(estimateCostCents(resolved.model, pages, resolved.maxCompletionTokens)).chargedCents;
        // As /v1/ocr: an office document holds its conversion and one page, then the real page count.
        const conversionHold = pageCount === null ? conversionHoldCents(deps) : 0;
        const estimate = modelHold(pageCount ?? 1) + conversionHold;

        const stream = acceptsNdjson(req) ? new EventStream(reply) : null;
        // A client that goes away (the tab closed) stops the work; what was billed until then is charged.
        const abort = new AbortController();
        let clientGone = false;
        const onClose = () => {
          if (reply.raw.writableFinished) return;
          clientGone = true;
          abort.abort();
        };
        reply.raw.on("close", onClose);
        const timings = { conversionMs: 0, extractionMs: 0, computeMs: null as number | null };
        try {
          const outcome = await runPaid(deps.billing, principal, { endpoint: PLAYGROUND_PATH, model: resolved.model.id, estimateCents: estimate }, async ({ meter, requestId, raiseHold }) => {
            try {
              stream?.send({ event: "started", id: requestId, model: resolved.model.id, document: { format: formatOf(doc), kind: doc.sniffed.kind, bytes: doc.bytes.length } });
              const t0 = Date.now();
              let pages: PageInput[];
              if (doc.sniffed.kind === "office") {
                stream?.send({ event: "converting", format: formatOf(doc) });
                const converted = await conversionOf(deps).convert(
                  { document: doc.bytes, mimeType: doc.sniffed.mimeType, ...(input.filename ? { filename: input.filename } : {}), maxPages: deps.documents.maxPages, requestId },
                  abort.signal,
                );
                meter.conversion(converted.computeMillis);
                timings.computeMs = converted.computeMillis;
                pages = converted.pages.map((p) => ({ pageNumber: p.pageNumber, image: p.png, mimeType: "image/png" }));
              } else {
                if (doc.sniffed.kind === "pdf") stream?.send({ event: "rasterizing" });
                pages = await pageImages(deps, doc, abort.signal, { meter, requestId });
              }
              // An image is its own page: nothing was converted (a busy clock can still tick 1 ms).
              timings.conversionMs = doc.sniffed.kind === "image" ? 0 : Date.now() - t0;
              if (pageCount === null) await raiseHold(modelHold(pages.length) + conversionHold);
              stream?.send({ event: "extracting", page_count: pages.length });
              const t1 = Date.now();
              let completed = 0;
              const done = await mapLimit(pages, deps.documents.pageConcurrency, async (page) => {
                const r = await extraction.extractPage(resolved.model.id, page, input.options, abort.signal);
                meter.modelCall(r.providerCostCents, { prompt: r.result.usage.promptTokens, completion: r.result.usage.completionTokens });
                meter.pages++;
                stream?.send({ event: "page", page_number: page.pageNumber, completed: ++completed, of: pages.length });
                return { page, r };
              });
              timings.extractionMs = Date.now() - t1;
              return done;
            } catch (err) {
              abort.abort();
              // The usage log records what happened, not the failure of the call the disconnect cancelled.
              if (clientGone) throw new FolioError("invalid_request", "the client closed the connection before the result was ready; the work was cancelled", { cause: err });
              throw err;
            }
          });

          const result = await buildResult({ outcome, resolved, doc, input, timings: { ...timings, loadMs, totalMs: Date.now() - started } });
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

const DRAIN_TIMEOUT_MS = 30_000;

/** Reads and drops the rest of a request body, unless it is over `limit` bytes or takes over `timeoutMs`. */
async function discardBody(raw: FastifyRequest["raw"], limit: number, timeoutMs: number): Promise<void> {
  const declared = Number(raw.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return;
  await new Promise<void>((resolve) => {
    let seen = 0;
    const done = () => {
      clearTimeout(timer);
      raw.off("data", onData).off("end", done).off("error", done).off("close", done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limit) {
        raw.pause();
        done();
      }
    };
    const timer = setTimeout(() => {
      raw.pause();
      done();
    }, timeoutMs);
    raw.on("data", onData).once("end", done).once("error", done).once("close", done);
    raw.resume();
  });
}

/** Reads the form: at most one file (field `file`) and short text fields, within the limits. */
async function readMultipart(req: FastifyRequest, fileLimit: number): Promise<Record<string, unknown>> {
  const body: Record<string, unknown> = {};
  try {
    for await (const part of req.parts()) {
      if (part.type === "file") {
        if (part.fieldname !== "file") {
          await part.toBuffer().catch(() => undefined);
          throw new FolioError("invalid_request", `unknown field '${part.fieldname}'; send the document in the field 'file'`, { param: part.fieldname });
        }
        body.file = await part.toBuffer();
        uploads.set(req, { filename: part.filename, mimetype: part.mimetype });
      } else {
        if (body[part.fieldname] !== undefined) throw new FolioError("invalid_request", `field '${part.fieldname}' is given more than once`, { param: part.fieldname });
        body[part.fieldname] = String(part.value);
      }
    }
  } catch (err) {
    throw multipartError(err, fileLimit);
  }
  return body;
}

/** The multipart plugin's own errors, as domain errors with the one error shape. */
function multipartError(err: unknown, fileLimit: number): unknown {
  if (err instanceof FolioError) return err;
  const code = (err as { code?: string }).code;
  switch (code) {
    case "FST_REQ_FILE_TOO_LARGE":
      return new FolioError("payload_too_large", `the file is larger than ${fileLimit} bytes (FOLIO_MAX_DOCUMENT_BYTES)`, { param: "file" });
    case "FST_FILES_LIMIT_REACHED":
      return new FolioError("invalid_request", "send one file per request", { param: "file" });
    case "FST_FIELDS_LIMIT_REACHED":
    case "FST_PARTS_LIMIT_REACHED":
      return new FolioError("invalid_request", "the form has too many fields");
    case "FST_PROTO_VIOLATION":
      return new FolioError("invalid_request", "form field names must not be reserved words");
  }
  const message = (err as { message?: string }).message ?? "";
  if (/field value too large|fieldSize/i.test(message)) return new FolioError("invalid_request", "a form field is too long (16 KiB at most)");
  return new FolioError("invalid_request", `the multipart body could not be read: ${message || "malformed"}`);
}

function fromJson(b: JsonBody): PlaygroundInput {
  if ((b.url === undefined) === (b.base64 === undefined)) {
    throw new FolioError("invalid_request", "send exactly one of 'url' or 'base64'", { param: b.url === undefined ? "base64" : "url" });
  }
  return {
    source: b.url !== undefined ? { kind: "url", url: b.url } : { kind: "base64", base64: b.base64! },
    ...(b.mime_type !== undefined ? { mimeType: b.mime_type } : {}),
    ...(b.filename !== undefined ? { filename: b.filename } : {}),
    ...(b.model !== undefined ? { model: b.model } : {}),
    strategy: strategyOf(b),
    options: ocrOptions(b.options),
    includeImages: b.include_images ?? true,
  };
}

function fromMultipart(b: MultipartBody, upload: { filename: string; mimetype: string } | undefined): PlaygroundInput {
  if ((b.file === undefined) === (b.url === undefined)) {
    throw new FolioError("invalid_request", "send exactly one of a 'file' part or a 'url' field", { param: b.file === undefined ? "file" : "url" });
  }
  // Browsers label unknown files application/octet-stream: no hint at all is better than that one.
  const partType = upload?.mimetype && upload.mimetype !== "application/octet-stream" ? upload.mimetype : undefined;
  const mimeType = b.mime_type ?? partType;
  const filename = b.filename ?? (upload?.filename || undefined);
  return {
    source: b.file !== undefined ? { kind: "upload", bytes: b.file } : { kind: "url", url: b.url! },
    ...(mimeType !== undefined ? { mimeType } : {}),
    ...(filename !== undefined ? { filename } : {}),
    ...(b.model !== undefined ? { model: b.model } : {}),
    strategy: strategyOf({ ...(b.strategy !== undefined ? { strategy: b.strategy } : {}) }),
    options: ocrOptions({
      extract_tables: b.extract_tables === "true",
      ...(b.language !== undefined ? { language: b.language } : {}),
      ...(b.output_format !== undefined ? { output_format: b.output_format } : {}),
    }),
    includeImages: b.include_images !== "false",
  };
}

async function loadInput(deps: EdgeDeps, input: PlaygroundInput): Promise<LoadedDocument> {
  const s = input.source;
  if (s.kind === "url") return loadDocument(deps, { url: s.url, ...(input.mimeType ? { mimeType: input.mimeType } : {}) });
  if (s.kind === "base64") return loadDocument(deps, { base64: s.base64, ...(input.mimeType ? { mimeType: input.mimeType } : {}) });
  if (s.bytes.length > deps.documents.maxBytes) {
    throw new FolioError("payload_too_large", `document is ${s.bytes.length} bytes; the limit is ${deps.documents.maxBytes}`, { param: "file" });
  }
  return { bytes: s.bytes, sniffed: await sniffDocument(s.bytes, input.mimeType), param: "file" };
}

function acceptsNdjson(req: FastifyRequest): boolean {
  return (req.headers.accept ?? "").split(",").some((t) => t.split(";")[0]!.trim().toLowerCase() === NDJSON);
}

/** PNG, PDF, DOCX…: the label people know the format by. */
function formatOf(doc: LoadedDocument): string {
  if (doc.sniffed.officeFormat) return doc.sniffed.officeFormat;
  if (doc.sniffed.kind === "pdf") return "PDF";
  return (doc.sniffed.mimeType.split("/")[1] ?? "image").toUpperCase();
}

/**
 * The NDJSON answer: opened (status 200, headers) by the first event, which
 * is only sent once the hold is taken, so refusals before it stay plain HTTP
 * errors with their own status.
 */
class EventStream {
  private body: PassThrough | null = null;
  constructor(private readonly reply: FastifyReply) {}

  get open(): boolean {
    return this.body !== null;
  }

  send(event: ProgressEvent): void {
    this.line(event);
  }

  end(event: { event: "result"; result: PlaygroundResult } | { event: "error"; status: number; error: Record<string, unknown> }): void {
    this.line(event);
    if (!this.body!.destroyed) this.body!.end();
  }

  private line(event: unknown): void {
    if (!this.body) {
      this.body = new PassThrough();
      void this.reply
        .code(200)
        .header("content-type", `${NDJSON}; charset=utf-8`)
        .header("cache-control", "no-store")
        // Proxies (nginx) must pass each event on at once.
        .header("x-accel-buffering", "no")
        .send(this.body);
    }
    // The client may be gone (its close aborted the work): nothing to tell it then.
    if (!this.body.destroyed && !this.body.writableEnded) this.body.write(JSON.stringify(event) + "\n");
  }
}

type Extracted = { page: PageInput; r: Awaited<ReturnType<NonNullable<EdgeDeps["extraction"]>["extractPage"]>> };

async function buildResult(o: {
  outcome: Awaited<ReturnType<typeof runPaid<Extracted[]>>>;
  resolved: { model: { id: string }; strategy?: string };
  doc: LoadedDocument;
  input: PlaygroundInput;
  timings: { loadMs: number; conversionMs: number; extractionMs: number; totalMs: number; computeMs: number | null };
}): Promise<PlaygroundResult> {
  const { outcome, doc, input } = o;
  let inlineBudget = MAX_INLINE_IMAGE_BYTES;
  const pages: PlaygroundResult["result"]["pages"] = [];
  for (const { page, r } of outcome.result) {
    let image: PlaygroundResult["result"]["pages"][number]["image"] = null;
    let omitted: "not_requested" | "response_image_limit" | undefined = input.includeImages ? undefined : "not_requested";
    if (input.includeImages) {
      const shown = await displayable(page);
      if (shown.bytes.length <= inlineBudget) {
        inlineBudget -= shown.bytes.length;
        image = { url: `data:${shown.mimeType};base64,${shown.bytes.toString("base64")}`, mime_type: shown.mimeType, bytes: shown.bytes.length };
      } else {
        // Past the cap no further page gets its image, so the cut is one place, not scattered.
        omitted = "response_image_limit";
        inlineBudget = -1;
      }
    }
    pages.push({
      page_number: page.pageNumber,
      text: r.result.text,
      ...(r.result.confidence !== undefined ? { confidence: r.result.confidence } : {}),
      tables: r.result.tables.map((t) => ({ ...t, page_number: page.pageNumber })),
      image,
      ...(omitted ? { image_omitted: omitted } : {}),
    });
  }
  const tables: Table[] = pages.flatMap((p) => p.tables);
  const confidences = pages.map((p) => p.confidence);
  const allScored = confidences.length > 0 && confidences.every((c) => c !== undefined);
  const tokens = outcome.result.reduce((u, { r }) => ({ p: u.p + r.result.usage.promptTokens, c: u.c + r.result.usage.completionTokens }), { p: 0, c: 0 });
  const charge = (c: ComponentCharge) => ({
    provider_cost_cents: centsToNumber(c.providerCostCents),
    platform_fee_cents: centsToNumber(c.platformFeeCents),
    total_cost_cents: c.chargedCents,
  });
  const components: PlaygroundResult["cost"]["components"] = [];
  if (outcome.components.model) components.push({ component: "model", ...charge(outcome.components.model), pages: pages.length });
  for (const c of outcome.components.conversion) {
    components.push({ component: "conversion", ...charge(c), ...(o.timings.computeMs !== null ? { compute_time_ms: o.timings.computeMs } : {}) });
  }
  const total = charge(outcome.charge);
  const sniffedKind = doc.sniffed.kind === "text" ? "office" : doc.sniffed.kind;
  return {
    id: outcome.requestId,
    object: "playground.result",
    created: Math.floor(Date.now() / 1000),
    model: o.resolved.model.id,
    ...(o.resolved.strategy && input.model === undefined ? { strategy: o.resolved.strategy } : {}),
    document: {
      ...(input.filename !== undefined ? { filename: input.filename } : {}),
      mime_type: doc.sniffed.mimeType,
      format: formatOf(doc),
      kind: sniffedKind,
      bytes: doc.bytes.length,
      converted: doc.sniffed.kind === "office",
    },
    result: {
      text: pages.map((p) => p.text).join("\n\n"),
      pages,
      tables,
      ...(allScored ? { confidence: (confidences as number[]).reduce((a, b) => a + b, 0) / confidences.length } : {}),
    },
    timings: { load_ms: o.timings.loadMs, conversion_ms: o.timings.conversionMs, extraction_ms: o.timings.extractionMs, total_ms: o.timings.totalMs },
    usage: {
      pages_processed: pages.length,
      prompt_tokens: tokens.p,
      completion_tokens: tokens.c,
      tokens_used: tokens.p + tokens.c,
      ...total,
      processing_time_ms: outcome.processingTimeMs,
    },
    cost: { currency: "USD", components, ...total, formatted: `$${(total.total_cost_cents / 100).toFixed(2)}` },
  };
}

/**
 * The page image as a browser can show it: what the model read, except TIFF
 * (which browsers do not display), re-encoded as PNG.
 */
async function displayable(page: PageInput): Promise<{ bytes: Buffer; mimeType: string }> {
  if (page.mimeType !== "image/tiff") return { bytes: page.image, mimeType: page.mimeType };
  const sharp = (await import("sharp")).default;
  return { bytes: await sharp(page.image, { pages: 1 }).png().toBuffer(), mimeType: "image/png" };
}
