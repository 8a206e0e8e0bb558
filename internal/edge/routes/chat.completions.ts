/**
 * POST /v1/chat/completions: the documented chat-completions shape (text,
 * image_url and file parts, the file-parser plugin), answered by a catalog
 * model. Images given by URL are fetched here (SSRF-safe) and sent on as data;
 * PDFs become page images unless the PDF parser plugin is asked for; office
 * documents are converted first.
 *
 * With `stream: true` the answer is a server-sent event stream of
 * `chat.completion.chunk` objects (`../chat-stream.ts`): billed like the
 * answer in one piece, from what the provider reported when the stream ends.
 */
import { Type } from "typebox";
import { PRICE_TEXT, holdCents, runPaid, type PaidRequest } from "../../billing/index.ts";
import type { ChatInput, ChatMessage, ChatPart } from "../../contracts/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { paid } from "../schemas.ts";
import { idempotent } from "../idempotency.ts";
import { countPages, loadDocument, pageImages, type LoadedDocument } from "../pipeline.ts";
import { extractionOf } from "../services.ts";
import { ChatChunk, FolioCost, folioCost, streamChat } from "../chat-stream.ts";
import { EVENT_STREAM } from "../sse.ts";

const TextPart = Type.Object({ type: Type.Literal("text"), text: Type.String({ maxLength: 1_000_000 }) });
const ImagePart = Type.Object({
  type: Type.Literal("image_url"),
  image_url: Type.Object({ url: Type.String({ minLength: 1, description: "Public http(s) URL or data:<mime>;base64,<data>." }), detail: Type.Optional(Type.String()) }),
});
const FilePart = Type.Object({
  type: Type.Literal("file"),
  file: Type.Object({
    filename: Type.Optional(Type.String({ maxLength: 500 })),
    file_data: Type.String({ minLength: 1, description: "Public http(s) URL of the file, or a data URL." }),
  }),
});

const Body = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 300, description: "A catalog model id or folio/<strategy>." }),
  messages: Type.Array(
    Type.Object({
      role: Type.String({ minLength: 1, maxLength: 50 }),
      content: Type.Union([Type.String({ maxLength: 1_000_000 }), Type.Array(Type.Union([TextPart, ImagePart, FilePart]), { maxItems: 200 })]),
    }),
    { minItems: 1, maxItems: 200 },
  ),
  plugins: Type.Optional(
    Type.Array(Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }), pdf: Type.Optional(Type.Object({ engine: Type.String({ minLength: 1, maxLength: 100 }) })) }), { maxItems: 10 }),
  ),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 200_000 })),
  stream: Type.Optional(
    Type.Boolean({
      description: "true: the answer is a text/event-stream of chat.completion.chunk objects ending with `data: [DONE]` (docs/ocr.md, Streaming).",
    }),
  ),
  stream_options: Type.Optional(
    Type.Object({
      include_usage: Type.Optional(
        Type.Boolean({ description: "With stream: a last chunk (choices: []) carries usage and the folio cost fields, as the answer in one piece reports them." }),
      ),
    }),
  ),
});

const Completion = Type.Object({
  id: Type.String(),
  object: Type.Literal("chat.completion"),
  created: Type.Integer(),
  model: Type.String(),
  choices: Type.Array(
    Type.Object({ index: Type.Integer(), message: Type.Object({ role: Type.Literal("assistant"), content: Type.String() }), finish_reason: Type.String() }),
  ),
  usage: Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Integer() }),
  folio: FolioCost,
});

type Part = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } } | { type: "file"; file: { filename?: string; file_data: string } };

