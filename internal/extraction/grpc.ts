/**
 * The extraction service over gRPC: proto messages ↔ domain types. Errors
 * cross with the one mapping in platform/grpc/errors.ts.
 */
import { Decimal } from "../billing/index.ts";
import { failStream, grpc, loadProto, unary, withCallSignal } from "../platform/grpc/index.ts";
import type { ProtoGrpcType } from "../gen/proto/extraction.ts";
import type { ExtractionServiceHandlers } from "../gen/proto/folio/extraction/v1/ExtractionService.ts";
import type { Model } from "../gen/proto/folio/extraction/v1/Model.ts";
import type { Model__Output } from "../gen/proto/folio/extraction/v1/Model.ts";
import type { ChatRequest__Output } from "../gen/proto/folio/extraction/v1/ChatRequest.ts";
import type { ChatStreamEvent as ChatStreamEventProto } from "../gen/proto/folio/extraction/v1/ChatStreamEvent.ts";
import type { ExtractionService } from "./service.ts";
import type { PageBlock } from "../contracts/index.ts";
import type { CatalogModel, ChatInput, ChatPart, ChatStreamEvent, InputKind, ModelSource, OutputFormat, PageLayout } from "./types.ts";

export const EXTRACTION_SERVICE_NAME = "folio.extraction.v1.ExtractionService";

export function extractionProto(): ProtoGrpcType {
  return loadProto<ProtoGrpcType>("folio/extraction/v1/extraction.proto");
}

export function modelToProto(m: CatalogModel): Model {
  return {
    id: m.id,
    name: m.name,
    description: m.description,
    created: m.created,
    owned_by: m.ownedBy,
    source: m.source,
    context_length: m.contextLength,
    max_completion_tokens: m.maxCompletionTokens ?? 0,
    input_kinds: m.inputKinds,
    category: m.category,
    pricing: {
      prompt: m.pricing.prompt,
      completion: m.pricing.completion,
      image: m.pricing.image ?? "",
      request: m.pricing.request ?? "",
      page: m.pricing.page ?? "",
    },
    languages: m.languages ?? [],
  };
}

export function modelFromProto(m: Model__Output): CatalogModel {
  const p = m.pricing;
  return {
    id: m.id,
    name: m.name,
    description: m.description,
    created: m.created,
    ownedBy: m.owned_by,
    source: m.source as ModelSource,
    contextLength: m.context_length,
    maxCompletionTokens: m.max_completion_tokens || null,
    inputKinds: m.input_kinds as InputKind[],
    category: m.category,
    pricing: {
      prompt: p?.prompt ?? "0",
      completion: p?.completion ?? "0",
      ...(p?.image ? { image: p.image } : {}),
      ...(p?.request ? { request: p.request } : {}),
      ...(p?.page ? { page: p.page } : {}),
    },
    ...(m.languages.length ? { languages: [...m.languages] } : {}),
  };
}

export interface ExtractionGrpcHooks {
  onError?: (err: unknown, method: string) => void;
  /** Every ExtractPage/Chat/ChatStream call with its model and outcome (metrics). */
  onCall?: (method: ObservedMethod, model: string, outcome: "ok" | "error") => void;
}

type ObservedMethod = "ExtractPage" | "Chat" | "ChatStream";

/** Reports the outcome of `work` to hooks.onCall. */
async function observed<T>(hooks: ExtractionGrpcHooks, method: ObservedMethod, model: string, work: () => Promise<T>): Promise<T> {
  try {
    const r = await work();
    hooks.onCall?.(method, model, "ok");
    return r;
  } catch (err) {
    hooks.onCall?.(method, model, "error");
    throw err;
  }
}

