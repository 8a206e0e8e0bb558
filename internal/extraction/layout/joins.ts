/**
 * Which of two orders of the same pieces of text reads on, judged by the page
 * itself (issue 26 part 5, docs/structure.md "Reading order").
 *
 * Two orders of a region's words (tesseract's and the geometry's) keep most
 * words next to the same neighbours; they differ in where one piece of text
 * ends and the next begins. Each such join is scored by a character model of
 * the page's own lines (what tesseract read within a line is in the right
 * order whichever way the lines are ordered): how much better the start of
 * the next piece is predicted after the end of the previous one than at the
 * start of a line. Right joins continue words and phrases the page uses
 * ("of | the", "con- | tinued", ". | The"); wrong ones join unrelated text.
 * The evidence is in natural log units (nats), summed over the joins.
 *
 * Decisions a reader may question:
 * - The model is an interpolated character 5-gram with absolute discounting
 *   (D = 0.75), trained on the page alone: no corpus, no language list, so
 *   it is the same for every page and script. A page has a few thousand
 *   characters, enough for the common short words and endings that decide
 *   most joins; a page with little text gives little evidence either way.
 * - Only letters carry evidence: a join from a piece that ends in a figure,
 *   or into a figure, scores nothing, and a piece without a letter is passed
 *   over (the join is from the piece before it to the piece after it). Figures follow anything in a table
 *   (a row ends in one; a column of them runs on), so they would favour
 *   whichever order puts them together, not the order that reads on.
 * - A piece ending in a letter and a hyphen, followed by a piece starting in
 *   a lower-case letter, is joined without the hyphen and the space (a word
 *   broken across lines).
 */

const ORDER = 5;
const DISCOUNT = 0.75;
/** Marks the start of a line in the model's contexts. */
const START = "\u0002";

/** A character n-gram model of some lines of text (see the module comment). */
export class CharModel {
  /** For each context (0 to ORDER-1 characters): the counts of the characters that followed it. */
  readonly #next = new Map<string, { total: number; counts: Map<string, number> }>();
  readonly #alphabet: number;

  constructor(lines: readonly string[]) {
    const chars = new Set<string>();
    for (const line of lines) {
      const s = START.repeat(ORDER - 1) + normalize(line);
      for (let i = ORDER - 1; i < s.length; i++) {
        const c = s[i]!;
        chars.add(c);
        for (let k = 0; k < ORDER; k++) {
          const ctx = s.slice(i - k, i);
          let m = this.#next.get(ctx);
          if (!m) this.#next.set(ctx, (m = { total: 0, counts: new Map() }));
          m.total++;
          m.counts.set(c, (m.counts.get(c) ?? 0) + 1);
        }
      }
    }
    // One more for characters the page never shows.
    this.#alphabet = chars.size + 1;
  }

  /** log P(c | the last ORDER-1 characters of `context`). */
  logProb(context: string, c: string): number {
    return Math.log(this.#prob(context.slice(-(ORDER - 1)), c));
  }

  #prob(ctx: string, c: string): number {
    const lower = ctx.length ? this.#prob(ctx.slice(1), c) : 1 / this.#alphabet;
    const m = this.#next.get(ctx);
    if (!m) return lower;
    const seen = m.counts.get(c) ?? 0;
    return Math.max(seen - DISCOUNT, 0) / m.total + ((DISCOUNT * m.counts.size) / m.total) * lower;
  }
}

/** Digits read alike (a number's value says nothing about the order); whitespace runs become one space. */
function normalize(text: string): string {
  return text.replace(/\d/g, "0").replace(/\s+/g, " ").trim();
}

/**
 * The evidence that `next` continues `previous`: log P(next's first
 * characters | previous's end) − log P(the same | the start of a line).
 */
export function joinEvidence(model: CharModel, previous: string, next: string): number {
  const a = normalize(previous);
  const b = normalize(next);
  // A figure says nothing of what comes next (a table's row ends in one, a column of them runs on).
  if (!a || !b || !/\p{L}/u.test(a.slice(a.lastIndexOf(" ") + 1))) return 0;
  const hyphenated = /\p{L}-$/u.test(a) && /^\p{Ll}/u.test(b);
  const joined = START.repeat(ORDER - 1) + (hyphenated ? a.slice(0, -1) : `${a} `);
  const alone = START.repeat(ORDER - 1);
  let evidence = 0;
  // Beyond ORDER-1 characters into `next` the contexts no longer reach `previous`: both terms agree.
  for (let i = 0; i < Math.min(ORDER - 1, b.length); i++) {
    if (!/\p{L}/u.test(b[i]!)) continue;
    evidence += model.logProb(joined + b.slice(0, i), b[i]!) - model.logProb(alone + b.slice(0, i), b[i]!);
  }
  return evidence;
}

/**
 * The evidence of an order of pieces: the sum over its joins. Pieces without
 * a letter (figures, dashes, specks) are passed over: joined to nothing,
 * they would stand between two pieces of text as free separators, and an
 * order would gain by scattering them.
 */
export function orderEvidence(model: CharModel, pieces: readonly string[]): number {
  const text = pieces.filter((p) => /\p{L}/u.test(p));
  let sum = 0;
  for (let i = 1; i < text.length; i++) sum += joinEvidence(model, text[i - 1]!, text[i]!);
  return sum;
}
