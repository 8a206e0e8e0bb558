/**
 * The framing of server-sent events (WHATWG HTML, "Parsing an event stream"),
 * as much of it as a client of Folio's event streams needs: lines end in
 * CRLF, LF or CR; a blank line ends an event; `:` lines are comments (the
 * server's keep-alives); `data` lines join with a newline; `id` and `event`
 * name the event. Hand-written because no SSE parser is a dependency and the
 * framing is this small; what the events mean is the caller's.
 */

export interface SseMessage {
  /** The `event` field; "message" when the event names none. */
  event: string;
  /** The `data` lines joined by "\n". */
  data: string;
  /** The last `id` field seen so far on this stream (it carries over, as the spec has it), if any. */
  id?: string;
}

/**
 * The events of a stream as they arrive. An event cut off by the stream's
 * end (no blank line after it) is dropped, as the spec asks: a caller that
 * reconnects gets it again.
 */
export async function* sseMessages(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseMessage> {
  // TextDecoder drops a leading byte-order mark, which the spec allows.
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let buffered = "";
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let i = 0; i < buffered.length; i++) {
      const c = buffered[i];
      if (c !== "\n" && c !== "\r") continue;
      // A CR at the very end may be the first half of a CRLF split across chunks: wait for the next chunk.
      if (c === "\r" && i === buffered.length - 1) break;
      const message = parser.line(buffered.slice(start, i));
      if (c === "\r" && buffered[i + 1] === "\n") i++;
      start = i + 1;
      if (message) yield message;
    }
    buffered = buffered.slice(start);
  }
  buffered += decoder.decode();
  // A last CR (the stream ended on it) still ends its line; anything after the last line end is an unfinished line.
  if (buffered.endsWith("\r")) {
    const message = parser.line(buffered.slice(0, -1));
    if (message) yield message;
  }
}

/** The field-by-field state of one stream. */
class SseParser {
  private event = "";
  private data: string[] = [];
  private lastId: string | undefined;

  /** Takes one line (without its end); answers the event a blank line completes. */
  line(line: string): SseMessage | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "data":
        this.data.push(value);
        break;
      case "event":
        this.event = value;
        break;
      case "id":
        if (!value.includes("\u0000")) this.lastId = value;
        break;
      // `retry` and unknown fields: ignored (the follower keeps its own reconnection delays).
    }
    return undefined;
  }

  private dispatch(): SseMessage | undefined {
    const event = this.event || "message";
    const data = this.data;
    this.event = "";
    this.data = [];
    // An event without data is not dispatched (the spec), only its id kept.
    if (data.length === 0) return undefined;
    return { event, data: data.join("\n"), ...(this.lastId !== undefined ? { id: this.lastId } : {}) };
  }
}
