/**
 * The extraction service assembled from configuration: catalog (upstream +
 * local engines), strategies, engines, and its gRPC server.
 */
import type { ExtractionConfig } from "../platform/config/index.ts";
import { startGrpcServer, type RunningGrpcServer } from "../platform/grpc/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { ExtractionMetrics } from "../platform/metrics/index.ts";
import { Catalog } from "./catalog/catalog.ts";
import { DEFAULT_STRATEGY_CONFIG, type StrategyConfig } from "./catalog/strategies.ts";
import { TesseractEngine, stopResidentTesseract, useResidentTesseract } from "./engines/tesseract.ts";
import { installedLanguages } from "./engines/tesseract-languages.ts";
import { AUTO_MODEL_ID, AutoEngine } from "./engines/auto.ts";
import { PPOCR_LANGUAGES, PPOCR_MODEL_ID, PpOcrEngine, shutdownPpOcr } from "./engines/ppocr.ts";
import { StraightenedEngine } from "./engines/straighten.ts";
import { UpstreamClient } from "./engines/upstream.ts";
import { registerExtraction } from "./grpc.ts";
import { ExtractionService } from "./service.ts";
import type { CatalogModel, Engine } from "./types.ts";

export { ExtractionClient } from "./client.ts";
export { ExtractionService } from "./service.ts";
export type * from "./types.ts";

export const TESSERACT_MODEL_ID = "local/tesseract";

/** A local engine as a catalog entry: reads images (and PDFs, rasterized by the edge), priced per page; `languages` when known. */
function localModel(m: { id: string; name: string; description: string; created: number }, pricePerPageUsd: string, languages?: readonly string[]): CatalogModel {
  return {
    ...m,
    ...(languages ? { languages: [...languages] } : {}),
    ownedBy: "folio",
    source: "local",
    contextLength: 0,
    maxCompletionTokens: null,
    inputKinds: ["image", "pdf"],
    category: "local",
    pricing: { prompt: "0", completion: "0", page: pricePerPageUsd },
  };
}

/** The local tesseract engine as a catalog entry, priced per page (docs/models.md), with the languages installed (`installedLanguages`). */
export function tesseractModel(pricePerPageUsd: string, languages?: readonly string[]): CatalogModel {
  return localModel(
    {
      id: TESSERACT_MODEL_ID,
      name: "Tesseract OCR 5 (local)",
      description:
        "Tesseract 5 LSTM OCR running on Folio's own machines, with Folio's layout analysis: columns in reading order, tables read row by row (and returned as cells with extract_tables), headers and footers; the page's language found when none is given. Plain text with a mean word confidence.",
      created: 1_672_531_200,
    },
    pricePerPageUsd,
    languages,
  );
}

/** The best local reading (tesseract; ruled pages again without their rules; PP-OCR for unsure English pages): the strategies' local fallback. */
export function autoModel(pricePerPageUsd: string, languages?: readonly string[]): CatalogModel {
  return localModel(
    {
      id: AUTO_MODEL_ID,
      name: "Folio auto (local)",
      description:
        "The best local reading of each page: tesseract 5 with Folio's layout analysis (columns, tables read row by row, headers and footers), the page's language found when none is given, pages with ruling lines read again without them, and English pages tesseract reads with low confidence (receipts, photocopies) read by PP-OCR. Plain text, tables and layout; one to three readings a page.",
      created: 1_764_028_800,
    },
    pricePerPageUsd,
    languages,
  );
}

/** The local PP-OCRv4 engine (onnxruntime in a worker thread); its recognition dictionary reads English and Chinese. */
export function ppocrModel(pricePerPageUsd: string): CatalogModel {
  return localModel(
    {
      id: PPOCR_MODEL_ID,
      name: "PP-OCRv4 (local)",
      description:
        "PaddleOCR PP-OCRv4 detection and recognition models run with ONNX Runtime on Folio's own machines. Languages: English and Chinese only (its dictionary has ASCII, Chinese and a few accented letters; no German ö/ß). Reads receipts, single text lines and degraded scans well; columns of prose in reading order; plain text with a mean box confidence and line-level layout boxes; no tables.",
      created: 1_700_000_000,
    },
    pricePerPageUsd,
    PPOCR_LANGUAGES,
  );
}

function list(value: string, fallback: string[]): string[] {
  const ids = value.split(",").map((s) => s.trim()).filter(Boolean);
  return ids.length ? ids : fallback;
}

export function strategyConfig(config: ExtractionConfig): StrategyConfig {
  return {
    quality: list(config.FOLIO_STRATEGY_QUALITY_MODELS, DEFAULT_STRATEGY_CONFIG.quality),
    speed: list(config.FOLIO_STRATEGY_SPEED_MODELS, DEFAULT_STRATEGY_CONFIG.speed),
    cost: list(config.FOLIO_STRATEGY_COST_MODELS, DEFAULT_STRATEGY_CONFIG.cost),
  };
}

export interface RunningExtraction {
  service: ExtractionService;
  catalog: Catalog;
  grpc: RunningGrpcServer;
  metrics: ExtractionMetrics;
  metricsUrl: string | null;
  close(): Promise<void>;
}

