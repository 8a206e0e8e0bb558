/**
 * What a sandbox program restored from a checkpoint makes afresh after its
 * hand-in. Everything in a restored sandbox's memory is the image's, the
 * same in every sandbox restored from it: V8's Math.random state, Node's
 * OpenSSL random generator, LibreOffice's own generator, the addresses
 * everything was loaded at (docs/sandbox.md, "Sandboxes restored from a
 * checkpoint"). System calls are not: `getrandom` (and so `mkdtemp`) and
 * the clock answer afresh in each sandbox.
 *
 * Bundled into the sandbox program: Node built-ins only.
 */

/** Bytes of the seed the host hands in (hex in `handin.json`). */
export const SEED_BYTES = 32;

/**
 * Replaces `Math.random` with xoshiro128** seeded from `seed`. V8 cannot
 * reseed its own generator, whose state in a restored sandbox is the
 * image's; without this every restored sandbox would draw the same
 * sequence. Not cryptographic, like the generator it replaces.
 */
export function reseedMathRandom(seed: Uint8Array): void {
  if (seed.length < 16) throw new Error(`a seed of at least 16 bytes is needed, got ${seed.length}`);
  const view = new DataView(seed.buffer, seed.byteOffset, seed.byteLength);
  let [s0, s1, s2, s3] = [0, 4, 8, 12].map((at) => view.getUint32(at, true)) as [number, number, number, number];
  // The all-zero state never leaves zero.
  if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  const next = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
  // 53 random bits, as V8's own Math.random gives.
  Math.random = () => ((next() >>> 5) * 67_108_864 + (next() >>> 6)) / 9_007_199_254_740_992;
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
