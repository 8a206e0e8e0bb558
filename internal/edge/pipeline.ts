/**
 * The document pipeline: one document as the edge receives it (URL, base64,
 * a data URL or uploaded bytes) → identified from its bytes → pages counted →
 * credit held → page images (images are one page, PDFs are rasterized at
 * 200 DPI, office documents go through the conversion service) → hold raised
 * once an office document's pages are known → every page read by the model →
 * settled. `/v1/ocr` and `/v1/playground/process` run all of it through
 * {@link readDocument}; `/v1/chat/completions` uses its steps
 * ({@link loadDocument}, {@link countPages}, {@link pageImages}) for the
 * pages of its attachments.
 *
 * With the request's `pages` option ({@link pageSelectionOf}) only the pages
 * it selects are rendered (PDF) or converted (office documents), read, held
 * for and billed; each keeps its page number in the document.
 *
 * A PDF read by a local engine skips the PNG step: its pages are rendered to
 * raw grey pixels (PGM), which the engine reads without decoding, and each
 * page goes to the model as soon as it is rendered, while pdftoppm renders
 * the next ({@link streamPdfPages}). Upstream models get PNG, as every
 * provider reads it.
 */
import { Type, type Static } from "typebox";
import {
  holdCents,
  runPaid,
  type ComponentCharge,
  type MeteredComponents,
  type Meter,
  type PaidIdempotency,
  type PaidOutcome,
  type Payer,
} from "../billing/index.ts";
import {
  buildSearchablePdf,
  canCopyPdfPages,
  compactPageImage,
  decodeBase64Strict,
  fetchDocument,
  parseDataUrl,
  pdfPageCount,
  rasterizePdf,
  sniffDocument,
  streamPdfPages,
  type SearchableKind,
  type SearchablePage,
  type Sniffed,
} from "../documents/index.ts";
import { joinPageTables, type ResolvedModel } from "../extraction/client.ts";
import type { ExtractOptions, PageBlock, PageExtraction, PageInput, PageLayout, Table } from "../contracts/index.ts";
import { PAGE_DPI } from "../formats/index.ts";
import { parsePages, planPages, selectionOverLimit, type PageSelection } from "../formats/pages.ts";
import { FolioError } from "../platform/errors/index.ts";
import { conversionOf, extractionOf } from "./services.ts";
import type { EdgeDeps } from "./types.ts";

export interface LoadedDocument {
  bytes: Buffer;
  sniffed: Sniffed;
  /** The request field the document came from (for error params). */
  param: string;
}

/** Where a document comes from: a public URL (fetched SSRF-safe), base64, a data URL, or bytes already read (an upload). */
export type DocumentSource = { url: string } | { base64: string } | { dataUrl: string } | { bytes: Buffer };

/** Fetches or decodes the document, bounded by the size limit, and identifies it from its bytes (`mimeType` is a hint). */
export async function loadDocument(deps: EdgeDeps, source: DocumentSource, o: { param: string; mimeType?: string }): Promise<LoadedDocument> {
  const { param } = o;
  let bytes: Buffer;
  let hint = o.mimeType;
  if ("url" in source) {
    const fetched = await fetchDocument(source.url, { ...deps.documents.fetch, maxBytes: deps.documents.maxBytes }, param);
    bytes = fetched.bytes;
    hint ??= fetched.contentType?.split(";")[0]?.trim() || undefined;
  } else {
    if ("dataUrl" in source) {
      const d = parseDataUrl(source.dataUrl, param);
      bytes = d.bytes;
      hint ??= d.mimeType;
    } else bytes = "base64" in source ? decodeBase64Strict(source.base64, param) : source.bytes;
    if (bytes.length > deps.documents.maxBytes) {
      throw new FolioError("payload_too_large", `document is ${bytes.length} bytes; the limit is ${deps.documents.maxBytes}`, { param });
    }
  }
  return { bytes, sniffed: await sniffDocument(bytes, hint), param };
}

