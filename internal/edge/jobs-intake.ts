/**
 * Accepting a durable OCR job (`POST /v1/ocr/jobs`, docs/jobs.md): what can
 * be known at once is checked at once, with /v1/ocr's codes (the document's
 * format from its bytes, its page count against FOLIO_JOB_MAX_PAGES, the
 * model, the options, the balance for the hold); then the job, its document
 * and its hold are written in one transaction and the workers take it from
 * there.
 *
 * A multipart upload arrives as a file (streamed to disk by the route);
 * only a PDF may be as large as FOLIO_JOB_MAX_BYTES, read page by page from
 * that file. Images and office documents are read whole (an engine takes an
 * image whole; the conversion service takes a document whole), so they keep
 * the synchronous limit, FOLIO_MAX_DOCUMENT_BYTES, as url and base64 bodies do.
 */
import { open } from "node:fs/promises";
import { holdCents, type HoldBasis } from "../billing/index.ts";
import { pdfPageCount, sniffDocument, type Sniffed } from "../documents/index.ts";
import type { ResolvedModel } from "../extraction/client.ts";
import type { ExtractOptions } from "../contracts/index.ts";
import { planPages, type PageSelection } from "../formats/pages.ts";
import { insertJob, jobRow, jobView, type JobRequest } from "../jobs/index.ts";
import { FolioError } from "../platform/errors/index.ts";
import { checkLayoutSupport, loadDocument, pageSelectionOf, type DocumentSource } from "./pipeline.ts";
import { conversionOf } from "./services.ts";
import type { PaidIdempotency, Payer } from "../billing/index.ts";
import type { EdgeDeps } from "./types.ts";

/** The bytes sniffed of an uploaded file before it is known to be a PDF: every signature Folio reads is in them. */
const SNIFF_BYTES = 4 * 1024 * 1024;

/** A job's document as received: bytes (url, base64) or an uploaded file. */
export type JobDocumentSource = { source: DocumentSource; param: string } | { file: { path: string; bytes: number; filename?: string }; param: string };

export interface JobSubmission {
  payer: Payer;
  model: ResolvedModel;
  document: JobDocumentSource;
  mimeType?: string;
  /** The `pages` text as sent. */
  pages?: string;
  options: ExtractOptions;
  /** The options as sent (echoed). */
  rawOptions: Record<string, unknown>;
  metadata: Record<string, string>;
  idempotency?: PaidIdempotency;
}

/** What the document is and, for a PDF or an image, which pages the job reads (null: an office document, counted once converted). */
async function inspect(deps: EdgeDeps, s: JobSubmission, selection: PageSelection | undefined): Promise<{ sniffed: Sniffed; document: Buffer | { path: string; bytes: number }; selected: number[] | null }> {
  let sniffed: Sniffed;
  let document: Buffer | { path: string; bytes: number };
  const d = s.document;
  if ("file" in d) {
    if (d.file.bytes === 0) throw new FolioError("unsupported_format", "the document is empty", { param: d.param });
    const start = await head(d.file.path, SNIFF_BYTES);
    sniffed = await sniffDocument(start, s.mimeType).catch(async (err: unknown) => {
      // A ZIP whose head does not say what it holds (an Office Open XML file names itself last) is judged on its
      // directory, at its end: read whole, as an office document is anyway, when it is small enough to be one.
      if (!isZip(start) || d.file.bytes <= SNIFF_BYTES || d.file.bytes > deps.documents.maxBytes) throw err;
      return sniffDocument(await head(d.file.path, d.file.bytes), s.mimeType);
    });
    if (sniffed.kind !== "pdf" && d.file.bytes > deps.documents.maxBytes) {
      throw new FolioError("payload_too_large", `a ${sniffed.kind} document of a job is read whole: at most ${deps.documents.maxBytes} bytes (only a PDF may be as large as ${deps.jobs.maxBytes})`, {
        param: d.param,
        extra: { max_bytes: deps.documents.maxBytes },
      });
    }
    // Zip and OLE2 containers are judged on their whole directory; they are small enough to read whole here.
    if (sniffed.kind === "office" && d.file.bytes > SNIFF_BYTES) sniffed = await sniffDocument(await head(d.file.path, d.file.bytes), s.mimeType);
    document = { path: d.file.path, bytes: d.file.bytes };
  } else {
    const loaded = await loadDocument(deps, d.source, { param: d.param, ...(s.mimeType ? { mimeType: s.mimeType } : {}) });
    sniffed = loaded.sniffed;
    document = loaded.bytes;
  }
  if (sniffed.kind === "office") {
    conversionOf(deps);
    return { sniffed, document, selected: null };
  }
  const n =
    sniffed.kind === "image"
      ? 1
      : await pdfPageCount(Buffer.isBuffer(document) ? document : { path: document.path }).catch((err: unknown) => {
          // A damaged or encrypted PDF is the field's fault.
          throw err instanceof FolioError && err.param === undefined && err.code === "invalid_request" ? new FolioError(err.code, err.message, { param: d.param }) : err;
        });
  const plan = planPages(n, selection, deps.jobs.maxPages);
  if (!plan.ok) {
    throw new FolioError("invalid_request", plan.message, {
      param: plan.problem === "over_limit" ? d.param : "pages",
      extra: { page_count: n, max_pages: deps.jobs.maxPages },
    });
  }
  return { sniffed, document, selected: plan.pages };
}

