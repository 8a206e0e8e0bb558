/**
 * The edge's client of the extraction service: typed calls with deadlines,
 * returning domain types and FolioErrors.
 */
import { Decimal } from "../billing/index.ts";
import { callUnary, fromGrpcError, grpc, serviceClient, type ServiceClientOptions } from "../platform/grpc/index.ts";
import type { ExtractionServiceClient } from "../gen/proto/folio/extraction/v1/ExtractionService.ts";
import type { ListModelsRequest } from "../gen/proto/folio/extraction/v1/ListModelsRequest.ts";
import type { ListModelsResponse__Output } from "../gen/proto/folio/extraction/v1/ListModelsResponse.ts";
import type { ResolveModelRequest } from "../gen/proto/folio/extraction/v1/ResolveModelRequest.ts";
import type { ResolveModelResponse__Output } from "../gen/proto/folio/extraction/v1/ResolveModelResponse.ts";
import type { ExtractPageRequest } from "../gen/proto/folio/extraction/v1/ExtractPageRequest.ts";
import type { ExtractPageResponse__Output } from "../gen/proto/folio/extraction/v1/ExtractPageResponse.ts";
import type { ChatRequest } from "../gen/proto/folio/extraction/v1/ChatRequest.ts";
import type { ChatResponse__Output } from "../gen/proto/folio/extraction/v1/ChatResponse.ts";
import type { ChatStreamEvent__Output } from "../gen/proto/folio/extraction/v1/ChatStreamEvent.ts";
import type { GenerationCostRequest } from "../gen/proto/folio/extraction/v1/GenerationCostRequest.ts";
import type { GenerationCostResponse__Output } from "../gen/proto/folio/extraction/v1/GenerationCostResponse.ts";
import type { Usage__Output } from "../gen/proto/folio/extraction/v1/Usage.ts";
import { extractionProto, modelFromProto } from "./grpc.ts";

/** The edge joins the tables its pages' readings found (engines/tables.ts). */
export { joinPageTables, tableOf } from "./engines/tables.ts";
import { FolioError } from "../platform/errors/index.ts";
import type { PageLayout__Output } from "../gen/proto/folio/extraction/v1/PageLayout.ts";
import type { PageBlock__Output } from "../gen/proto/folio/extraction/v1/PageBlock.ts";
import type { TableCell__Output } from "../gen/proto/folio/extraction/v1/TableCell.ts";
import type {
  CatalogModel,
  CatalogView,
  ChatInput,
  ChatOutput,
  ChatStreamEvent,
  CostSource,
  ExtractOptions,
  GenerationCost,
  LayoutBlockType,
  PageBlock,
  PageBlockType,
  PageExtraction,
  PageInput,
  PageLayout,
  TableCell,
} from "../contracts/index.ts";


/** The model a request named (or its strategy chose), with the completion cap sent upstream per call. */
export interface ResolvedModel {
  model: CatalogModel;
  /** How it was chosen: the model id as given, an alias, or a strategy. */
  via: string;
  strategy?: string;
  maxCompletionTokens: number;
}

export interface ExtractionClientOptions extends ServiceClientOptions {
  /** Deadline of catalog calls. */
  catalogDeadlineMs: number;
  /** Deadline of one page or one chat call. */
  workDeadlineMs: number;
}

const WHAT = "the extraction service";

export class ExtractionClient {
  private readonly client: ExtractionServiceClient;

  constructor(address: string, private readonly opts: ExtractionClientOptions) {
    this.client = serviceClient(extractionProto().folio.extraction.v1.ExtractionService, address, opts);
  }

  async listModels(): Promise<CatalogView> {
    const r = await callUnary<ListModelsRequest, ListModelsResponse__Output>(this.client, this.client.ListModels, {}, { deadlineMs: this.opts.catalogDeadlineMs, what: WHAT });
    return {
      models: r.models.map(modelFromProto),
      fetchedAtMs: r.fetched_at_ms || null,
      ageSeconds: r.age_seconds >= 0 ? r.age_seconds : null,
      stale: r.stale,
      lastError: r.last_error || null,
      upstreamConfigured: r.upstream_configured,
      strategies: r.strategies.map((s) => ({ strategy: s.strategy, configured: s.configured, resolved: s.resolved, fallback: s.fallback, ...(s.reason ? { reason: s.reason } : {}) })),
    };
  }