/** The request's `url` or `base64` field, exactly one of them, as a source. */
export function urlOrBase64(body: { url?: string; base64?: string }): { source: DocumentSource; param: string } {
  const { url, base64 } = body;
  if ((url === undefined) === (base64 === undefined)) {
    throw new FolioError("invalid_request", "send exactly one of 'url' or 'base64'", { param: url === undefined ? "url" : "base64" });
  }
  return url !== undefined ? { source: { url }, param: "url" } : { source: { base64: base64! }, param: "base64" };
}

/** The spec's OCR options as the extraction service takes them. */
export function ocrOptions(
  o: { extract_tables?: boolean; language?: string; output_format?: "text" | "json" | "markdown"; include_layout?: boolean | "blocks" | "words" } | undefined,
): ExtractOptions {
  const layout = o?.include_layout === true ? "blocks" : o?.include_layout || undefined;
  return {
    extractTables: o?.extract_tables ?? false,
    outputFormat: o?.output_format ?? "text",
    ...(o?.language ? { language: o.language } : {}),
    ...(layout ? { includeLayout: layout } : {}),
  };
}

/** Layout comes from the boxes of a local engine; an upstream model answers text only. */
export function checkLayoutSupport(model: ResolvedModel, options: ExtractOptions): void {
  if (options.includeLayout && model.model.source !== "local") {
    throw new FolioError("invalid_request", `options.include_layout needs a local model (local/tesseract, local/ppocr); '${model.model.id}' returns text only`, {
      param: "options.include_layout",
    });
  }
}

/**
 * A searchable PDF is built from a local engine's word boxes
 * (docs/ocr.md "Searchable PDF"); an upstream model answers text only.
 */
export function checkSearchablePdfSupport(model: ResolvedModel, searchablePdf: boolean | undefined): void {
  if (searchablePdf && model.model.source !== "local") {
    throw new FolioError("invalid_request", `options.searchable_pdf needs a local model (local/tesseract, local/ppocr); '${model.model.id}' returns text only`, {
      param: "options.searchable_pdf",
    });
  }
}

/** `strategy` and `provider_preferences.strategy` are the same value in two places; both given and different is a 400. */
export function strategyOf(body: { strategy?: string; provider_preferences?: { strategy?: string } }): { strategy?: string; param: string } {
  const a = body.strategy;
  const b = body.provider_preferences?.strategy;
  if (a !== undefined && b !== undefined && a !== b) {
    throw new FolioError("invalid_request", "'strategy' and 'provider_preferences.strategy' disagree; send one", { param: "provider_preferences.strategy" });
  }
  return a !== undefined ? { strategy: a, param: "strategy" } : { strategy: b, param: "provider_preferences.strategy" };
}

/**
 * The request's `pages` option, read once before any work: a 400 naming the
 * field when it is not a selection, or when it selects more pages than the
 * limit (`maxPages`: a synchronous call's, or a job's; an open range,
 * `"5-"`, is counted once the document's pages are).
 */
export function pageSelectionOf(deps: EdgeDeps, text: string | undefined, maxPages = deps.documents.maxPages): PageSelection | undefined {
  if (text === undefined) return undefined;
  const parsed = parsePages(text);
  if (!parsed.ok) throw new FolioError("invalid_request", parsed.problem, { param: "pages" });
  const over = selectionOverLimit(parsed.selection, maxPages);
  if (over) throw new FolioError("invalid_request", over, { param: "pages", extra: { max_pages: maxPages } });
  return parsed.selection;
}

/**
 * How many pages will be read (cheap: no rendering): the document's, or the
 * selected ones; a document over the limit, or a selection it cannot meet,
 * is a 400 here. Null for an office document, whose pages are known only
 * once it is converted (the conversion checks them).
 */
export async function countPages(deps: EdgeDeps, doc: LoadedDocument, pages?: PageSelection): Promise<number | null> {
  if (doc.sniffed.kind === "office") {
    conversionOf(deps);
    return null;
  }
  const n = doc.sniffed.kind === "image" ? 1 : await pdfPageCount(doc.bytes);
  const plan = planPages(n, pages, deps.documents.maxPages);
  if (!plan.ok) {
    throw new FolioError("invalid_request", plan.message, {
      param: plan.problem === "over_limit" ? doc.param : "pages",
      extra: { page_count: n, max_pages: deps.documents.maxPages },
    });
  }
  return plan.pages.length;
}

