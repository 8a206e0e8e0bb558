/**
 * An answer streamed as NDJSON (one JSON object per line), opened (status
 * 200, headers) by its first line: a request refused before that still gets
 * a plain HTTP error with its own status.
 */
import type { PassThrough } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { openStreamedAnswer } from "./streamed.ts";

export const NDJSON = "application/x-ndjson";

/** True when the client asked for NDJSON in `Accept`. */
export function acceptsNdjson(req: FastifyRequest): boolean {
  return (req.headers.accept ?? "").split(",").some((t) => t.split(";")[0]!.trim().toLowerCase() === NDJSON);
}

export class NdjsonStream<Line> {
  private body: PassThrough | null = null;
  constructor(private readonly reply: FastifyReply) {}

  /** True once the first line went out (the status is sent). */
  get open(): boolean {
    return this.body !== null;
  }

  send(line: Line): void {
    this.body ??= openStreamedAnswer(this.reply, NDJSON);
    // The client may be gone (its close aborted the work): nothing to tell it then.
    if (!this.body.destroyed && !this.body.writableEnded) this.body.write(JSON.stringify(line) + "\n");
  }

  /** Sends the last line and ends the answer. */
  end(line: Line): void {
    this.send(line);
    if (!this.body!.destroyed) this.body!.end();
  }
}