  async resolveModel(req: { model?: string; strategy?: string; strategyParam?: string }): Promise<ResolvedModel> {
    const r = await callUnary<ResolveModelRequest, ResolveModelResponse__Output>(
      this.client,
      this.client.ResolveModel,
      { model: req.model ?? "", strategy: req.strategy ?? "", strategy_param: req.strategyParam ?? "" },
      { deadlineMs: this.opts.catalogDeadlineMs, what: WHAT },
    );
    if (!r.model) throw new Error("ResolveModel answered without a model");
    return { model: modelFromProto(r.model), via: r.via, maxCompletionTokens: r.max_completion_tokens, ...(r.strategy ? { strategy: r.strategy } : {}) };
  }

  async extractPage(model: string, page: PageInput, options: ExtractOptions, signal?: AbortSignal): Promise<PageExtraction> {
    const r = await callUnary<ExtractPageRequest, ExtractPageResponse__Output>(
      this.client,
      this.client.ExtractPage,
      {
        model,
        page_number: page.pageNumber,
        image: page.image,
        mime_type: page.mimeType,
        options: { extract_tables: options.extractTables, language: options.language ?? "", output_format: options.outputFormat, include_layout: options.includeLayout ?? "" },
      },
      { deadlineMs: this.opts.workDeadlineMs, what: WHAT, signal },
    );
    return {
      result: {
        text: r.text,
        tables: r.tables.map((t) => ({ page_number: t.page_number, rows: t.rows.map((row) => row.cells), markdown: t.markdown, cells: t.cells.map(cellFromProto), html: t.html, ...(t.opens_page ? { opens_page: true } : {}), ...(t.closes_page ? { closes_page: true } : {}) })),
        ...(r.has_confidence ? { confidence: r.confidence } : {}),
        ...(r.layout ? { layout: layoutFromProto(r.layout, r.has_straightening ? r : undefined) } : {}),
        ...(r.has_straightening ? { rotation: turnOf(r.rotation), skewDegrees: r.skew_degrees } : {}),
        ...(r.has_blocks ? { blocks: r.blocks.map(blockFromProto) } : {}),
        usage: { promptTokens: r.usage?.prompt_tokens ?? 0, completionTokens: r.usage?.completion_tokens ?? 0, reportedCostCents: null },
      },
      providerCostCents: new Decimal(r.usage?.provider_cost_cents || "0"),
      costSource: (r.usage?.cost_source || "computed") as CostSource,
    };
  }

  async chat(input: ChatInput, signal?: AbortSignal): Promise<ChatOutput> {
    const r = await callUnary<ChatRequest, ChatResponse__Output>(this.client, this.client.Chat, chatRequestOf(input), { deadlineMs: this.opts.workDeadlineMs, what: WHAT, signal });
    return {
      id: r.id,
      model: r.model,
      content: r.content,
      finishReason: r.finish_reason,
      promptTokens: r.usage?.prompt_tokens ?? 0,
      completionTokens: r.usage?.completion_tokens ?? 0,
      providerCostCents: new Decimal(r.usage?.provider_cost_cents || "0"),
      costSource: (r.usage?.cost_source || "computed") as CostSource,
    };
  }

  /**
   * The chat, streamed (ChatStream): its events as the service sends them,
   * under the one work deadline. A failure before the end rejects with the
   * FolioError the service raised; `signal` cancels the call (and the
   * service's upstream call with it), the iteration then rejecting with
   * `signal.reason`.
   */
  async *chatStream(input: ChatInput, signal: AbortSignal): AsyncGenerator<ChatStreamEvent> {
    signal.throwIfAborted();
    const call = this.client.ChatStream(chatRequestOf(input), new grpc.Metadata(), { deadline: Date.now() + this.opts.workDeadlineMs });
    const cancel = () => call.cancel();
    signal.addEventListener("abort", cancel, { once: true });
    try {
      for await (const e of call as AsyncIterable<ChatStreamEvent__Output>) yield streamEventFromProto(e);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw fromGrpcError(err as grpc.ServiceError, WHAT);
    } finally {
      signal.removeEventListener("abort", cancel);
      // The caller left early: the service stops its work.
      call.cancel();
    }
  }

