/**
 * Reading a streamed answer with fetch as it arrives: text chunks with a
 * deadline for silence, NDJSON lines, and server-sent events. The job's
 * events are not read with EventSource because it cannot send the
 * Authorization header.
 */

/** The body fell silent for longer than the stream promises to (its keep-alives stopped). */
export class StreamStalled extends Error {
  constructor(readonly idleMs: number) {
    super(`nothing arrived for ${Math.round(idleMs / 1000)} s`);
  }
}

/**
 * The body as text, chunk by chunk; throws StreamStalled when nothing comes
 * for `idleMs` (a connection that died without closing stays silent for
 * ever). Leaving the loop early cancels the body, which closes the request.
 */
export async function* textChunks(body: ReadableStream<Uint8Array>, idleMs: number): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const silence = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new StreamStalled(idleMs)), idleMs)));
      const read = await Promise.race([reader.read(), silence]).finally(() => clearTimeout(timer));
      if (read.done) {
        const tail = decoder.decode();
        if (tail) yield tail;
        return;
      }
      yield decoder.decode(read.value, { stream: true });
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** Each complete line of an NDJSON body, parsed; a last line without its newline counts too. */
export async function* ndjsonLines<T>(chunks: AsyncIterable<string>): AsyncGenerator<T> {
  let buffer = "";
  for await (const chunk of chunks) {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line) yield JSON.parse(line) as T;
    }
  }
  if (buffer.trim()) yield JSON.parse(buffer) as T;
}

/** One dispatched server-sent event. */
export interface SseMessage {
  /** The last event id seen on the stream so far (what Last-Event-ID sends back). */
  lastEventId: string;
  event: string;
  data: string;
}

/**
 * The event-stream format as the HTML standard reads it: lines end in CRLF,
 * LF or CR; a line starting with ":" is a comment (the edge's keep-alives);
 * `field: value` drops one space after the colon; `data` lines join with
 * "\n"; a blank line dispatches the event (none when it has no data); `id`
 * is remembered across events (and across reconnections: pass the last one
 * in). `retry` is ignored: the page keeps its own reconnection delays.
 */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";

  constructor(private lastId = "") {}

  get lastEventId(): string {
    return this.lastId;
  }

  push(text: string): SseMessage[] {
    this.buffer += text;
    const out: SseMessage[] = [];
    for (;;) {
      const end = /\r\n|\n|\r/.exec(this.buffer);
      if (!end) break;
      // A CR that ends the text may be half of a CRLF whose LF is in the next chunk.
      if (end[0] === "\r" && end.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, end.index);
      this.buffer = this.buffer.slice(end.index + end[0].length);
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | undefined {
    if (line === "") {
      const message = this.data.length > 0 ? { lastEventId: this.lastId, event: this.event || "message", data: this.data.join("\n") } : undefined;
      this.data = [];
      this.event = "";
      return message;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.lastId = value;
    return undefined;
  }
}
