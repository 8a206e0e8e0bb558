/**
 * The extraction service's domain: catalog queries, model resolution, page
 * extraction and chat, with the provider cost of every call. Transport-free;
 * `grpc.ts` exposes it over gRPC.
 */
import { inSpan } from "../platform/telemetry/index.ts";
import { Decimal, modelCostCents, pagesWork } from "../billing/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { Catalog } from "./catalog/catalog.ts";
import { UpstreamEngine, type UpstreamClient, type UpstreamStreamResult } from "./engines/upstream.ts";
import type {
  CatalogModel,
  ChatAttachment,
  ChatInput,
  ChatOutput,
  ChatPart,
  ChatStreamEnd,
  ChatStreamEvent,
  Engine,
  ExtractOptions,
  GenerationCost,
  PageExtraction,
  PageInput,
  PageResult,
} from "./types.ts";

export interface ExtractionServiceOptions {
  catalog: Catalog;
  /** Local engines by model id (always in the catalog). */
  local: ReadonlyMap<string, Engine>;
  /** Present when an upstream is configured. */
  upstream?: UpstreamClient;
  /** max_tokens sent upstream per page; also what holds assume. */
  maxCompletionTokens: number;
  /** Told about every upstream call (metrics): model, outcome, seconds, tokens and exact provider cents. */
  onUpstreamCall?: (call: UpstreamCallRecord) => void;
}

export interface UpstreamCallRecord {
  model: string;
  outcome: "ok" | "error";
  seconds: number;
  promptTokens: number;
  completionTokens: number;
  providerCostCents: number;
}

export class ExtractionService {
  constructor(private readonly opts: ExtractionServiceOptions) {}

  get catalog(): Catalog {
    return this.opts.catalog;
  }

  get maxCompletionTokens(): number {
    return this.opts.maxCompletionTokens;
  }

  private model(id: string): CatalogModel {
    const m = this.opts.catalog.get(id);
    if (!m) throw new FolioError("unsupported_model", `model '${id}' is not in the current catalog; see GET /v1/models`, { param: "model" });
    return m;
  }

  private engine(model: CatalogModel): Engine {
    if (model.source === "local") {
      const e = this.opts.local.get(model.id);
      if (!e) throw new FolioError("internal_error", `local engine ${model.id} is listed but not loaded`);
      return e;
    }
    if (!this.opts.upstream) throw new FolioError("unsupported_model", `model '${model.id}' needs the upstream, which is not configured`, { param: "model" });
    return new UpstreamEngine(model, this.opts.upstream, this.opts.maxCompletionTokens);
  }