  /** What the upstream billed for a generation whose stream was cut, by the provider's own record. */
  async generationCost(model: string, generationId: string, signal?: AbortSignal): Promise<GenerationCost> {
    const r = await callUnary<GenerationCostRequest, GenerationCostResponse__Output>(
      this.client,
      this.client.GenerationCost,
      { model, generation_id: generationId },
      { deadlineMs: this.opts.workDeadlineMs, what: WHAT, signal },
    );
    if (!r.found) return { found: false };
    return { found: true, promptTokens: r.usage?.prompt_tokens ?? 0, completionTokens: r.usage?.completion_tokens ?? 0, providerCostCents: costOf(r.usage) };
  }

  close(): void {
    this.client.close();
  }
}

function chatRequestOf(input: ChatInput): ChatRequest {
  return {
    model: input.model,
    messages: input.messages.map((m) => ({
      role: m.role,
      content: m.content.map((p) =>
        p.kind === "text"
          ? { text: p.text }
          : p.kind === "image"
            ? { image: { data: p.image.data, mime_type: p.image.mimeType, filename: p.image.filename ?? "" } }
            : { file: { data: p.file.data, mime_type: p.file.mimeType, filename: p.file.filename ?? "" } },
      ),
    })),
    plugins: input.plugins.map((p) => ({ id: p.id, pdf_engine: p.pdfEngine ?? "" })),
    max_tokens: input.maxTokens ?? 0,
  };
}

function costOf(u: Usage__Output | null | undefined): Decimal {
  return new Decimal(u?.provider_cost_cents || "0");
}

function streamEventFromProto(e: ChatStreamEvent__Output): ChatStreamEvent {
  if (e.delta) {
    const d = e.delta;
    return {
      kind: "delta",
      content: d.content,
      ...(d.generation_id ? { generationId: d.generation_id } : {}),
      ...(d.page_number > 0 ? { page: { pageNumber: d.page_number, providerCostCents: costOf(d.usage) } } : {}),
    };
  }
  const end = e.end;
  if (!end) throw new FolioError("internal_error", "the extraction service sent an empty stream event");
  return {
    kind: "end",
    id: end.id,
    model: end.model,
    finishReason: end.finish_reason,
    promptTokens: end.usage?.prompt_tokens ?? 0,
    completionTokens: end.usage?.completion_tokens ?? 0,
    providerCostCents: costOf(end.usage),
    costSource: (end.usage?.cost_source || "computed") as CostSource,
    pages: end.pages,
    ...(end.error ? { error: { code: end.error.code, message: end.error.message, extra: parseExtra(end.error.extra_json) } } : {}),
  };
}

function parseExtra(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json || "{}") as unknown;
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function box(b: readonly number[]): [number, number, number, number] {
  return [b[0] ?? 0, b[1] ?? 0, b[2] ?? 0, b[3] ?? 0];
}

/** A rotation as the contract types it (anything else, which the service never sends, reads as 0). */
function turnOf(n: number): 0 | 90 | 180 | 270 {
  return n === 90 || n === 180 || n === 270 ? n : 0;
}

/** A block of a page's structure: each kind with its own fields only. */
function blockFromProto(b: PageBlock__Output): PageBlock {
  const type = b.type as PageBlockType;
  return {
    type,
    text: b.text,
    bbox: box(b.bbox),
    ...(type === "heading" ? { level: b.level } : {}),
    ...(type === "list_item" ? { ordered: b.ordered, depth: b.depth, marker: b.marker } : {}),
    ...(type === "table" ? { cells: b.cells.map((r) => r.cells), table_cells: b.table_cells.map(cellFromProto) } : {}),
  };
}

function cellFromProto(c: TableCell__Output): TableCell {
  return { row: c.row, col: c.col, row_span: c.row_span, col_span: c.col_span, text: c.text, ...(c.bbox.length === 4 ? { bbox: box(c.bbox) } : {}) };
}

/** The layout of an answer; the page's straightening, when there was one, is repeated in it. */
function layoutFromProto(l: PageLayout__Output, straightening?: { rotation: number; skew_degrees: number }): PageLayout {
  return {
    width: l.width,
    height: l.height,
    ...(straightening ? { rotation: turnOf(straightening.rotation), skew_degrees: straightening.skew_degrees } : {}),
    blocks: l.blocks.map((b) => ({
      type: b.type as LayoutBlockType,
      bbox: box(b.bbox),
      text: b.text,
      ...(b.has_words ? { words: b.words.map((w) => ({ text: w.text, bbox: box(w.bbox), confidence: w.confidence })) } : {}),
    })),
  };
}
