/**
 * The sandbox program's one error type, raised by every step of a
 * conversion (`office.ts`, `warm-office.ts`, `render.ts`, `tools.ts`) and
 * turned into result.json's `error` by `converter.ts`. A module of its own
 * so that the steps need not import the entry that imports them.
 *
 * Bundled into the sandbox program with `converter.ts`, under its rule on
 * imports.
 */
import type { JobErrorCode } from "./interface.ts";

/** A failure the job reports in result.json (never thrown past `runJob`, converter.ts). */
export class JobError extends Error {
  constructor(
    readonly code: JobErrorCode,
    message: string,
  ) {
    super(message);
  }
}
