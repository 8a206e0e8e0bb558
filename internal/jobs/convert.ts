/**
 * An office document's job is converted once, by the worker that claims its
 * one conversion range: the conversion service hands back the PDF
 * LibreOffice renders in its sandbox (output `pdf`: no page rendered there),
 * which becomes the document the job's pages are rendered from, a few at a
 * time, exactly as a PDF sent by the client (so a 5,000-page document never
 * sits in memory as images, and the service's limit of rendered pages,
 * FOLIO_CONVERSION_MAX_PAGES, does not apply: the job's does). In one
 * transaction: the PDF stored, the conversion charged, the `pages`
 * selection planned on the real page count, the hold set from it (raised
 * or lowered), and the pages queued as ranges. A worker that dies
 * converting leaves the range to its lease; the next one converts again,
 * and the conversion is charged once.
 */
import { holdCents, resizeJobHold, chargeJobConversion, type HoldBasis } from "../billing/index.ts";
import type { Conversion, ConvertRequest } from "../contracts/index.ts";
import { parsePages, planPages } from "../formats/pages.ts";
import type { DB } from "../platform/db/index.ts";
import { addRanges, finishRange, type LeasedRange } from "./queue.ts";
import { documentBytes, putConvertedDocument, type DocumentStore } from "./blobs.ts";
import { endJob, type JobRequest, type JobRow, type StoreOptions } from "./store.ts";

/** What the worker needs of the conversion service (its gRPC client has it). */
export interface DocumentConverter {
  convert(req: ConvertRequest, signal?: AbortSignal): Promise<Conversion>;
}

export interface ConvertJobOptions {
  converter: DocumentConverter;
  rangePages: number;
  maxPages: number;
  store: StoreOptions;
  documents: DocumentStore;
}

/** Converts the job's document and queues its pages; false when the range had been finished already. */
export async function convertJob(db: DB, job: JobRow, range: LeasedRange, o: ConvertJobOptions, signal: AbortSignal): Promise<boolean> {
  const request = job.request as JobRequest;
  const converted = await o.converter.convert(
    {
      document: await documentBytes(db, o.documents, job.id),
      mimeType: request.mime_type,
      ...(request.filename ? { filename: request.filename } : {}),
      maxPages: o.maxPages,
      output: "pdf",
      requestId: job.id,
    },
    signal,
  );
  signal.throwIfAborted();
  const pdf = converted.pdf;
  if (!pdf) throw new Error("the conversion service answered pages where a PDF was asked for");
  return db.transaction().execute(async (trx) => {
    if (!(await finishRange(trx, range))) return false;
    const now = await trx.selectFrom("ocr_jobs").select("status").where("id", "=", job.id).forUpdate().executeTakeFirstOrThrow();
    if (now.status !== "queued" && now.status !== "running") return true;
    await chargeJobConversion(trx, job.id, { providerCostCents: converted.providerCostCents, computeMillis: converted.computeMillis });
    const fail = (code: string, message: string) => endJob(trx, job.id, "failed", { code, message }, o.store).then(() => true);
    const parsed = request.pages ? parsePages(request.pages) : undefined;
    const plan = planPages(converted.documentPageCount, parsed?.ok ? parsed.selection : undefined, o.maxPages);
    // Too many pages is the document's problem, a selection past its end the request's: either ends the job (the conversion stays charged).
    if (!plan.ok) return fail("invalid_request", plan.message);
    const pages = plan.pages.length;
    const basis: HoldBasis = { ...request.holdBasis, pages, conversions: 1 };
    if (!(await resizeJobHold(trx, job.id, holdCents(basis)))) {
      return fail("insufficient_credits", `the document has ${pages} pages to read; reading them needs ${holdCents(basis)} cents of available balance`);
    }
    await putConvertedDocument(trx, o.documents, job.id, pdf);
    const everyPage = plan.pages.every((n, i) => n === i + 1);
    const read: JobRequest = { ...request, kind: "pdf", converted: true, holdBasis: basis, ...(everyPage ? {} : { selected: plan.pages }) };
    // The conversion's range (1-1) gives way to the pages' ranges.
    await trx.deleteFrom("ocr_job_ranges").where("job_id", "=", job.id).execute();
    await trx.updateTable("ocr_jobs").set({ page_count: pages, request: JSON.stringify(read) }).where("id", "=", job.id).execute();
    await addRanges(trx, { id: job.id, accountId: job.account_id }, pages, o.rangePages);
    return true;
  });
}