/**
 * Page images of the document (or of the `pages` selected), in document
 * order, each with its page number in the document. An office document is
 * converted by the conversion service, which prices its compute time onto
 * `paid.meter`.
 */
export async function pageImages(
  deps: EdgeDeps,
  doc: LoadedDocument,
  signal: AbortSignal,
  paid: { meter: Meter; requestId: string; filename?: string },
  pages?: PageSelection,
): Promise<PageInput[]> {
  if (doc.sniffed.kind === "image") return [{ pageNumber: 1, image: doc.bytes, mimeType: doc.sniffed.mimeType }];
  const selected = pages ? { pages } : {};
  if (doc.sniffed.kind === "pdf") {
    const r = await rasterizePdf(doc.bytes, { dpi: PAGE_DPI, maxPages: deps.documents.maxPages, timeoutMs: deps.documents.pdfTimeoutMs, signal, ...selected });
    return r.pages.map((image, i) => ({ pageNumber: r.pageNumbers[i]!, image, mimeType: "image/png" }));
  }
  const converted = await conversionOf(deps).convert(
    {
      document: doc.bytes,
      mimeType: doc.sniffed.mimeType,
      ...(paid.filename ? { filename: paid.filename } : {}),
      maxPages: deps.documents.maxPages,
      ...selected,
      requestId: paid.requestId,
    },
    signal,
  );
  paid.meter.conversion(converted);
  return converted.pages.map((p) => ({ pageNumber: p.pageNumber, image: p.png, mimeType: "image/png" }));
}

/** The hold for reading `pages` pages with `model`, plus one conversion when the document is an office document. */
export function documentHoldCents(deps: EdgeDeps, model: ResolvedModel, pages: number, office: boolean): number {
  return holdCents({
    model: model.model,
    pages,
    maxCompletionTokens: model.maxCompletionTokens,
    conversions: office ? 1 : 0,
    conversionDeadlineMs: deps.conversionDeadlineMs,
    parserPages: 0,
  });
}

/**
 * Runs `fn` over the items of `source` as they come, at most `limit` at a
 * time, and returns the results in source order. An item is taken from the
 * source only when a slot is free, so a stream is not read ahead of the work.
 * The first failure rejects at once, even while the source is still
 * producing; no further item is started, and the source is closed
 * (`return()`) — at once when it is idle, after its pending item otherwise:
 * the caller aborts what it produces from (and what is in flight) on the
 * rejection.
 */
export async function mapLimit<T, R>(source: AsyncIterable<T> | Iterable<T>, limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const it = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : toAsync(source[Symbol.iterator]());
  const out: R[] = [];
  let fail!: (err: unknown) => void;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => {}); // observed through the races below
  const running = new Set<Promise<void>>();
  const state = { pulling: false };
  try {
    for (let i = 0; ; i++) {
      while (running.size >= limit) await Promise.race([failed, ...running]);
      state.pulling = true;
      const next = await Promise.race([failed, it.next()]);
      state.pulling = false;
      if (next.done) break;
      const task: Promise<void> = fn(next.value, i).then((r) => {
        out[i] = r;
        running.delete(task);
      }, fail);
      running.add(task);
    }
    await Promise.race([failed, Promise.all(running)]);
    return out;
  } finally {
    // An idle source (a PDF stream between pages) is closed before the caller hears of the failure.
    const closing = it.return?.().catch(() => undefined);
    if (!state.pulling) await closing;
  }
}

function toAsync<T>(it: Iterator<T>): AsyncIterator<T> {
  return { next: async () => it.next() };
}

