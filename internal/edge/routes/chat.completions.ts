/**
 * POST /v1/chat/completions: the documented chat-completions shape (text,
 * image_url and file parts, the file-parser plugin), answered by a catalog
 * model. Images given by URL are fetched here (SSRF-safe) and sent on as data;
 * PDFs become page images unless the PDF parser plugin is asked for; office
 * documents are converted first.
 */
import { Type } from "typebox";
import { PRICE_TEXT, chargeFields, holdCents, runPaid, type PaidRequest } from "../../billing/index.ts";
import type { ChatMessage, ChatPart } from "../../contracts/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { paid } from "../schemas.ts";
import { idempotent } from "../idempotency.ts";
import { countPages, loadDocument, pageImages, type LoadedDocument } from "../pipeline.ts";
import { extractionOf } from "../services.ts";

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
  stream: Type.Optional(Type.Boolean()),
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
  folio: Type.Object({
    provider_cost_cents: Type.Number(),
    platform_fee_cents: Type.Number(),
    conversion_cost_cents: Type.Number(),
    total_cost_cents: Type.Number(),
    pages_processed: Type.Integer(),
  }),
});

type Part = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } } | { type: "file"; file: { filename?: string; file_data: string } };

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    "/v1/chat/completions",
    paid(["chat:write"], {
      summary: "Chat-style extraction (OpenAI-compatible request shape)",
      description:
        "Content parts: text, image_url (public URL or data URL), file (filename, file_data = public URL or data URL). Office documents given as data URLs are converted to page images; the cost is in folio.conversion_cost_cents. plugins [{id: 'file-parser', pdf: {engine}}] sends PDFs to the provider's PDF parser, billed at " +
        `${PRICE_TEXT.parser}. Streaming is not supported.`,
      tags: ["Chat"],
      body: Body,
      response: { 200: Completion },
    }, [402, 500, 502, 503]),
    async (req, reply) => {
      const principal = principalOf(req);
      const body = req.body;
      if (body.stream) throw new FolioError("invalid_request", "streaming is not supported; send stream: false or omit it", { param: "stream" });
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
            folio: {
              ...chargeFields(o.charge),
              conversion_cost_cents: o.components.conversion.reduce((n, x) => n + x.chargedCents, 0),
              pages_processed: pagesSent,
            },
          }),
          ...idempotent(deps, req, reply),
        },
        async ({ meter, requestId, raiseHold }: PaidRequest) => {
        const abort = new AbortController();
        const messages: ChatMessage[] = body.messages.map((m) => ({ role: m.role, content: [] as ChatPart[] }));
        for (const p of pending) {
          const content = messages[p.msg]!.content;
          if (p.part.type === "text") content.push({ kind: "text", text: p.part.text });
          else if (p.parserPages > 0) content.push({ kind: "file", file: { data: p.doc!.bytes, mimeType: "application/pdf", filename: p.part.type === "file" ? p.part.file.filename : undefined } });
          else {
            const images = await pageImages(deps, p.doc!, abort.signal, { meter, requestId });
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
        const r = await extraction.chat({ model: resolved.model.id, messages, plugins: parser ? [{ id: parser.id, pdfEngine: parser.pdf?.engine }] : [], maxTokens: body.max_tokens }, abort.signal);
        meter.modelCall(r.providerCostCents, { prompt: r.promptTokens, completion: r.completionTokens });
        if (parserPages) meter.parserPages(parserPages);
        meter.pages = pagesSent;
        return r;
        },
      );
      return outcome.answer;
    },
  );
}