export interface StartExtractionOptions {
  config: ExtractionConfig;
  log: Logger;
  /**
   * Another service of this process serves the metrics (folio dev): no
   * listener of its own and no duplicate process metrics.
   */
  sharedProcess?: boolean;
}

/**
 * The local engines by model id, as the extraction service runs them (also
 * what `make eval` measures): each one reads turned and skewed pages
 * straightened (engines/straighten.ts): the page's pixels decide, and
 * tesseract's trial readings where they are not sure.
 */
export function localEngines(): Map<string, Engine> {
  const tesseract = new TesseractEngine();
  const ppocr = new PpOcrEngine();
  const auto = new AutoEngine(tesseract, ppocr);
  // Tesseract's own confidence on the page as sent settles an unsure turn (engines/straighten.ts SURE_READING_CONFIDENCE); PP-OCR's does not.
  return new Map<string, Engine>([
    [AUTO_MODEL_ID, new StraightenedEngine(auto, tesseract, (r) => auto.readByTesseract(r))],
    [TESSERACT_MODEL_ID, new StraightenedEngine(tesseract, tesseract, () => true)],
    [PPOCR_MODEL_ID, new StraightenedEngine(ppocr, tesseract)],
  ]);
}

/** Stops what local engines keep running between pages (the PP-OCR worker, resident tesseract programs). */
export async function shutdownLocalEngines(): Promise<void> {
  await Promise.all([shutdownPpOcr(), stopResidentTesseract()]);
}

export async function startExtraction({ config, log, sharedProcess = false }: StartExtractionOptions): Promise<RunningExtraction> {
  const upstream = config.FOLIO_UPSTREAM_API_KEY ? { baseUrl: config.FOLIO_UPSTREAM_BASE_URL.replace(/\/+$/, ""), apiKey: config.FOLIO_UPSTREAM_API_KEY } : undefined;
  useResidentTesseract(config.FOLIO_TESSERACT_RESIDENT);
  const local = localEngines();
  // Languages shown in the catalog; without tesseract (a broken install) the entries just do not state them.
  const tesseractLanguages = await installedLanguages().catch(() => undefined);
  // The gauges read the catalog only when scraped, after it exists.
  const metrics = new ExtractionMetrics(() => catalog.snapshot(), !sharedProcess);
  const catalog = new Catalog({
    upstream,
    refreshMs: config.FOLIO_CATALOG_REFRESH_SECONDS * 1000,
    // The first local model is the strategies' fallback (docs/models.md): local/auto reads best (docs/benchmarks.md).
    localModels: [
      autoModel(config.FOLIO_AUTO_PRICE_PER_PAGE_USD, tesseractLanguages),
      tesseractModel(config.FOLIO_LOCAL_PRICE_PER_PAGE_USD, tesseractLanguages),
      ppocrModel(config.FOLIO_PPOCR_PRICE_PER_PAGE_USD),
    ],
    strategies: strategyConfig(config),
    log,
    onRefresh: (ok) => metrics.catalogRefreshes.inc({ outcome: ok ? "ok" : "failed" }),
  });
  await catalog.start();
  const service = new ExtractionService({
    catalog,
    local,
    upstream: upstream ? new UpstreamClient({ ...upstream, timeoutMs: config.FOLIO_UPSTREAM_TIMEOUT_SECONDS * 1000 }) : undefined,
    maxCompletionTokens: config.FOLIO_MAX_COMPLETION_TOKENS,
    onUpstreamCall: (c) => {
      metrics.upstreamCalls.inc({ model: c.model, outcome: c.outcome });
      metrics.upstreamDuration.observe({ model: c.model }, c.seconds);
      if (c.promptTokens) metrics.upstreamTokens.inc({ model: c.model, kind: "prompt" }, c.promptTokens);
      if (c.completionTokens) metrics.upstreamTokens.inc({ model: c.model, kind: "completion" }, c.completionTokens);
      if (c.providerCostCents) metrics.upstreamCostCents.inc({ model: c.model }, c.providerCostCents);
    },
  });
  const grpc = await startGrpcServer(config.FOLIO_GRPC_HOST, config.FOLIO_GRPC_PORT, (server) =>
    registerExtraction(server, service, {
      onError: (err, method) => {
        const code = (err as { code?: string }).code;
        if (code === "internal_error" || code === undefined) log.error({ err, method }, "extraction call failed");
      },
      onCall: (method, model, outcome) => {
        const source = catalog.get(model)?.source ?? "unknown";
        metrics.extractions.inc({ method, source, outcome });
        if (method === "ExtractPage" && outcome === "ok") metrics.pages.inc({ source });
      },
    }),
    metrics.grpc,
  );
  const served = !sharedProcess && config.FOLIO_METRICS_ENABLED ? await metrics.serve(config.FOLIO_METRICS_HOST, config.FOLIO_METRICS_PORT) : null;
  log.info({ address: grpc.address, upstream: upstream ? upstream.baseUrl : null, models: catalog.snapshot().models.length }, "extraction service listening");
  return {
    service,
    catalog,
    grpc,
    metrics,
    metricsUrl: served ? `http://127.0.0.1:${served.port}/metrics` : null,
    close: async () => {
      catalog.stop();
      await grpc.close();
      await shutdownLocalEngines();
      if (served) await new Promise((r) => served.server.close(r));
    },
  };
}