/** Progress of {@link readDocument}: the playground streams these as they are (docs/playground.md). */
export const PipelineEventSchemas = [
  Type.Object({ event: Type.Literal("started"), id: Type.String(), model: Type.String(), document: Type.Object({ format: Type.String(), kind: Type.String(), bytes: Type.Integer() }) }),
  Type.Object({ event: Type.Literal("converting"), format: Type.String() }),
  Type.Object({ event: Type.Literal("rasterizing") }),
  Type.Object({ event: Type.Literal("extracting"), page_count: Type.Integer() }),
  Type.Object({ event: Type.Literal("page"), page_number: Type.Integer(), completed: Type.Integer(), of: Type.Integer() }),
] as const;
export type PipelineEvent = Static<(typeof PipelineEventSchemas)[number]>;

export interface ReadRequest<A> {
  /** The usage log's endpoint. */
  endpoint: string;
  payer: Payer;
  model: ResolvedModel;
  document: LoadedDocument;
  options: ExtractOptions;
  /** Passed to the conversion service for its logs. */
  filename?: string;
  /** Only these pages (the request's `pages`, from {@link pageSelectionOf}); absent: every page. */
  pages?: PageSelection;
  /**
   * Build {@link ReadResult.searchablePdf} (local models only): the engine
   * is asked for word boxes, and the answer keeps only the layout that
   * `options.includeLayout` asked for.
   */
  searchablePdf?: boolean;
  /**
   * Cancels the work (the client went away); what was billed until then is
   * charged. When its reason is an Error, that is what the request fails with.
   */
  signal?: AbortSignal;
  onEvent?: (event: PipelineEvent) => void;
  /**
   * What to keep of each page's image once the model has read it (the
   * playground keeps one a browser can show); absent, nothing is kept, so a
   * long PDF's pages (4 MB each as raw pixels) do not pile up in memory.
   */
  keepImage?: (page: PageInput) => Promise<KeptImage>;
  /** The success answer, built once from the reading: what the route sends and what an Idempotency-Key keeps. */
  answer: (read: ReadResult) => A;
  /** The request's Idempotency-Key claim (docs/idempotency.md), when it has one. */
  idempotency?: PaidIdempotency;
}

export interface KeptImage {
  bytes: Buffer;
  mimeType: string;
}

export interface ReadPage {
  pageNumber: number;
  /** What {@link ReadRequest.keepImage} kept of the page image. */
  image?: KeptImage;
  read: PageExtraction;
}

export interface ReadResult {
  requestId: string;
  pages: ReadPage[];
  /** When {@link ReadRequest.searchablePdf} asked for it: the document's pages read with an invisible text layer. */
  searchablePdf?: Buffer;
  charge: ComponentCharge;
  components: MeteredComponents;
  conversionMillis: number[];
  /** Billed work, hold to settle. */
  processingTimeMs: number;
  timings: {
    /**
     * Making page images: conversion (with queueing) or rasterization; 0 for
     * an image. A PDF streamed to a local engine is rasterized while its
     * first pages are read: until the last page was rendered.
     */
    conversionMs: number;
    /** From the first page sent to the model to the last page back. */
    extractionMs: number;
  };
}

