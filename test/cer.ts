/**
 * Character error rate, the accuracy figure of the OCR tests and benchmarks:
 * the Levenshtein distance (insertions, deletions, substitutions, each cost 1)
 * between the recognised text and the reference, divided by the reference's
 * length. Both texts are whitespace-normalised first (every run of spaces,
 * tabs and newlines becomes one space, ends trimmed) because layout is not
 * what is measured: a line break read as a space is not an error. Characters
 * are Unicode code points after NFC normalisation, so "ü" counts once however
 * it was encoded. 0 is perfect; values above 1 are possible (much extra text).
 */

/** Collapses whitespace runs to one space, trims, and applies NFC. */
export function normalizeWhitespace(text: string): string {
  return text.normalize("NFC").replace(/\s+/gu, " ").trim();
}

/** Edit distance between two strings, counted in code points. */
export function levenshtein(a: string, b: string): number {
  const s = [...a];
  const t = [...b];
  if (s.length === 0) return t.length;
  if (t.length === 0) return s.length;
  // One row of the DP table at a time: O(|t|) memory.
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  let cur = new Array<number>(t.length + 1);
  for (let i = 1; i <= s.length; i++) {
    cur[0] = i;
    const si = s[i - 1];
    for (let j = 1; j <= t.length; j++) {
      const sub = prev[j - 1]! + (si === t[j - 1] ? 0 : 1);
      cur[j] = Math.min(sub, prev[j]! + 1, cur[j - 1]! + 1);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[t.length]!;
}

/**
 * Character error rate of `hypothesis` against `reference`, both
 * whitespace-normalised. An empty reference gives 0 for an empty hypothesis
 * and 1 otherwise.
 */
export function cer(hypothesis: string, reference: string): number {
  const hyp = normalizeWhitespace(hypothesis);
  const ref = normalizeWhitespace(reference);
  const refLength = [...ref].length;
  if (refLength === 0) return hyp.length === 0 ? 0 : 1;
  return levenshtein(hyp, ref) / refLength;
}
