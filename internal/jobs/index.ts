/**
 * Durable OCR jobs (docs/adr/0005-durable-jobs-queue.md): the queue of page
 * ranges with leases and fair hand-out, the jobs' events, and the running
 * worker (`startWorker`, for `folio worker` and `folio dev`).
 */
export { QUEUE_CHANNEL, addRanges, claimRange, cutRanges, finishRange, openRanges, queueState, queuedPages, releaseLease, renewLease, type LeasedRange } from "./queue.ts";
export { EVENTS_CHANNEL, JOB_EVENT_TYPES, JobEventWaits, appendEvent, eventSequence, eventsAfter, type JobEvent, type JobEventType } from "./events.ts";
export { JOBS_ENDPOINT, cancelJob, deleteExpiredJobs, endJob, insertJob, jobRow, jobView, listJobs, markStarted, pagesAfter, storeRange, storedPages, type JobListing, type JobRequest, type JobRow, type JobStatus, type NewJob, type ReadOutcome, type StoreOptions, type StoredPage } from "./store.ts";
export { JobWorker, type JobWorkerOptions, type PageReader } from "./worker.ts";
export { convertJob, type DocumentConverter } from "./convert.ts";
export { startWorker, type RunningWorker } from "./service.ts";
export { CHUNK_BYTES, documentBytes, documentFile, jobDocumentStore, putDocument, sweepDocuments, type DocumentStore, type JobDocumentInput } from "./blobs.ts";
