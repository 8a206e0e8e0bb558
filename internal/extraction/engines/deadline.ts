/**
 * A local engine's reading of one page, held to its deadline and to its
 * caller's abort: the tesseract CLI's child (engines/tesseract.ts), a
 * resident tesseract program (engines/tesseract-server.ts) and a PP-OCR
 * worker (engines/ppocr.ts) each stop their work the same way when the
 * backstop timer fires or the request is aborted, and stop watching once
 * the reading has settled.
 */

/**
 * Watches a reading: after `timeoutMs`, `stop` is called with `timedOut()`;
 * when `signal` aborts first, with the signal's reason. Answers the function
 * that ends the watch (call it when the reading settles).
 */
export function watchDeadline(signal: AbortSignal, timeoutMs: number, timedOut: () => unknown, stop: (why: unknown) => void): () => void {
  const timer = setTimeout(() => stop(timedOut()), timeoutMs);
  const onAbort = () => stop(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  return () => {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  };
}

/** A promise's `resolve` and `reject` that each call `done` first (ending its watch), for a reading settled from elsewhere. */
export function settleAfter<T>(done: () => void, resolve: (value: T) => void, reject: (err: unknown) => void): { resolve(value: T): void; reject(err: unknown): void } {
  return {
    resolve: (value) => {
      done();
      resolve(value);
    },
    reject: (err) => {
      done();
      reject(err);
    },
  };
}
