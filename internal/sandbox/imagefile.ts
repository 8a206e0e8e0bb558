/**
 * The checkpoint image written without compression, so that a restore
 * copies it instead of inflating it.
 *
 * `runsc checkpoint` (Debian 12's runsc, 0.0~20221219) always writes its
 * state file compressed: gVisor's statefile format (the magic "gVisorSF",
 * an 8-byte length and that much JSON metadata, then an HMAC-SHA256 of all
 * that) followed by a compressio stream: the chunk size (4 bytes), then
 * for each chunk its length (4 bytes) and the chunk as a raw deflate stream
 * (flate level "best speed"). With no integrity key, which is how runsc
 * checkpoints, the HMAC's key is empty and the chunks carry no hashes. A
 * restore inflates every chunk: for the warm LibreOffice image (82 MB in
 * 79 chunks, 13.7 MB compressed) that was about half of the restore's CPU
 * (Go's inflate, 250-300 ms a restore), and a restore comes with every
 * document (docs/benchmarks/conversion.md, "The checkpoint image without
 * compression").
 *
 * {@link storeUncompressed} rewrites such a file with each chunk re-encoded
 * as deflate "stored" blocks (raw deflate at level 0): the same state, a
 * format runsc's own reader takes unchanged, which it copies out instead
 * of decoding. The file grows to the size of the state (82 MB here). A file
 * that is not exactly that format (a newer runsc, a keyed state file,
 * anything truncated or left over) is left as it is.
 *
 * docs/adr/0004-uncompressed-checkpoint-image.md says why this is done here
 * and what keeps it safe.
 */
import { createHmac } from "node:crypto";
import { open, rename, rm, type FileHandle } from "node:fs/promises";
import { promisify } from "node:util";
import { deflateRaw, inflateRaw } from "node:zlib";

const inflate = promisify(inflateRaw);
const deflate = promisify(deflateRaw);

/** The state file's magic. */
const MAGIC = Buffer.from("gVisorSF", "latin1");
/** Metadata larger than this is not a runsc checkpoint's (it is a few hundred bytes). */
const MAX_METADATA_BYTES = 1 << 20;
/** Chunks larger than this are not compressio's (runsc writes 1 MiB chunks). */
const MAX_CHUNK_BYTES = 64 << 20;
const HMAC_BYTES = 32;

/** What {@link storeUncompressed} did. */
export type StoreOutcome = { stored: true; compressedBytes: number; storedBytes: number; chunks: number } | { stored: false; reason: string };

/** Thrown (and caught below) for a file that is not the format this module knows. */
class NotTheFormat extends Error {}

/**
 * Rewrites the state file `file` with every chunk stored uncompressed
 * (written beside and renamed into place). Leaves the file untouched and
 * says why when it is not gVisor's keyless statefile of deflate chunks.
 */
export async function storeUncompressed(file: string): Promise<StoreOutcome> {
  const beside = `${file}.stored-${process.pid}`;
  const input = await open(file, "r");
  let output: FileHandle | undefined;
  try {
    const { size } = await input.stat();
    let at = 0;
    const take = async (bytes: number): Promise<Buffer> => {
      if (bytes < 0 || at + bytes > size) throw new NotTheFormat(`the file ends inside a field at byte ${at}`);
      const buf = Buffer.allocUnsafe(bytes);
      const { bytesRead } = await input.read(buf, 0, bytes, at);
      if (bytesRead !== bytes) throw new NotTheFormat(`short read at byte ${at}`);
      at += bytes;
      return buf;
    };
    const magic = await take(MAGIC.length);
    if (!magic.equals(MAGIC)) throw new NotTheFormat("no gVisorSF magic");
    const lengthField = await take(8);
    const length = lengthField.readBigUInt64BE(0);
    if (length > BigInt(MAX_METADATA_BYTES)) throw new NotTheFormat(`metadata of ${length} bytes`);
    const metadata = await take(Number(length));
    try {
      JSON.parse(metadata.toString("utf8"));
    } catch {
      throw new NotTheFormat("the metadata is not JSON");
    }
    const sum = await take(HMAC_BYTES);
    const header = Buffer.concat([magic, lengthField, metadata]);
    const keyless = createHmac("sha256", Buffer.alloc(0)).update(header).digest();
    // An integrity key would also put a hash after each chunk, which this rewrite would break.
    if (!keyless.equals(sum)) throw new NotTheFormat("the header's HMAC is not keyless");
    const chunkSizeField = await take(4);
    const chunkSize = chunkSizeField.readUInt32BE(0);
    if (chunkSize < 1 || chunkSize > MAX_CHUNK_BYTES) throw new NotTheFormat(`chunk size ${chunkSize}`);
    output = await open(beside, "w", 0o600);
    let written = 0;
    const write = async (buf: Buffer) => {
      await output!.write(buf, 0, buf.length, written);
      written += buf.length;
    };
    await write(Buffer.concat([header, sum, chunkSizeField]));
    let chunks = 0;
    while (at < size) {
      const compressedLength = (await take(4)).readUInt32BE(0);
      if (compressedLength > MAX_CHUNK_BYTES) throw new NotTheFormat(`a chunk of ${compressedLength} bytes`);
      const compressed = await take(compressedLength);
      let state: Buffer;
      try {
        state = await inflate(compressed);
      } catch (err) {
        throw new NotTheFormat(`chunk ${chunks} is not raw deflate: ${(err as Error).message}`);
      }
      if (state.length > chunkSize) throw new NotTheFormat(`chunk ${chunks} holds ${state.length} bytes, more than ${chunkSize}`);
      const stored = await deflate(state, { level: 0 });
      const storedLength = Buffer.allocUnsafe(4);
      storedLength.writeUInt32BE(stored.length, 0);
      await write(storedLength);
      await write(stored);
      chunks++;
    }
    await output.close();
    output = undefined;
    await rename(beside, file);
    return { stored: true, compressedBytes: size, storedBytes: written, chunks };
  } catch (err) {
    if (!(err instanceof NotTheFormat)) throw err;
    return { stored: false, reason: err.message };
  } finally {
    await input.close();
    await output?.close();
    await rm(beside, { force: true });
  }
}
