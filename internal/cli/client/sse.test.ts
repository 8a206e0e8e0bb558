/** The SSE framing of `sse.ts`: events split anywhere across chunks, every line ending, comments, multi-line data, ids that carry over. */
import { describe, expect, it } from "vitest";
import { sseMessages, type SseMessage } from "./sse.ts";

async function read(chunks: (string | Uint8Array)[]): Promise<SseMessage[]> {
  const encoder = new TextEncoder();
  async function* body() {
    for (const c of chunks) yield typeof c === "string" ? encoder.encode(c) : c;
  }
  const out: SseMessage[] = [];
  for await (const m of sseMessages(body())) out.push(m);
  return out;
}

const JOB_STREAM =
  'id: 1\nevent: ocr.job.started\ndata: {"sequence":1}\n\n' +
  ": keep-alive\n\n" +
  'id: 2\nevent: ocr.job.progress\ndata: {"sequence":2}\n\n' +
  'id: 3\nevent: ocr.job.succeeded\ndata: {"sequence":3}\n\n';
const JOB_EVENTS = [
  { id: "1", event: "ocr.job.started", data: '{"sequence":1}' },
  { id: "2", event: "ocr.job.progress", data: '{"sequence":2}' },
  { id: "3", event: "ocr.job.succeeded", data: '{"sequence":3}' },
];

describe("sseMessages", () => {
  it("reads the job events stream and skips keep-alive comments", async () => {
    expect(await read([JOB_STREAM])).toEqual(JOB_EVENTS);
  });

  it("gives the same events however the bytes are cut, a multi-byte character and a CRLF split included", async () => {
    const text = JOB_STREAM.replaceAll("\n", "\r\n").replace('{"sequence":2}', '{"sequence":2,"t":"é…"}');
    const bytes = new TextEncoder().encode(text);
    const expected = JOB_EVENTS.map((e) => (e.id === "2" ? { ...e, data: '{"sequence":2,"t":"é…"}' } : e));
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(await read([bytes.subarray(0, cut), bytes.subarray(cut)]), `cut at byte ${cut}`).toEqual(expected);
    }
    expect(await read(Array.from(bytes, (b) => Uint8Array.of(b))), "a byte at a time").toEqual(expected);
  });

  it("takes CR alone as a line end too, also as the stream's last byte", async () => {
    expect(await read(["event: a\rdata: 1\r\r", "data: 2\r\r"])).toEqual([
      { event: "a", data: "1" },
      { event: "message", data: "2" },
    ]);
  });

  it("joins data lines with a newline, keeps a value's spaces after the first, names an unnamed event 'message'", async () => {
    expect(await read(["data:  two spaces\ndata\ndata: x: y\n\n"])).toEqual([{ event: "message", data: " two spaces\n\nx: y" }]);
  });

  it("carries the last id over to later events, ignores an id with NUL, dispatches nothing for an event without data", async () => {
    expect(await read(["id: 7\n\n", "data: a\n\n", "id: 8\u0000\ndata: b\n\n", "id\ndata: c\n\n"])).toEqual([
      { event: "message", data: "a", id: "7" },
      { event: "message", data: "b", id: "7" },
      { event: "message", data: "c", id: "" },
    ]);
  });

  it("drops an event the stream's end cut off, and an unfinished last line", async () => {
    expect(await read(['id: 1\ndata: {"whole":true}\n\nid: 2\ndata: {"cut"'])).toEqual([{ id: "1", event: "message", data: '{"whole":true}' }]);
    expect(await read(["data: no blank line\n"])).toEqual([]);
  });

  it("ignores a byte-order mark at the start and unknown fields", async () => {
    expect(await read(["\uFEFFretry: 10\nfoo: bar\ndata: x\n\n"])).toEqual([{ event: "message", data: "x" }]);
  });
});
