/**
 * The frames the decoder and its parent exchange (child.ts's module comment):
 * `u32 length, JSON header, u32 length, bytes`, lengths big-endian. Shared
 * by both sides; imports nothing, so that the jail shows the child only its
 * own folder.
 */

/** A header larger than this is not this protocol: the stream is given up. */
export const HEADER_LIMIT = 64 * 1024;

export interface Frame {
  header: unknown;
  body: Buffer;
}

/** The bytes of one frame. */
export function encodeFrame(header: unknown, body: Uint8Array): Buffer[] {
  const h = Buffer.from(JSON.stringify(header), "utf8");
  const head = Buffer.alloc(4 + h.length + 4);
  head.writeUInt32BE(h.length, 0);
  h.copy(head, 4);
  head.writeUInt32BE(body.length, 4 + h.length);
  return body.length ? [head, Buffer.from(body.buffer, body.byteOffset, body.length)] : [head];
}

/**
 * Cuts a byte stream into frames. Chunks are only kept until enough have
 * arrived for the next step (a length, a header, a whole body), so a large
 * image arriving in many chunks is joined once, not once a chunk.
 */
export class FrameReader {
  #chunks: Buffer[] = [];
  #bytes = 0;
  /** Bytes needed before the next look: 4 (a length), then the header and its body's length, then the whole frame. */
  #need = 4;

  /** Adds a chunk; the frames it completes. Throws when the stream is not this protocol. */
  push(chunk: Buffer): Frame[] {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    const frames: Frame[] = [];
    while (this.#bytes >= this.#need) {
      const all = this.#joined();
      const headerLength = all.readUInt32BE(0);
      if (headerLength > HEADER_LIMIT) throw new Error(`a frame header of ${headerLength} bytes: not the decoder's protocol`);
      if (all.length < 8 + headerLength) {
        this.#need = 8 + headerLength;
        continue;
      }
      const end = 8 + headerLength + all.readUInt32BE(4 + headerLength);
      if (all.length < end) {
        this.#need = end;
        continue;
      }
      const header = JSON.parse(all.subarray(4, 4 + headerLength).toString("utf8")) as unknown;
      // A copy: the body outlives the chunk it arrived in, which may hold the next frames.
      frames.push({ header, body: Buffer.from(all.subarray(8 + headerLength, end)) });
      const rest = all.subarray(end);
      this.#chunks = rest.length ? [rest] : [];
      this.#bytes = rest.length;
      this.#need = 4;
    }
    return frames;
  }

  #joined(): Buffer {
    if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks)];
    return this.#chunks[0]!;
  }
}