  extractPage(modelId: string, page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageExtraction> {
    return inSpan("extraction.page", { "folio.model": modelId, "folio.page": page.pageNumber }, async (span) => {
      const r = await this.extract(modelId, page, options, signal);
      span.setAttributes({
        "folio.provider_cost_cents": r.providerCostCents.toNumber(),
        "folio.cost_source": r.costSource,
        "folio.prompt_tokens": r.result.usage.promptTokens,
        "folio.completion_tokens": r.result.usage.completionTokens,
      });
      return r;
    });
  }

  private async extract(modelId: string, page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageExtraction> {
    const model = this.model(modelId);
    if (model.source !== "upstream") return this.priced(model, await this.engine(model).extractPage(page, options, signal));
    const started = performance.now();
    try {
      const r = this.priced(model, await this.engine(model).extractPage(page, options, signal));
      this.upstreamCall(model.id, "ok", started, r.result.usage.promptTokens, r.result.usage.completionTokens, r.providerCostCents.toNumber());
      return r;
    } catch (err) {
      this.upstreamCall(model.id, "error", started, 0, 0, 0);
      throw err;
    }
  }

  private upstreamCall(model: string, outcome: "ok" | "error", started: number, promptTokens: number, completionTokens: number, providerCostCents: number): void {
    this.opts.onUpstreamCall?.({ model, outcome, seconds: (performance.now() - started) / 1000, promptTokens, completionTokens, providerCostCents });
  }

  private priced(model: CatalogModel, result: PageResult): PageExtraction {
    if (result.usage.reportedCostCents) return { result, providerCostCents: result.usage.reportedCostCents, costSource: "reported" };
    const providerCostCents = modelCostCents(model.pricing, pagesWork(model, 1, { prompt: result.usage.promptTokens, completion: result.usage.completionTokens }));
    return { result, providerCostCents, costSource: "computed" };
  }

  /** The upstream client, or unsupported_model naming the model that needs it. */
  private upstreamFor(model: CatalogModel): UpstreamClient {
    if (!this.opts.upstream) throw new FolioError("unsupported_model", `model '${model.id}' needs the upstream, which is not configured`, { param: "model" });
    return this.opts.upstream;
  }

  /** The OpenAI-shaped request body of a chat (parts as data URLs, max_tokens always set: holds assume it). */
  private chatBody(model: CatalogModel, input: ChatInput): Record<string, unknown> {
    const body: Record<string, unknown> = {
      model: model.id,
      messages: input.messages.map((m) => ({ role: m.role, content: m.content.map(toOpenAiPart) })),
      max_tokens: input.maxTokens && input.maxTokens > 0 ? input.maxTokens : this.opts.maxCompletionTokens,
    };
    if (input.plugins.length) body.plugins = input.plugins.map((p) => ({ id: p.id, ...(p.pdfEngine ? { pdf: { engine: p.pdfEngine } } : {}) }));
    return body;
  }

  async chat(input: ChatInput, signal: AbortSignal): Promise<ChatOutput> {
    const model = this.model(input.model);
    if (model.source === "local") return this.localChat(model, input, signal);
    const upstream = this.upstreamFor(model);
    const body = this.chatBody(model, input);
    const started = performance.now();
    const r = await upstream.chatCompletion(body, signal).catch((err: unknown) => {
      this.upstreamCall(model.id, "error", started, 0, 0, 0);
      throw err;
    });
    const images = imageCount(input);
    const reported = r.reportedCostCents;
    const providerCostCents = reported ?? modelCostCents(model.pricing, { promptTokens: r.promptTokens, completionTokens: r.completionTokens, images, requests: 1, pages: 0 });
    this.upstreamCall(model.id, "ok", started, r.promptTokens, r.completionTokens, providerCostCents.toNumber());
    return {
      id: r.id,
      model: model.id,
      content: r.content,
      finishReason: r.finishReason,
      promptTokens: r.promptTokens,
      completionTokens: r.completionTokens,
      providerCostCents,
      costSource: reported ? "reported" : "computed",
    };
  }

  /**
   * A chat, streamed: an upstream model's answer relayed as the provider
   * sends it, a local engine's text page by page (each page's cost with it),
   * then the end with the call's usage and cost. Failures before the first
   * event throw; later ones are the end's `error`, with what was billed.
   */
  async *chatStream(input: ChatInput, signal: AbortSignal): AsyncGenerator<ChatStreamEvent> {
    const model = this.model(input.model);
    if (model.source === "local") {
      yield* this.localChatStream(model, input, signal);
      return;
    }
    const upstream = this.upstreamFor(model);
    const started = performance.now();
    let generationId = "";
    let end: ChatStreamEnd | undefined;
    try {
      for await (const e of upstream.chatCompletionStream(this.chatBody(model, input), signal)) {
        if (e.kind === "delta") {
          const first = generationId === "" && e.generationId !== "";
          if (first) generationId = e.generationId;
          yield { kind: "delta", content: e.content, ...(first ? { generationId } : {}) };
          continue;
        }
        end = await this.streamEnd(model, input, e.result, upstream, signal);
      }
    } catch (err) {
      this.upstreamCall(model.id, "error", started, 0, 0, 0);
      throw err;
    }
    if (!end) throw new FolioError("internal_error", "the upstream stream ended without its end");
    this.upstreamCall(model.id, end.error ? "error" : "ok", started, end.promptTokens, end.completionTokens, end.providerCostCents.toNumber());
    yield end;
  }

  /**
   * The end of an upstream stream, priced: the provider's reported cost, else
   * its tokens at the catalog's prices; a stream that broke before reporting
   * usage is priced by the provider's record of the generation (nothing when
   * it has none).
   */
  private async streamEnd(model: CatalogModel, input: ChatInput, r: UpstreamStreamResult, upstream: UpstreamClient, signal: AbortSignal): Promise<ChatStreamEnd> {
    const images = imageCount(input);
    let cost: { providerCostCents: Decimal; costSource: "reported" | "computed"; promptTokens: number; completionTokens: number };
    if (r.usageSeen) {
      const reported = r.reportedCostCents;
      cost = {
        providerCostCents: reported ?? modelCostCents(model.pricing, { promptTokens: r.promptTokens, completionTokens: r.completionTokens, images, requests: 1, pages: 0 }),
        costSource: reported ? "reported" : "computed",
        promptTokens: r.promptTokens,
        completionTokens: r.completionTokens,
      };
    } else {
      const record = r.id ? await this.generationCost(model.id, r.id, signal) : ({ found: false } as const);
      cost = record.found
        ? { providerCostCents: record.providerCostCents, costSource: "reported", promptTokens: record.promptTokens, completionTokens: record.completionTokens }
        : { providerCostCents: new Decimal(0), costSource: "computed", promptTokens: 0, completionTokens: 0 };
    }
    return {
      kind: "end",
      id: r.id,
      model: model.id,
      finishReason: r.finishReason,
      ...cost,
      pages: images,
      ...(r.error ? { error: { code: r.error.code, message: r.error.message, extra: r.error.extra } } : {}),
    };
  }

  /**
   * What the upstream billed for a generation, by its own record: asked when
   * a stream was cut (the caller's client went away) before its usage came.
   */
  async generationCost(modelId: string, generationId: string, signal: AbortSignal): Promise<GenerationCost> {
    const model = this.model(modelId);
    if (model.source !== "upstream") throw new FolioError("invalid_request", `${model.id} is a local engine; it has no upstream generations`, { param: "model" });
    const r = await this.upstreamFor(model).generationCost(generationId, signal);
    return r.found ? { found: true, promptTokens: r.promptTokens, completionTokens: r.completionTokens, providerCostCents: r.costCents } : r;
  }

  /** The page images a local engine reads from a chat; invalid_request for anything else. */
  private localImages(model: CatalogModel, input: ChatInput): ChatAttachment[] {
    const images = input.messages.flatMap((m) => m.content.flatMap((c) => (c.kind === "image" ? [c.image] : [])));
    if (images.some((i) => !i.mimeType.startsWith("image/")) || input.messages.some((m) => m.content.some((c) => c.kind === "file"))) {
      throw new FolioError("invalid_request", `${model.id} reads images only; documents are converted to page images first`, { param: "messages" });
    }
    if (images.length === 0) throw new FolioError("invalid_request", `${model.id} extracts text from images: attach at least one image_url or file part`, { param: "messages" });
    return images;
  }

  /** A local engine's streamed chat: each page's text (blank line between pages) and cost as soon as it is read. */
  private async *localChatStream(model: CatalogModel, input: ChatInput, signal: AbortSignal): AsyncGenerator<ChatStreamEvent> {
    const engine = this.engine(model);
    const images = this.localImages(model, input);
    for (const [i, image] of images.entries()) {
      const r = await engine.extractPage({ pageNumber: i + 1, image: image.data, mimeType: image.mimeType }, { extractTables: false, outputFormat: "text" }, signal);
      yield { kind: "delta", content: (i > 0 ? "\n\n" : "") + r.text.trim(), page: { pageNumber: i + 1, providerCostCents: modelCostCents(model.pricing, pagesWork(model, 1)) } };
    }
    yield {
      kind: "end",
      id: `chatcmpl-local-${Date.now().toString(36)}`,
      model: model.id,
      finishReason: "stop",
      promptTokens: 0,
      completionTokens: 0,
      providerCostCents: modelCostCents(model.pricing, pagesWork(model, images.length)),
      costSource: "computed",
      pages: images.length,
    };
  }

  /** A local engine answers a chat with the text of every attached image, in order. */
  private async localChat(model: CatalogModel, input: ChatInput, signal: AbortSignal): Promise<ChatOutput> {
    const engine = this.engine(model);
    const images = this.localImages(model, input);
    const texts: string[] = [];
    for (const [i, image] of images.entries()) {
      const r = await engine.extractPage({ pageNumber: i + 1, image: image.data, mimeType: image.mimeType }, { extractTables: false, outputFormat: "text" }, signal);
      texts.push(r.text.trim());
    }
    return {
      id: `chatcmpl-local-${Date.now().toString(36)}`,
      model: model.id,
      content: texts.join("\n\n"),
      finishReason: "stop",
      promptTokens: 0,
      completionTokens: 0,
      providerCostCents: modelCostCents(model.pricing, pagesWork(model, images.length)),
      costSource: "computed",
    };
  }
}

function imageCount(input: ChatInput): number {
  return input.messages.reduce((n, m) => n + m.content.filter((c) => c.kind === "image").length, 0);
}

function dataUrl(a: ChatAttachment): string {
  return `data:${a.mimeType};base64,${a.data.toString("base64")}`;
}

function toOpenAiPart(p: ChatPart): Record<string, unknown> {
  switch (p.kind) {
    case "text":
      return { type: "text", text: p.text };
    case "image":
      return { type: "image_url", image_url: { url: dataUrl(p.image) } };
    case "file":
      return { type: "file", file: { filename: p.file.filename ?? "document", file_data: dataUrl(p.file) } };
  }
}
