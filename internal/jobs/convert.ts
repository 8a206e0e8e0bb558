/**
 * An office document's job is converted once, by the worker that claims its
 * one conversion range: its pages become PNG images kept with the job
 * (ocr_job_images), its conversion is charged, its hold is set from the
 * real page count (raised or lowered), and its pages are queued as ranges
 * like a PDF's, all in one transaction. A worker that dies converting
 * leaves the range to its lease; the next one converts again, and the
 * conversion is charged once.
 */
import { holdCents, resizeJobHold, chargeJobConversion, type HoldBasis } from "../billing/index.ts";
import type { Conversion, ConvertRequest } from "../contracts/index.ts";
import { parsePages } from "../formats/pages.ts";
import type { DB } from "../platform/db/index.ts";
import { addRanges, finishRange, type LeasedRange } from "./queue.ts";
import { documentBytes, type DocumentStore } from "./blobs.ts";
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
  const parsed = request.pages ? parsePages(request.pages) : undefined;
  const converted = await o.converter.convert(
    {
      document: await documentBytes(db, o.documents, job.id),
      mimeType: request.mime_type,
      ...(request.filename ? { filename: request.filename } : {}),
      maxPages: o.maxPages,
      ...(parsed?.ok ? { pages: parsed.selection } : {}),
      requestId: job.id,
    },
    signal,
  );
  signal.throwIfAborted();
  return db.transaction().execute(async (trx) => {
    if (!(await finishRange(trx, range))) return false;
    const now = await trx.selectFrom("ocr_jobs").select("status").where("id", "=", job.id).forUpdate().executeTakeFirstOrThrow();
    if (now.status !== "queued" && now.status !== "running") return true;
    await chargeJobConversion(trx, job.id, { providerCostCents: converted.providerCostCents, computeMillis: converted.computeMillis });
    const pages = converted.pages.length;
    if (pages === 0) {
      await endJob(trx, job.id, "failed", { code: "invalid_request", message: "the document has no pages to read" }, o.store);
      return true;
    }
    const basis: HoldBasis = { ...request.holdBasis, pages, conversions: 1 };
    if (!(await resizeJobHold(trx, job.id, holdCents(basis)))) {
      await endJob(trx, job.id, "failed", { code: "insufficient_credits", message: `the document has ${pages} pages; reading them needs ${holdCents(basis)} cents of available balance` }, o.store);
      return true;
    }
    for (const [i, p] of converted.pages.entries()) {
      await trx.insertInto("ocr_job_images").values({ job_id: job.id, position: i + 1, page_number: p.pageNumber, png: p.png }).execute();
    }
    // The conversion's range (1-1) gives way to the pages' ranges.
    await trx.deleteFrom("ocr_job_ranges").where("job_id", "=", job.id).execute();
    await trx.updateTable("ocr_jobs").set({ page_count: pages }).where("id", "=", job.id).execute();
    await addRanges(trx, { id: job.id, accountId: job.account_id }, pages, o.rangePages);
    return true;
  });
}