/** The whole pipeline for one document, billed as `req.endpoint`; see the module comment. */
export async function readDocument<A>(deps: EdgeDeps, req: ReadRequest<A>): Promise<ReadResult & { answer: A }> {
  const { document: doc, model, onEvent } = req;
  checkLayoutSupport(model, req.options);
  checkSearchablePdfSupport(model, req.searchablePdf);
  const extraction = extractionOf(deps);
  // Words are the blocks and more: asked of the engine for the text layer, trimmed back to what the client asked for below.
  const engineOptions: ExtractOptions = req.searchablePdf ? { ...req.options, includeLayout: "words" } : req.options;
  const pageCount = await countPages(deps, doc, req.pages);
  // A PDF keeps its own pages; one pdf-lib cannot open is rebuilt from its page images, so those are kept while it is read.
  const keepForPdf = req.searchablePdf === true && (doc.sniffed.kind !== "pdf" || !(await canCopyPdfPages(doc.bytes, await pdfPageCount(doc.bytes))));
  const office = pageCount === null;
  const timings = { conversionMs: 0, extractionMs: 0 };
  const estimateCents = documentHoldCents(deps, model, pageCount ?? 1, office);
  const asRead = (o: PaidOutcome<Read>): ReadResult => ({
    requestId: o.requestId,
    pages: o.result.pages,
    ...(o.result.searchablePdf ? { searchablePdf: o.result.searchablePdf } : {}),
    charge: o.charge,
    components: o.components,
    conversionMillis: o.conversionMillis,
    processingTimeMs: o.processingTimeMs,
    timings,
  });
  const paid = { endpoint: req.endpoint, model: model.model.id, estimateCents, answer: (o: PaidOutcome<Read>) => req.answer(asRead(o)), ...(req.idempotency ? { idempotency: req.idempotency } : {}) };
  const outcome = await runPaid(deps.billing, req.payer, paid, async ({ meter, requestId, raiseHold }): Promise<Read> => {
    const abort = new AbortController();
    const cancel = () => abort.abort(req.signal?.reason);
    req.signal?.addEventListener("abort", cancel, { once: true });
    try {
      onEvent?.({ event: "started", id: requestId, model: model.model.id, document: { format: formatLabel(doc.sniffed), kind: doc.sniffed.kind, bytes: doc.bytes.length } });
      if (office) onEvent?.({ event: "converting", format: formatLabel(doc.sniffed) });
      else if (doc.sniffed.kind === "pdf") onEvent?.({ event: "rasterizing" });
      const t0 = Date.now();
      let pages: AsyncIterable<PageInput> | readonly PageInput[];
      let pageTotal: number;
      if (doc.sniffed.kind === "pdf" && model.model.source === "local") {
        pages = streamPdfPages(doc.bytes, {
          dpi: PAGE_DPI,
          maxPages: deps.documents.maxPages,
          ...(req.pages ? { pages: req.pages } : {}),
          timeoutMs: deps.documents.pdfTimeoutMs,
          signal: abort.signal,
          onRendered: () => (timings.conversionMs = Date.now() - t0),
        });
        pageTotal = pageCount!;
      } else {
        const images = await pageImages(deps, doc, abort.signal, { meter, requestId, ...(req.filename ? { filename: req.filename } : {}) }, req.pages);
        // An image is its own page: nothing was converted (a busy clock can still tick 1 ms).
        timings.conversionMs = doc.sniffed.kind === "image" ? 0 : Date.now() - t0;
        if (office) await raiseHold(documentHoldCents(deps, model, images.length, true));
        pages = images;
        pageTotal = images.length;
      }
      let t1 = 0;
      let completed = 0;
      const kept = new Map<number, Buffer>();
      const read = await mapLimit(pages, deps.documents.pageConcurrency, async (page, i): Promise<ReadPage> => {
        // When the first page is ready: at once for images, after the first rendered page of a streamed PDF.
        if (i === 0) {
          onEvent?.({ event: "extracting", page_count: pageTotal });
          t1 = Date.now();
        }
        const r = await extraction.extractPage(model.model.id, page, engineOptions, abort.signal);
        if (keepForPdf) kept.set(page.pageNumber, await compactPageImage(page.image));
        meter.modelCall(r.providerCostCents, { prompt: r.result.usage.promptTokens, completion: r.result.usage.completionTokens });
        meter.pages++;
        onEvent?.({ event: "page", page_number: page.pageNumber, completed: ++completed, of: pageTotal });
        return { pageNumber: page.pageNumber, ...(req.keepImage ? { image: await req.keepImage(page) } : {}), read: r };
      });
      timings.extractionMs = Date.now() - t1;
      if (!req.searchablePdf) return { pages: read };
      const searchablePdf = await buildSearchablePdf({ kind: searchableKindOf(doc.sniffed), document: doc.bytes, pages: read.map((p) => searchablePageOf(p, kept.get(p.pageNumber), doc.sniffed.kind)) });
      return { pages: read.map((p) => ({ ...p, read: withLayoutAsked(p.read, req.options) })), searchablePdf };
    } catch (err) {
      abort.abort();
      // The usage log records why the work stopped, not the failure of the call the cancellation cut short.
      if (req.signal?.aborted && req.signal.reason instanceof Error) throw req.signal.reason;
      throw err;
    } finally {
      req.signal?.removeEventListener("abort", cancel);
    }
  });
  return { ...asRead(outcome), answer: outcome.answer };
}

