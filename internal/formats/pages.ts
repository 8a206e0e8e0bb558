/**
 * Page selections: the `pages` option of `/v1/ocr` and `/v1/convert`
 * (`"1-20,25"`), parsed and checked once, here, for every place that carries
 * one (the edge, the conversion service, the sandbox program, the broker's
 * job header). docs/conversion.md "Pages" states the rules:
 *
 * - comma-separated items, each a page (`3`), a range (`1-20`) or a range to
 *   the document's end (`5-`); 1-based; spaces anywhere between the parts;
 * - the pages are processed and answered in document order whatever the
 *   order given (`"25,1-3"` is `"1-3,25"`); touching ranges merge;
 * - refused: an empty text, page 0, a range that runs backwards, a page
 *   named twice (overlapping ranges), anything else;
 * - a page beyond the document's end is refused with the document's page
 *   count (nothing is cut short silently), and so is a selection of more
 *   pages than the limit.
 *
 * A selection travels between processes as its canonical text
 * ({@link formatPages}), parsed again on arrival: one set of rules at every
 * hop. Like `index.ts`, this module imports nothing (the sandbox program
 * bundles it).
 */

/** Longest `pages` text accepted (a few hundred ranges). */
export const MAX_PAGES_TEXT = 1000;

/** Default pixel budget per page image: A1 at 200 DPI (4681 × 6622) fits; A0 is rendered at about 160 DPI (documents/pdf.ts; PP-OCR's bound too). */
export const DEFAULT_MAX_PIXELS_PER_PAGE = 40_000_000;

/** Pages `first`..`last`, 1-based, inclusive; no `last`: to the document's end. */
export interface PageRange {
  readonly first: number;
  readonly last?: number;
}

/** Ranges in document order, none overlapping or touching; only the last may be open. */
export type PageSelection = readonly PageRange[];

/** A selection, or the problem as a message for people that names the field (`'pages' is not a page selection: …`). */
export type PagesParsed = { ok: true; selection: PageSelection } | { ok: false; problem: string };

const refuse = (why: string): PagesParsed => ({ ok: false, problem: `'pages' is not a page selection: ${why}` });

/** An item: a page, a range, or a range to the end; numbers of at most 9 digits. */
const ITEM = /^(\d{1,9})(?:\s*(-)\s*(\d{1,9})?)?$/;

const EXAMPLE = 'write pages like "3", "1-20" or "5-" (page 5 to the end), separated by commas';

/** Reads a `pages` text (see the module comment); the problem, for people, when it is not a selection. */
export function parsePages(text: string): PagesParsed {
  if (text.length > MAX_PAGES_TEXT) return refuse(`it is longer than ${MAX_PAGES_TEXT} characters`);
  if (text.trim() === "") return refuse(`it is empty; ${EXAMPLE}`);
  const items: { range: PageRange; said: string }[] = [];
  for (const raw of text.split(",")) {
    const said = raw.trim();
    const m = ITEM.exec(said);
    if (!m) return refuse(said === "" ? `it has an empty item between commas; ${EXAMPLE}` : `"${said}" is not a page or a range; ${EXAMPLE}`);
    const first = Number(m[1]);
    const last = m[2] ? (m[3] === undefined ? undefined : Number(m[3])) : first;
    if (first === 0 || last === 0) return refuse(`"${said}": pages are numbered from 1`);
    if (last !== undefined && last < first) return refuse(`"${said}" runs backwards; write ${last}-${first}`);
    items.push({ range: last === undefined ? { first } : { first, last }, said });
  }
  items.sort((a, b) => a.range.first - b.range.first);
  const selection: PageRange[] = [];
  for (const [i, item] of items.entries()) {
    // Sorted by first page: the range so far ends where the item before this one ends.
    const prev = selection.at(-1);
    if (prev && (prev.last === undefined || prev.last >= item.range.first)) {
      return refuse(`page ${item.range.first} is asked for twice ("${items[i - 1]!.said}" and "${item.said}")`);
    }
    if (prev && prev.last === item.range.first - 1) selection[selection.length - 1] = { first: prev.first, ...(item.range.last === undefined ? {} : { last: item.range.last }) };
    else selection.push(item.range);
  }
  return { ok: true, selection };
}

