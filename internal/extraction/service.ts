/**
 * The extraction service's domain: catalog queries, model resolution, page
 * extraction and chat, with the provider cost of every call. Transport-free;
 * `grpc.ts` exposes it over gRPC.
 */
import { inSpan } from "../platform/telemetry/index.ts";
import { modelCostCents, pagesWork } from "../billing/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { Catalog } from "./catalog/catalog.ts";
import { UpstreamEngine, type UpstreamClient } from "./engines/upstream.ts";
import type { CatalogModel, ChatAttachment, ChatInput, ChatOutput, ChatPart, Engine, ExtractOptions, PageExtraction, PageInput, PageResult } from "./types.ts";

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

  async chat(input: ChatInput, signal: AbortSignal): Promise<ChatOutput> {
    const model = this.model(input.model);
    if (model.source === "local") return this.localChat(model, input, signal);
    if (!this.opts.upstream) throw new FolioError("unsupported_model", `model '${model.id}' needs the upstream, which is not configured`, { param: "model" });
    const body: Record<string, unknown> = {
      model: model.id,
      messages: input.messages.map((m) => ({ role: m.role, content: m.content.map(toOpenAiPart) })),
      max_tokens: input.maxTokens && input.maxTokens > 0 ? input.maxTokens : this.opts.maxCompletionTokens,
    };
    if (input.plugins.length) body.plugins = input.plugins.map((p) => ({ id: p.id, ...(p.pdfEngine ? { pdf: { engine: p.pdfEngine } } : {}) }));
    const started = performance.now();
    const r = await this.opts.upstream.chatCompletion(body, signal).catch((err: unknown) => {
      this.upstreamCall(model.id, "error", started, 0, 0, 0);
      throw err;
    });
    const images = input.messages.reduce((n, m) => n + m.content.filter((c) => c.kind === "image").length, 0);
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

  /** A local engine answers a chat with the text of every attached image, in order. */
  private async localChat(model: CatalogModel, input: ChatInput, signal: AbortSignal): Promise<ChatOutput> {
    const engine = this.engine(model);
    const images = input.messages.flatMap((m) => m.content.flatMap((c) => (c.kind === "image" ? [c.image] : [])));
    if (images.some((i) => !i.mimeType.startsWith("image/")) || input.messages.some((m) => m.content.some((c) => c.kind === "file"))) {
      throw new FolioError("invalid_request", `${model.id} reads images only; documents are converted to page images first`, { param: "messages" });
    }
    if (images.length === 0) throw new FolioError("invalid_request", `${model.id} extracts text from images: attach at least one image_url or file part`, { param: "messages" });
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