/** What the paid work of {@link readDocument} produces. */
interface Read {
  pages: ReadPage[];
  searchablePdf?: Buffer;
}

/**
 * A page as the searchable PDF takes it: its words, in the engine's reading
 * order, with boxes in pixels of the image as sent. Rendered pages (a PDF's
 * fallback, an office document's) are PAGE_DPI images; an image says its own.
 */
function searchablePageOf(p: ReadPage, image: Buffer | undefined, kind: Sniffed["kind"]): SearchablePage {
  const layout = p.read.result.layout;
  const rotation = p.read.result.rotation;
  return {
    pageNumber: p.pageNumber,
    width: layout?.width ?? 1,
    height: layout?.height ?? 1,
    ...(image ? { image } : {}),
    ...(kind !== "image" ? { dpi: PAGE_DPI } : {}),
    ...(rotation !== undefined ? { rotation } : {}),
    words: (layout?.blocks ?? []).flatMap((b) => b.words ?? []),
  };
}

/** Office documents and text files were converted to page images: those are the pages. */
function searchableKindOf(sniffed: Sniffed): SearchableKind {
  return sniffed.kind === "pdf" || sniffed.kind === "image" ? sniffed.kind : "office";
}

/** The engine's answer with the layout the client asked for: none, blocks without their words, or all of it. */
function withLayoutAsked(read: PageExtraction, options: ExtractOptions): PageExtraction {
  const { layout, ...rest } = read.result;
  if (!layout || options.includeLayout === "words") return read;
  if (!options.includeLayout) return { ...read, result: rest };
  return { ...read, result: { ...rest, layout: { ...layout, blocks: layout.blocks.map(({ words: _words, ...block }) => block) } } };
}

/** PNG, PDF, DOCX…: the label people know the format by. */
export function formatLabel(sniffed: Sniffed): string {
  if (sniffed.officeFormat) return sniffed.officeFormat;
  if (sniffed.kind === "pdf") return "PDF";
  return (sniffed.mimeType.split("/")[1] ?? "image").toUpperCase();
}

/** What every reading answer has: the text, per-page results, flattened tables and the mean confidence. */
export function readingOf(read: ReadResult): {
  text: string;
  pages: { page_number: number; text: string; confidence?: number; rotation?: number; skew_degrees?: number; layout?: PageLayout; blocks?: PageBlock[] }[];
  tables: (Table & { page_numbers: number[] })[];
  confidence?: number;
} {
  const pages = read.pages.map(({ pageNumber, read: r }) => ({
    page_number: pageNumber,
    text: r.result.text,
    ...(r.result.confidence !== undefined ? { confidence: r.result.confidence } : {}),
    ...(r.result.rotation !== undefined ? { rotation: r.result.rotation, skew_degrees: r.result.skewDegrees ?? 0 } : {}),
    ...(r.result.layout ? { layout: r.result.layout } : {}),
    ...(r.result.blocks ? { blocks: r.result.blocks } : {}),
  }));
  const confidences = pages.map((p) => p.confidence);
  const allScored = confidences.length > 0 && confidences.every((c) => c !== undefined);
  return {
    text: pages.map((p) => p.text).join("\n\n"),
    pages,
    tables: joinPageTables(read.pages.flatMap(({ pageNumber, read: r }) => r.result.tables.map((t) => ({ ...t, page_number: pageNumber })))),
    ...(allScored ? { confidence: (confidences as number[]).reduce((a, b) => a + b, 0) / confidences.length } : {}),
  };
}

/** Token counts over every page read. */
export function tokensOf(read: ReadResult): { pages_processed: number; prompt_tokens: number; completion_tokens: number; tokens_used: number } {
  const p = read.pages.reduce((n, { read: r }) => n + r.result.usage.promptTokens, 0);
  const c = read.pages.reduce((n, { read: r }) => n + r.result.usage.completionTokens, 0);
  return { pages_processed: read.pages.length, prompt_tokens: p, completion_tokens: c, tokens_used: p + c };
}