/** The canonical text of a selection (`"1-20,25,30-"`): what travels between processes. */
export function formatPages(selection: PageSelection): string {
  return selection.map(({ first, last }) => (last === undefined ? `${first}-` : last === first ? `${first}` : `${first}-${last}`)).join(",");
}

/** How many pages a selection names, or undefined when it runs to an end not known yet. */
export function selectedCount(selection: PageSelection): number | undefined {
  let n = 0;
  for (const { first, last } of selection) {
    if (last === undefined) return undefined;
    n += last - first + 1;
  }
  return n;
}

/** Whether page `n` is selected. */
export function isSelected(selection: PageSelection, n: number): boolean {
  return selection.some(({ first, last }) => n >= first && (last === undefined || n <= last));
}

/** Why a document's pages cannot be processed as asked. */
export type PagePlanProblem =
  /** No selection, and the document has more pages than the limit. */
  | "over_limit"
  /** The selection names more pages than the limit. */
  | "selection_over_limit"
  /** The selection names a page the document does not have. */
  | "beyond_end";

export type PagePlan = { ok: true; pages: number[] } | { ok: false; problem: PagePlanProblem; message: string };

/**
 * The pages of a document of `pageCount` pages to process, in document
 * order: all of them, or the selection's; or why not (the messages name the
 * limit, the option and the document's page count, as callers show them).
 */
export function planPages(pageCount: number, selection: PageSelection | undefined, maxPages: number): PagePlan {
  if (!selection) {
    if (pageCount > maxPages) return { ok: false, problem: "over_limit", message: overLimitMessage(pageCount, maxPages) };
    return { ok: true, pages: Array.from({ length: pageCount }, (_, i) => i + 1) };
  }
  const furthest = Math.max(...selection.map(({ first, last }) => last ?? first));
  if (furthest > pageCount) {
    return {
      ok: false,
      problem: "beyond_end",
      message: `the document has ${pageCount} ${pageCount === 1 ? "page" : "pages"}; "pages": "${formatPages(selection)}" asks for page ${furthest}`,
    };
  }
  const count = selection.reduce((n, { first, last }) => n + (last ?? pageCount) - first + 1, 0);
  if (count > maxPages) return { ok: false, problem: "selection_over_limit", message: selectionOverLimitMessage(count, maxPages, selection, pageCount) };
  return { ok: true, pages: selection.flatMap(({ first, last }) => Array.from({ length: (last ?? pageCount) - first + 1 }, (_, i) => first + i)) };
}

/**
 * A document over the page limit, sent without a selection: the message
 * names the limit and the option, and the endpoints that have it (the same
 * words reach chat, which has none, from the sandbox).
 */
export function overLimitMessage(pageCount: number, maxPages: number): string {
  return `the document has ${pageCount} pages; at most ${maxPages} are processed per request: choose which with the "pages" option of /v1/ocr and /v1/convert (for example "pages": "1-${maxPages}")`;
}

/**
 * Why a selection is refused before any work: it names more pages than the
 * limit. Undefined when it fits, or runs to an end not known yet (then
 * {@link planPages} counts it on the document).
 */
export function selectionOverLimit(selection: PageSelection, maxPages: number): string | undefined {
  const count = selectedCount(selection);
  return count !== undefined && count > maxPages ? selectionOverLimitMessage(count, maxPages, selection) : undefined;
}

/** A selection of more pages than the limit (`pageCount`: the document's, when known). */
export function selectionOverLimitMessage(count: number, maxPages: number, selection: PageSelection, pageCount?: number): string {
  const of = pageCount === undefined ? "" : ` of the document's ${pageCount}`;
  return `"pages": "${formatPages(selection)}" selects ${count} pages${of}; at most ${maxPages} are processed per request`;
}