/** Registers the service on `server`; returns the names for the health service. */
export function registerExtraction(server: grpc.Server, svc: ExtractionService, hooks: ExtractionGrpcHooks = {}): string[] {
  const proto = extractionProto();
  const handlers: ExtractionServiceHandlers = {
    ListModels: unary(
      async () => {
        const snap = svc.catalog.snapshot();
        return {
          models: snap.models.map(modelToProto),
          fetched_at_ms: snap.fetchedAtMs ?? 0,
          age_seconds: snap.ageSeconds ?? -1,
          stale: snap.stale,
          last_error: snap.lastError ?? "",
          upstream_configured: snap.upstreamConfigured,
          strategies: svc.catalog.strategyTable().map((s) => ({ ...s, reason: s.reason ?? "" })),
        };
      },
      hooks.onError,
      "ListModels",
    ),
    ResolveModel: unary(
      async (req) => {
        const r = svc.catalog.resolve({
          model: req.model || undefined,
          strategy: req.strategy || undefined,
          param: req.strategy_param || undefined,
        });
        return { model: modelToProto(r.model), via: r.via, strategy: r.strategy ?? "", max_completion_tokens: svc.maxCompletionTokens };
      },
      hooks.onError,
      "ResolveModel",
    ),
    ExtractPage: unary(
      async (req, call) => {
        const o = req.options;
        const r = await withCallSignal(call, (signal) => observed(hooks, "ExtractPage", req.model, () => svc.extractPage(
          req.model,
          { pageNumber: req.page_number, image: req.image, mimeType: req.mime_type },
          {
            extractTables: o?.extract_tables ?? false,
            language: o?.language || undefined,
            outputFormat: ((o?.output_format || "text") as OutputFormat),
            ...(o?.include_layout === "blocks" || o?.include_layout === "words" ? { includeLayout: o.include_layout } : {}),
          },
          signal,
        )));
        return {
          text: r.result.text,
          tables: r.result.tables.map((t) => ({ page_number: t.page_number, rows: t.rows.map((cells) => ({ cells })), markdown: t.markdown, cells: t.cells, html: t.html, opens_page: t.opens_page ?? false, closes_page: t.closes_page ?? false })),
          has_confidence: r.result.confidence !== undefined,
          confidence: r.result.confidence ?? 0,
          ...(r.result.layout ? { layout: layoutToProto(r.result.layout) } : {}),
          ...(r.result.rotation !== undefined ? { has_straightening: true, rotation: r.result.rotation, skew_degrees: r.result.skewDegrees ?? 0 } : {}),
          ...(r.result.blocks ? { has_blocks: true, blocks: r.result.blocks.map(blockToProto) } : {}),
          usage: {
            prompt_tokens: r.result.usage.promptTokens,
            completion_tokens: r.result.usage.completionTokens,
            provider_cost_cents: r.providerCostCents.toFixed(),
            cost_source: r.costSource,
          },
        };
      },
      hooks.onError,
      "ExtractPage",
    ),
    Chat: unary(
      async (req, call) => {
        const r = await observed(hooks, "Chat", req.model, () => withCallSignal(call, (signal) => svc.chat(chatInputFromProto(req), signal)));
        return {
          id: r.id,
          content: r.content,
          finish_reason: r.finishReason,
          model: r.model,
          usage: {
            prompt_tokens: r.promptTokens,
            completion_tokens: r.completionTokens,
            provider_cost_cents: r.providerCostCents.toFixed(),
            cost_source: r.costSource,
          },
        };
      },
      hooks.onError,
      "Chat",
    ),
    ChatStream: (call) => {
      void streamChat(svc, call, hooks);
    },
    GenerationCost: unary(
      async (req, call) => {
        const r = await withCallSignal(call, (signal) => svc.generationCost(req.model, req.generation_id, signal));
        return r.found ? { found: true, usage: usageToProto({ ...r, costSource: "reported" }) } : { found: false };
      },
      hooks.onError,
      "GenerationCost",
    ),
  };
  server.addService(proto.folio.extraction.v1.ExtractionService.service, handlers);
  return [EXTRACTION_SERVICE_NAME];
}

