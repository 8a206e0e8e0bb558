/**
 * An answer streamed as server-sent events (`text/event-stream`, the format
 * OpenAI-compatible clients read), opened (status 200, headers) by its first
 * event or its first keep-alive: a request refused before that still gets a
 * plain HTTP error with its own status.
 *
 * While the stream is silent for `keepAliveMs`, a comment line
 * (`: keep-alive`) goes out, so proxies and load balancers that cut idle
 * connections leave it open while a slow page is read or a provider thinks.
 * Comments are invisible to SSE clients.
 */
import type { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";
import { openStreamedAnswer } from "./streamed.ts";

export const EVENT_STREAM = "text/event-stream";

/** One `data:` event: JSON, or the `[DONE]` sentinel OpenAI streams end with. */
export function sseEvent(data: unknown): string {
  return `data: ${data === DONE ? DONE : JSON.stringify(data)}\n\n`;
}

export const DONE = "[DONE]";

export class SseStream {
  private body: PassThrough | null = null;
  private timer: NodeJS.Timeout | null = null;
  private keepingAlive = false;
  /** The data events sent so far, as the SSE text a replay repeats (keep-alives left out). */
  private sent = "";

  constructor(
    private readonly reply: FastifyReply,
    private readonly keepAliveMs: number,
  ) {}

  /** True once the first byte went out (the status is sent). */
  get open(): boolean {
    return this.body !== null;
  }

  /** The data events sent so far, as SSE text. */
  transcript(): string {
    return this.sent;
  }

  /**
   * Starts the keep-alive clock: from now on, `keepAliveMs` of silence sends a
   * comment (the first one opens the stream). Started once the request's hold
   * is taken: refusals before it stay plain HTTP errors.
   */
  keepAlive(): void {
    this.keepingAlive = true;
    this.arm();
  }

  /** Stops the keep-alive clock (the work is over: what follows is written at once). */
  stopKeepAlive(): void {
    this.keepingAlive = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Sends one data event. */
  send(data: unknown): void {
    this.write(sseEvent(data), true);
  }

  /** Writes already formatted data events (kept in the transcript) and ends the answer. */
  end(events: string): void {
    this.stopKeepAlive();
    this.write(events, true);
    if (!this.body!.destroyed) this.body!.end();
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    if (!this.keepingAlive) return;
    this.timer = setTimeout(() => this.write(": keep-alive\n\n", false), this.keepAliveMs);
    // A stream left unfinished must not hold the process open.
    this.timer.unref();
  }

  private write(text: string, data: boolean): void {
    this.body ??= openStreamedAnswer(this.reply, EVENT_STREAM);
    if (data) this.sent += text;
    // The client may be gone: nothing to tell it then (the transcript is still kept for a replay).
    if (!this.body.destroyed && !this.body.writableEnded) this.body.write(text);
    this.arm();
  }
}