export default function register(app: App, deps: EdgeDeps): void {
  const route = paid(["chat:write"], {
    summary: "Chat-style extraction (OpenAI-compatible request shape)",
    description:
      "Content parts: text, image_url (public URL or data URL), file (filename, file_data = public URL or data URL). Office documents given as data URLs are converted to page images; the cost is in folio.conversion_cost_cents. plugins [{id: 'file-parser', pdf: {engine}}] sends PDFs to the provider's PDF parser, billed at " +
      `${PRICE_TEXT.parser}. ` +
      "stream: true answers text/event-stream: chat.completion.chunk objects as the model produces them (a local engine: one per page as it is read), " +
      "with stream_options.include_usage a last chunk with usage and the folio cost fields, then `data: [DONE]`; a failure after the stream began is an `{error}` event. " +
      "Errors found before the first byte are plain HTTP errors either way; a silent stream gets a `: keep-alive` comment at least every 15 s. See docs/ocr.md.",
    tags: ["Chat"],
    body: Body,
    response: {
      200: {
        description: "The completion (JSON), or with stream: true the event stream.",
        content: { "application/json": { schema: Completion }, [EVENT_STREAM]: { schema: ChatChunk } },
      },
    },
  }, [402, 500, 502, 503]);
  app.post(
    "/v1/chat/completions",
    {
      ...route,
      // An Idempotency-Key replay of a streamed answer is the stream again (docs/idempotency.md).
      config: { ...route.config, replayType: (body: unknown, status: number) => (status === 200 && isStreamed(body) ? `${EVENT_STREAM}; charset=utf-8` : undefined) },
    },
    async (req, reply) => {
      const principal = principalOf(req);
      const body = req.body;
      const extraction = extractionOf(deps);
      const resolved = await extraction.resolveModel({ model: body.model });
      const parser = body.plugins?.find((p) => p.id === "file-parser");
      if (parser && resolved.model.source === "local") {
        throw new FolioError("invalid_request", `the file-parser plugin runs at the upstream provider; ${resolved.model.id} is a local engine`, { param: "plugins" });
      }

      // Gather every attachment first: sizes, types and page counts are known before the hold.
      interface Pending { msg: number; part: Part; doc?: LoadedDocument; pages: number; parserPages: number; office?: boolean }
      const pending: Pending[] = [];
      for (const [mi, m] of body.messages.entries()) {
        const parts: Part[] = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content as Part[]);
        for (const [pi, part] of parts.entries()) {
          if (part.type === "text") {
            pending.push({ msg: mi, part, pages: 0, parserPages: 0 });
            continue;
          }
          const param = `messages[${mi}].content[${pi}].${part.type === "image_url" ? "image_url.url" : "file.file_data"}`;
          const url = part.type === "image_url" ? part.image_url.url : part.file.file_data;
          const doc = await loadDocument(deps, url.startsWith("data:") ? { dataUrl: url } : { url }, { param });
          // An office document is converted inside the paid work; it counts as one page until then.
          const pages = (await countPages(deps, doc)) ?? 1;
          const toParser = parser !== undefined && doc.sniffed.kind === "pdf";
          pending.push({ msg: mi, part, doc, pages: toParser ? 0 : pages, parserPages: toParser ? pages : 0, office: doc.sniffed.kind === "office" });
        }
      }
      const parserPages = pending.reduce((n, p) => n + p.parserPages, 0);
      const checkPageLimit = (images: number, converted: string) => {
        if (images + parserPages <= deps.documents.maxPages) return;
        throw new FolioError("invalid_request", `the attachments add up to ${images + parserPages} pages${converted}; the limit per request is ${deps.documents.maxPages}`, {
          param: "messages",
          extra: { page_count: images + parserPages, max_pages: deps.documents.maxPages },
        });
      };
      const imageCount = pending.reduce((n, p) => n + p.pages, 0);
      checkPageLimit(imageCount, "");
      const conversions = pending.filter((p) => p.office).length;
      const holdFor = (images: number) =>
        holdCents({
          model: resolved.model,
          pages: images,
          maxCompletionTokens: body.max_tokens ?? resolved.maxCompletionTokens,
          conversions,
          conversionDeadlineMs: deps.conversionDeadlineMs,
          parserPages,
        });

      let pagesSent = imageCount + parserPages;
      /**
       * The chat as the extraction service takes it, built inside the paid
       * work: office documents converted, PDFs rendered, the hold raised to
       * the real page count.
       */
      const chatInput = async ({ meter, requestId, raiseHold }: PaidRequest, signal: AbortSignal): Promise<ChatInput> => {
        const messages: ChatMessage[] = body.messages.map((m) => ({ role: m.role, content: [] as ChatPart[] }));
        for (const p of pending) {
          const content = messages[p.msg]!.content;
          if (p.part.type === "text") content.push({ kind: "text", text: p.part.text });
          else if (p.parserPages > 0) content.push({ kind: "file", file: { data: p.doc!.bytes, mimeType: "application/pdf", filename: p.part.type === "file" ? p.part.file.filename : undefined } });
          else {
            const images = await pageImages(deps, p.doc!, signal, { meter, requestId });
            if (p.office) p.pages = images.length;
            for (const page of images) content.push({ kind: "image", image: { data: page.image, mimeType: page.mimeType } });
          }
        }
        if (conversions > 0) {
          const images = pending.reduce((n, p) => n + p.pages, 0);
          checkPageLimit(images, " once converted");
          pagesSent = images + parserPages;
          await raiseHold(holdFor(images));
        }
        return { model: resolved.model.id, messages, plugins: parser ? [{ id: parser.id, pdfEngine: parser.pdf?.engine }] : [], maxTokens: body.max_tokens };
      };

      if (body.stream) {
        return streamChat(deps, req, reply, {
          payer: principal,
          model: resolved.model.id,
          estimateCents: holdFor(imageCount),
          includeUsage: body.stream_options?.include_usage === true,
          parserPages,
          pagesSent: () => pagesSent,
          chatInput,
        });
      }

      const outcome = await runPaid(
        deps.billing,
        principal,
        {
          endpoint: "/v1/chat/completions",
          model: resolved.model.id,
          estimateCents: holdFor(imageCount),
          answer: (o) => ({
            id: o.requestId,
            object: "chat.completion" as const,
            created: Math.floor(Date.now() / 1000),
            model: o.result.model || resolved.model.id,
            choices: [{ index: 0, message: { role: "assistant" as const, content: o.result.content }, finish_reason: o.result.finishReason || "stop" }],
            usage: { prompt_tokens: o.result.promptTokens, completion_tokens: o.result.completionTokens, total_tokens: o.result.promptTokens + o.result.completionTokens },
            folio: folioCost(o.charge, o.components, pagesSent),
          }),
          // The route answers in two content types: the copy kept for a key is the JSON one's bytes.
          ...idempotent(deps, req, reply, (answer) => String(reply.serializeInput(answer as Record<string, unknown>, "200", "application/json"))),
        },
        async (paidRequest: PaidRequest) => {
          const abort = new AbortController();
          const input = await chatInput(paidRequest, abort.signal);
          const r = await extraction.chat(input, abort.signal);
          paidRequest.meter.modelCall(r.providerCostCents, { prompt: r.promptTokens, completion: r.completionTokens });
          if (parserPages) paidRequest.meter.parserPages(parserPages);
          paidRequest.meter.pages = pagesSent;
          return r;
        },
      );
      return outcome.answer;
    },
  );
}

/** True for a chat body that asks for a stream. */
function isStreamed(body: unknown): boolean {
  return typeof body === "object" && body !== null && (body as { stream?: unknown }).stream === true;
}