function chatInputFromProto(req: ChatRequest__Output): ChatInput {
  return {
    model: req.model,
    messages: req.messages.map((m) => ({
      role: m.role,
      content: m.content.map((p): ChatPart => {
        if (p.kind === "image" && p.image) return { kind: "image", image: { data: p.image.data, mimeType: p.image.mime_type, filename: p.image.filename || undefined } };
        if (p.kind === "file" && p.file) return { kind: "file", file: { data: p.file.data, mimeType: p.file.mime_type, filename: p.file.filename || undefined } };
        return { kind: "text", text: p.text ?? "" };
      }),
    })),
    plugins: req.plugins.map((p) => ({ id: p.id, pdfEngine: p.pdf_engine || undefined })),
    maxTokens: req.max_tokens || undefined,
  };
}

function usageToProto(u: { promptTokens: number; completionTokens: number; providerCostCents: Decimal; costSource: string }) {
  return { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, provider_cost_cents: u.providerCostCents.toFixed(), cost_source: u.costSource };
}

function streamEventToProto(e: ChatStreamEvent): ChatStreamEventProto {
  if (e.kind === "delta") {
    return {
      delta: {
        content: e.content,
        generation_id: e.generationId ?? "",
        page_number: e.page?.pageNumber ?? 0,
        ...(e.page ? { usage: usageToProto({ promptTokens: 0, completionTokens: 0, providerCostCents: e.page.providerCostCents, costSource: "computed" }) } : {}),
      },
    };
  }
  return {
    end: {
      id: e.id,
      finish_reason: e.finishReason,
      model: e.model,
      usage: usageToProto(e),
      pages: e.pages,
      ...(e.error ? { error: { code: e.error.code, message: e.error.message, extra_json: JSON.stringify(e.error.extra) } } : {}),
    },
  };
}

/**
 * Serves one ChatStream call: each event as the service yields it (waiting
 * for the connection to take it), then OK; a failure before the end is the
 * call's status, in the one error mapping. A client that cancels stops the
 * service's work through the call's signal.
 */
async function streamChat(svc: ExtractionService, call: grpc.ServerWritableStream<ChatRequest__Output, ChatStreamEventProto>, hooks: ExtractionGrpcHooks): Promise<void> {
  const model = call.request.model;
  try {
    await withCallSignal(call, async (signal) => {
      let failed = false;
      for await (const e of svc.chatStream(chatInputFromProto(call.request), signal)) {
        if (call.cancelled) break;
        if (e.kind === "end" && e.error) failed = true;
        await send(call, streamEventToProto(e), signal);
      }
      hooks.onCall?.("ChatStream", model, failed ? "error" : "ok");
      call.end();
    });
  } catch (err) {
    hooks.onCall?.("ChatStream", model, "error");
    if (!call.cancelled) failStream(call as grpc.ServerWritableStream<unknown, unknown>, err, "ChatStream", hooks.onError);
  }
}

/** Writes one message, waiting until the connection took it (or the call was cancelled: a write then never completes). */
function send<T>(call: grpc.ServerWritableStream<unknown, T>, message: T, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    call.write(message, (err: Error | null | undefined) => {
      signal.removeEventListener("abort", onAbort);
      if (err) reject(err);
      else resolve();
    });
  });
}

function layoutToProto(l: PageLayout) {
  return {
    width: l.width,
    height: l.height,
    blocks: l.blocks.map((b) => ({ type: b.type, bbox: b.bbox, text: b.text, has_words: b.words !== undefined, words: b.words ?? [] })),
  };
}

function blockToProto(b: PageBlock) {
  return {
    type: b.type,
    bbox: b.bbox,
    text: b.text,
    level: b.level ?? 0,
    ordered: b.ordered ?? false,
    depth: b.depth ?? 0,
    marker: b.marker ?? "",
    cells: (b.cells ?? []).map((cells) => ({ cells })),
    table_cells: b.table_cells ?? [],
  };
}

export { Decimal };