/** A job's pages are stored one by one as they are read; a PDF of the whole document is not built from them yet (docs/ocr.md "Searchable PDF"). */
function refuseSearchablePdf(options: Record<string, unknown>): void {
  if (options.searchable_pdf === true) {
    throw new FolioError("invalid_request", "options.searchable_pdf is not available for durable jobs yet; use POST /v1/ocr", { param: "options.searchable_pdf" });
  }
}

/** A ZIP's local file header signature, "PK\x03\x04". */
function isZip(bytes: Buffer): boolean {
  return bytes.length >= 4 && bytes.readUInt32LE(0) === 0x04034b50;
}

async function head(path: string, bytes: number): Promise<Buffer> {
  const file = await open(path, "r");
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** Checks the submission, writes the job with its hold (402 when the balance is short), and answers the job as stored. */
export async function submitJob(deps: EdgeDeps, s: JobSubmission): Promise<Record<string, unknown>> {
  refuseSearchablePdf(s.rawOptions);
  checkLayoutSupport(s.model, s.options);
  const selection = pageSelectionOf(deps, s.pages, deps.jobs.maxPages);
  const { sniffed, document, selected } = await inspect(deps, s, selection);
  const office = selected === null;
  const basis: HoldBasis = {
    model: { source: s.model.model.source, pricing: s.model.model.pricing },
    pages: selected?.length ?? 1,
    maxCompletionTokens: s.model.maxCompletionTokens,
    conversions: office ? 1 : 0,
    conversionDeadlineMs: deps.conversionDeadlineMs,
    parserPages: 0,
  };
  const everyPage = selected !== null && selected.every((n, i) => n === i + 1);
  const request: JobRequest = {
    mime_type: sniffed.mimeType,
    options: s.rawOptions,
    extract: s.options,
    ...(s.pages !== undefined ? { pages: s.pages } : {}),
    ...(selected && !everyPage ? { selected } : {}),
    kind: sniffed.kind === "image" ? "image" : sniffed.kind === "pdf" ? "pdf" : "office",
    ...("file" in s.document && s.document.file.filename ? { filename: s.document.file.filename } : {}),
    holdBasis: basis,
  };
  const idem = s.idempotency;
  let view: Record<string, unknown> | undefined;
  const id = await insertJob(deps.db, {
    accountId: s.payer.accountId,
    apiKeyId: s.payer.keyId,
    model: s.model.model.id,
    request,
    metadata: s.metadata,
    document,
    store: deps.jobs.documents,
    pageCount: selected?.length ?? null,
    hold: { cents: holdCents(basis), ttlMs: deps.jobs.holdTtlMs },
    rangePages: deps.jobs.rangePages,
    ...(idem
      ? {
          idempotency: {
            store: idem.store,
            claim: idem.claim,
            answer: async (row) => {
              view = jobView(row);
              return { status: 202, body: idem.serialize(view), requestId: row.id };
            },
          },
        }
      : {}),
  }).then(
    (jobId) => (deps.metrics.holds.inc({ outcome: "taken" }), jobId),
    (err: unknown) => {
      if (err instanceof FolioError && err.code === "insufficient_credits") {
        deps.metrics.holds.inc({ outcome: "insufficient" });
        deps.metrics.insufficientCredits.inc();
      }
      throw err;
    },
  );
  if (idem) idem.claim.finished = true;
  return view ?? jobView((await jobRow(deps.db, id))!);
}
