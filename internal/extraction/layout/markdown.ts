/**
 * A page's structure for `options.output_format` (docs/ocr.md "Output
 * formats"): the layout's blocks, in reading order, cut into headings,
 * paragraphs, list items and tables, and the same as GitHub-flavoured
 * markdown.
 *
 * What it reads:
 * - **Text size.** Every line's size in ems, from its words' boxes: a word's
 *   box spans the x-height, the x-height and an ascender or a descender, or
 *   all three, depending on its letters, so each word's height is divided by
 *   the share of an em its letters span ({@link emOf}). The page's body size
 *   is the median over its lines, weighted by their letters.
 * - **Headings**: a run of at most {@link MAX_HEADING_LINES} lines whose size
 *   is at least {@link HEADING_SIZES}' smallest ratio of the body size; the
 *   level follows the ratio, not the page's other headings, so a page with
 *   only second-level headings does not promote them. A short line of body
 *   size is a heading when it is bold (its strokes, read from the page's
 *   pixels, are thicker than the body's) and stands apart above and below.
 * - **Lists**: a line starting with a bullet (•, -, –, *, ◦, ▪ and the like,
 *   or a small round blob tesseract read as a letter, set apart by a tab) or
 *   a number or letter with `.` or `)`, and the lines after it indented to
 *   its text (the hanging indent). Markers further right than the list's
 *   first nest one level deeper. A line at the items' text indent with ink
 *   where their bullet stood is an item whose bullet tesseract dropped.
 * - **Paragraphs**: tesseract's paragraphs, cut again where a line's size
 *   changes, where the space above a line is well over the page's line pitch,
 *   or where a list ends.
 * - **Tables**: the layout's tables, as their cells.
 * - **Headers, footers and figures** stay blocks of their own (json) and
 *   are left out of the markdown.
 *
 * Ratios are in units of the page's own body text, so they hold at any
 * resolution and type size; where they come from is said beside each.
 * Without the page's pixels (a page this process cannot decode) bold type
 * and dropped bullets are not seen, and the rest works from the boxes.
 */
import type { LayoutBlock, PageBlock } from "../../contracts/index.ts";
import { renderMarkdownTable, tableCells, type CellBox, type CellSpan } from "../engines/tables.ts";
import type { GreyImage } from "./rules.ts";
import { boundsOf, median, type Box } from "./words.ts";

/** A word as the structure needs it: its box and the tesseract line and paragraph it belongs to. */
export interface SourceWord extends Box {
  text: string;
  /** Words with the same key were read as one text line. */
  line: string;
  paragraph: string;
  /** The word's size in pixels per em when its box does not follow its letters (PP-OCR's boxes span a whole line); absent: {@link emOf}. */
  em?: number;
}

/** A layout block with what it was made from: its words (text, header, footer) or its cells (a table). */
export interface SourceBlock {
  block: LayoutBlock;
  words: readonly SourceWord[];
  /** A table's rows of cell strings and its merged cells; absent for anything else. */
  rows?: string[][];
  spans?: CellSpan[];
  boxes?: (CellBox | null)[][];
}

/**
 * Heading levels by the ratio of a line's size to the body's: the smallest
 * ratio of each level. Office heading styles at 200 DPI: LibreOffice's
 * Heading 1/2/3 are 1.52/1.33/1.17 times its body text, Word's Title and
 * Heading 1/2 are 2.5/1.45/1.18 times its body; a line's measured size varies
 * by about ±5% with its letters, hence the margins.
 */
const HEADING_SIZES: readonly { level: 1 | 2 | 3; ratio: number }[] = [
  { level: 1, ratio: 1.4 },
  { level: 2, ratio: 1.22 },
  { level: 3, ratio: 1.12 },
];
/** A heading is a short run of lines: more is large print (a slide's body, a pull quote). */
const MAX_HEADING_LINES = 3;
const MAX_HEADING_WORDS = 20;
/** Text of a heading's size or larger is at most this share of a page's characters; more is body text in a larger size. */
const MAX_HEADING_SHARE = 0.3;
/** Two neighbouring lines whose sizes differ by more than this factor (and fall in different heading levels) are not one paragraph. */
const SIZE_STEP = 1.1;
/**
 * A heading's characters are wider than the body's by at least this share of
 * the growth its height shows: a word whose box is tall for another reason
 * (an underline or a strike through it, a superscript) is no wider.
 */
const WIDTH_SHARE = 0.5;
/** A line starts a new paragraph when its pitch to the line above exceeds the page's median pitch by this factor (paragraph spacing). */
const PARAGRAPH_PITCH = 1.35;
/** Without a measured pitch (a page of one-line paragraphs): this many ems. */
const DEFAULT_PARAGRAPH_PITCH_EMS = 1.6;
/** A tab after a list marker, in ems: wider than a word space (about 0.25 em). */
const MARKER_TAB_EMS = 0.6;
/**
 * A bullet read as a letter ("e", "o") is a blob this small (in ems) set
 * apart by this much; or set apart by a tab ({@link MARKER_TAB_EMS}) when it
 * stands clear of the baseline by this much, as a bullet centred on the
 * x-height does and a letter never: LibreOffice sets its bullets about 0.9
 * em before the text (29 px at 200 DPI on the generated corpus's dev page
 * gen_056, their feet 6 px, 0.2 em, above the text's baseline; its list
 * items found went from 9 to 21 of 23).
 */
const BLOB_MAX_EMS = 0.55;
const BLOB_GAP_EMS = 1.0;
const BLOB_RAISE_EMS = 0.1;
/** Markers this far apart (in ems) are at different nesting depths; continuation lines may sit this far left of an item's text. */
const INDENT_EMS = 0.8;
/** Ink of a bullet, in square ems: a dot a quarter of an em wide is about 0.05. */
const MIN_BULLET_INK = 0.02;
/**
 * An unread bullet stands within this many ems left of its item's text (Word
 * and LibreOffice put a quarter inch, about 1.7 em of 11 pt type, between
 * them), and is between these sizes across (a bullet is about 0.3 em, a
 * checkbox 0.6 em or more, a speck of noise less than 0.1 em).
 */
const BULLET_REACH = 2.5;
const BULLET_MAX_EMS = 0.45;
const BULLET_MIN_EMS = 0.12;
/**
 * An unread number ("1." to "99.") is at most this wide in ems (two digits
 * and a dot are about 1.3 em in the fonts of the generated corpus), and its
 * pieces (digits, the dot) stand less than this far apart.
 */
const MAX_NUMBER_EMS = 1.6;
const MARKER_PIECE_GAP_EMS = 0.25;
/** The marker of a number tesseract did not read: counted from the item before (or 1). */
const UNREAD_NUMBER = "#.";

/** A grey level darker than this is ink (pages are rendered or scanned dark on light). */
const INK = 128;
/** Ink runs longer than this many ems are not stems (see strokeOf). */
const MAX_STROKE_EMS = 0.3;
/**
 * A line is bold when its strokes are this much thicker than the body's
 * (relative to the size): regular and bold stems of Calibri, Arial and Times
 * at 200 DPI differ by 1.5–1.8 times, measured as strokeOf does 1.4–1.6.
 */
const BOLD_STROKE = 1.25;
/** A bold line of body size is a heading only when it is this short (a title, not a bold sentence). */
const MAX_BOLD_HEADING_WORDS = 12;
const MAX_BOLD_HEADING_LINES = 2;

/** Bullet glyphs (and the dashes and asterisks typed as bullets). */
const BULLET = /^[•◦▪▫●○■□◆◇►▸▹▶➢➤✓✔❖·‣⁃∙\-–—*+]$/u;
/** Letters tesseract reads a round bullet as. */
const BLOB = /^[eoc°«»©®¢@.·]{1,2}$/u;
/** "1." "2)" "(3)" "a." "b)" "iv." "(c)". */
const ORDERED = /^\(?(\d{1,3}|[A-Za-z]|[ivxIVX]{2,5})[.)]$/;

/** Whether a word could be a list item's marker: a bullet, a bullet read as a letter, or a number or letter of an ordered list. */
export function isMarkerText(text: string): boolean {
  return BULLET.test(text) || BLOB.test(text) || ORDERED.test(text) || text === "•";
}

/** The share of an em a word's ink spans, by the letters it has (Latin type: x-height ≈ 0.5 em, ascenders and descenders ≈ 0.22 em each). */
const SPAN = { xOnly: 0.5, ascender: 0.72, descender: 0.72, both: 0.94 };
// i and j: their dots stand as high as an ascender; accented letters: their accents nearly so.
const ASCENDS = /[A-Z0-9bdfhijklt!?%&#$@(){}[\]|/\\ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝßàáâãäåèéêëìíîïñòóôõöùúûüýÿ]/u;
/** Scripts whose every glyph fills most of the em (CJK ideographs, kana, hangul). */
const FULL_EM = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
const DESCENDS = /[gjpqyQ,;(){}[\]|çÇ]/u;

interface Line extends Box {
  words: SourceWord[];
  paragraph: string;
  /** The line's size in pixels per em (see the module comment). */
  em: number;
  /** Where the line's letters stand: the median bottom of its words without descenders. */
  baseline: number;
  /** Mean width of a character of its words, in pixels: larger type is wider too. */
  charWidth: number;
  /** Stroke width over the em, from the page's pixels (NaN without them): larger for bold type. */
  stroke: number;
}

/** A word's size in pixels per em from its box and letters; NaN when it has no letter or digit. */
export function emOf(w: { text: string; y0: number; y1: number }): number {
  if (!/[\p{L}\p{N}]/u.test(w.text)) return Number.NaN;
  if (FULL_EM.test(w.text)) return (w.y1 - w.y0) / SPAN.both;
  const up = ASCENDS.test(w.text);
  const down = DESCENDS.test(w.text);
  const span = up && down ? SPAN.both : up ? SPAN.ascender : down ? SPAN.descender : SPAN.xOnly;
  return (w.y1 - w.y0) / span;
}

function linesOf(words: readonly SourceWord[], image?: GreyImage): Line[] {
  const byLine = new Map<string, SourceWord[]>();
  for (const w of words) {
    const l = byLine.get(w.line);
    if (l) l.push(w);
    else byLine.set(w.line, [w]);
  }
  const lines: Line[] = [];
  for (const ws of byLine.values()) {
    ws.sort((a, b) => a.x0 - b.x0);
    const ems = ws.map((w) => w.em ?? emOf(w)).filter(Number.isFinite);
    const box = boundsOf(ws);
    const flat = ws.filter((w) => !DESCENDS.test(w.text));
    lines.push({
      ...box,
      words: ws,
      paragraph: ws[0]!.paragraph,
      em: ems.length ? median(ems) : box.y1 - box.y0,
      baseline: flat.length ? median(flat.map((w) => w.y1)) : box.y1,
      charWidth: ws.reduce((n, w) => n + (w.x1 - w.x0), 0) / Math.max(1, ws.reduce((n, w) => n + [...w.text].length, 0)),
      stroke: Number.NaN,
    });
    const line = lines[lines.length - 1]!;
    if (image) line.stroke = strokeOf(line, image);
  }
  return lines;
}

/**
 * The mean width of the ink runs across a line's words, row by row, over its
 * em: the thickness of the strokes, about 1.5 times larger in bold type.
 * Runs longer than {@link MAX_STROKE_EMS} are horizontal strokes, rules and
 * underlines, not stems. NaN when the line has no ink to measure.
 */
function strokeOf(line: Line, image: GreyImage): number {
  const max = MAX_STROKE_EMS * line.em;
  let sum = 0;
  let count = 0;
  for (const w of line.words) {
    if (!/[\p{L}\p{N}]/u.test(w.text)) continue;
    const x0 = Math.max(0, Math.floor(w.x0));
    const x1 = Math.min(image.width, Math.ceil(w.x1));
    for (let y = Math.max(0, Math.floor(w.y0)); y < Math.min(image.height, Math.ceil(w.y1)); y++) {
      const row = y * image.width;
      let run = 0;
      for (let x = x0; x <= x1; x++) {
        if (x < x1 && image.pixels[row + x]! < INK) run++;
        else if (run > 0) {
          if (run <= max) {
            sum += run;
            count++;
          }
          run = 0;
        }
      }
    }
  }
  return count > 0 ? sum / count / line.em : Number.NaN;
}

/** A weighted median: the value where half the weight lies on either side. */
function weightedMedian(items: readonly { value: number; weight: number }[]): number {
  const s = items.filter((i) => Number.isFinite(i.value) && i.weight > 0).sort((a, b) => a.value - b.value);
  const total = s.reduce((n, i) => n + i.weight, 0);
  let seen = 0;
  for (const i of s) {
    seen += i.weight;
    if (seen >= total / 2) return i.value;
  }
  return 0;
}

interface Marker {
  /** The marker as printed ("•", "1.", "(a)"); a blob read as a letter is "•". */
  text: string;
  ordered: boolean;
  /** Where the marker starts and where the item's text starts. */
  x0: number;
  textX: number;
  /** Words of the line the marker takes: 1, or 0 for a bullet tesseract did not read (seen in the pixels). */
  words: number;
}

/** The list marker a line starts with, if any; `firm`: the line may start an item (see {@link structurePage}). */
function markerOf(line: Line, firm: boolean): Marker | undefined {
  const [first, next] = line.words;
  if (!first || !next) return undefined;
  const gap = next.x0 - first.x1;
  const tab = gap >= MARKER_TAB_EMS * line.em;
  const at = { x0: first.x0, textX: next.x0, words: 1 };
  if (first.text === "•" || first.text === "◦" || first.text === "▪" || first.text === "●" || first.text === "○" || first.text === "■") return { text: first.text, ordered: false, ...at };
  if (BULLET.test(first.text) && (firm || tab)) return { text: first.text, ordered: false, ...at };
  const small = first.y1 - first.y0 <= BLOB_MAX_EMS * line.em && first.x1 - first.x0 <= BLOB_MAX_EMS * line.em;
  // The foot of the text beside it: its first word's when that has no descender (a skewed line's baseline moves along it).
  const foot = DESCENDS.test(next.text) ? line.baseline : next.y1;
  const raised = foot - first.y1 >= BLOB_RAISE_EMS * line.em;
  if (BLOB.test(first.text) && small && (gap >= BLOB_GAP_EMS * line.em || (tab && raised))) return { text: "•", ordered: false, ...at };
  const m = ORDERED.exec(first.text);
  if (m && (/\d/.test(m[1]!) ? firm || tab : tab)) return { text: first.text, ordered: true, ...at };
  return undefined;
}

interface Group {
  kind: "paragraph" | "list_item" | "heading";
  lines: Line[];
  marker?: Marker;
  /** Set apart from what is above it: the first of its block, or after paragraph spacing or a change of size. */
  open: boolean;
}

/**
 * The page's blocks in reading order, for `output_format` json and markdown
 * (module comment). Boxes are the layout's: pixels of the page image read,
 * `image` (optional): that image's pixels, where bold type is seen.
 */
export function structurePage(blocks: readonly SourceBlock[], image?: GreyImage): PageBlock[] {
  const linesBy = new Map(blocks.map((b) => [b, linesOf(b.words, image)]));
  // The body's size is read from the text and the tables (an invoice is mostly its table); headers and footers are apart.
  const texts = blocks.filter((b) => (b.block.type === "text" || b.block.type === "table") && b.words.length > 0);
  const allLines = texts.map((b) => linesBy.get(b)!);
  const weight = (l: Line) => l.words.reduce((n, w) => n + w.text.length, 0);
  const body = weightedMedian(allLines.flat().map((l) => ({ value: l.em, weight: weight(l) })));
  const bodyChar = weightedMedian(allLines.flat().map((l) => ({ value: l.charWidth, weight: weight(l) })));
  const total = allLines.flat().reduce((n, l) => n + weight(l), 0);
  const bodyStroke = weightedMedian(allLines.flat().map((l) => ({ value: l.stroke, weight: weight(l) })));
  /** Every line in bold type (thicker strokes than the body's); false without the page's pixels. */
  const boldOf = (lines: readonly Line[]) => bodyStroke > 0 && lines.every((l) => l.stroke >= BOLD_STROKE * bodyStroke);
  /** The heading level a run of lines' size calls for; undefined: body text. */
  const levelOf = (lines: readonly Line[]) => {
    if (body <= 0 || bodyChar <= 0) return undefined;
    const em = median(lines.map((l) => l.em));
    const size = em / body;
    const wide = median(lines.map((l) => l.charWidth)) / bodyChar;
    const level = HEADING_SIZES.find((h) => size >= h.ratio && wide >= 1 + (h.ratio - 1) * WIDTH_SHARE)?.level;
    if (level === undefined) return undefined;
    // Text this size (or larger) filling much of the page is body text too: a form's labels beside its small print.
    const share = allLines.flat().filter((l) => l.em * SIZE_STEP >= em).reduce((n, l) => n + weight(l), 0) / total;
    return share <= MAX_HEADING_SHARE ? level : undefined;
  };
  const pitches: number[] = [];
  for (const [k, lines] of allLines.entries()) {
    // A table's rows are spaced apart more than a paragraph's lines.
    if (texts[k]!.block.type !== "text") continue;
    for (let i = 1; i < lines.length; i++) {
      const [a, b] = [lines[i - 1]!, lines[i]!];
      if (Math.abs(Math.log(a.em / b.em)) <= Math.log(SIZE_STEP) && b.baseline > a.baseline) pitches.push((b.baseline - a.baseline) / b.em);
    }
  }
  // Pitches in ems: a page's leading (single, 1.5, double spacing) is what a paragraph break is measured against.
  const pitch = pitches.length >= 3 ? median(pitches) * PARAGRAPH_PITCH : DEFAULT_PARAGRAPH_PITCH_EMS;

  const out: PageBlock[] = [];
  let list: { markers: number[]; numbers: number[] } | undefined;
  /** The last line of the text before, across blocks: whether a block's first line is set apart from it. */
  let above: Line | undefined;
  const apart = (line: Line, before: Line | undefined) =>
    !before || before.baseline >= line.baseline || Math.min(before.x1, line.x1) <= Math.max(before.x0, line.x0) || (line.baseline - before.baseline) / line.em > pitch;
  for (const src of blocks) {
    const b = src.block;
    if (b.type === "table" && src.rows && !isMarkerColumn(src.rows)) {
      out.push({ type: "table", text: b.text, bbox: b.bbox, cells: src.rows.map((r) => [...r]), table_cells: tableCells(src.rows, src.spans, src.boxes) });
      list = undefined;
      continue;
    }
    // A title in the top margin of a page is a heading, not a running header: it is read as text.
    const title = b.type === "header" && src.words.length > 0 && levelOf(linesBy.get(src)!) !== undefined;
    const markedList = b.type === "table" && src.words.length > 0;
    if ((b.type !== "text" && !title && !markedList) || src.words.length === 0) {
      out.push({ type: b.type === "table" || b.type === "text" ? "paragraph" : b.type, text: b.text, bbox: b.bbox });
      continue;
    }
    const groups: Group[] = [];
    let prev: Line | undefined;
    /** The first line of the next block with text, in reading order. */
    const nextLine = (from: SourceBlock) => {
      for (const b of blocks.slice(blocks.indexOf(from) + 1)) if (b.block.type === "text" && b.words.length) return linesBy.get(b)![0];
      return undefined;
    };
    for (const line of linesBy.get(src)!) {
      const group = groups[groups.length - 1];
      const resized = prev !== undefined && Math.abs(Math.log(line.em / prev.em)) > Math.log(SIZE_STEP) && levelOf([line]) !== levelOf([prev]);
      const spaced = prev !== undefined && (line.baseline - prev.baseline) / line.em > pitch;
      // A line may start a list item when it starts the block or a paragraph, or follows an item, or
      // stands out from the line above (indented, or after a short line).
      const firm =
        !group || resized || spaced || group.kind === "list_item" || line.x0 > prev!.x0 + INDENT_EMS * line.em || prev!.x1 < src.block.bbox[2] - 4 * line.em;
      let marker = markerOf(line, firm) ?? (image ? unreadMarker(line, image) : undefined);
      // A line at an item's text indent after an item: a new item when ink stands where the item's bullet
      // stood (tesseract drops small bullets), or, without the pixels, when the line above ended short.
      const m = group?.kind === "list_item" && !marker && !resized && !spaced ? group.marker! : undefined;
      if (m && Math.abs(line.x0 - m.textX) <= INDENT_EMS * line.em && (image ? inkBefore(line, m, image) : prev!.x1 < src.block.bbox[2] - 4 * line.em)) {
        const n = /^\(?(\d{1,3})([.)])$/.exec(m.text);
        marker = { ...m, text: n ? `${Number(n[1]) + 1}${n[2]}` : m.text, textX: line.x0, words: 0 };
      }
      const continuesItem = group?.kind === "list_item" && !marker && !resized && !spaced && line.x0 >= group.marker!.textX - INDENT_EMS * line.em;
      if (group && !marker && !resized && !spaced && (group.kind !== "list_item" || continuesItem)) group.lines.push(line);
      else groups.push({ kind: marker ? "list_item" : "paragraph", lines: [line], ...(marker ? { marker } : {}), open: group ? resized || spaced : apart(line, above) });
      prev = line;
    }
    above = prev;
    for (const [k, g] of groups.entries()) {
      // A short bold line of body size standing apart above and below (a Word "Heading 3", "III. RESULTS") is a heading.
      const alone = g.open && (groups[k + 1]?.open ?? apart(nextLine(src) ?? g.lines[g.lines.length - 1]!, g.lines[g.lines.length - 1]));
      const last = g.lines[g.lines.length - 1]!.words.at(-1)!.text;
      const boldHeading =
        alone &&
        g.lines.length <= MAX_BOLD_HEADING_LINES &&
        g.lines.reduce((n, l) => n + l.words.length, 0) <= MAX_BOLD_HEADING_WORDS &&
        !/[.:;,]$/.test(last) &&
        median(g.lines.map((l) => l.em)) >= body / SIZE_STEP &&
        (g.kind === "paragraph" || g.marker!.ordered) &&
        boldOf(g.lines);
      if (g.kind === "list_item" && !boldHeading) {
        const m = g.marker!;
        const em = g.lines[0]!.em;
        if (!list) list = { markers: [m.x0], numbers: [0] };
        const stack = list.markers;
        while (stack.length > 1 && m.x0 < stack[stack.length - 1]! - INDENT_EMS * em) {
          stack.pop();
          list.numbers.pop();
        }
        if (m.x0 > stack[stack.length - 1]! + INDENT_EMS * em) {
          stack.push(m.x0);
          list.numbers.push(0);
        } else stack[stack.length - 1] = Math.min(stack[stack.length - 1]!, m.x0);
        // The number of this depth's last item: an unread number follows it.
        const read = /^\(?(\d{1,3})[.)]$/.exec(m.text);
        const number = read ? Number(read[1]) : list.numbers[list.numbers.length - 1]! + 1;
        list.numbers[list.numbers.length - 1] = number;
        const words = g.lines.flatMap((l, i) => (i === 0 ? l.words.slice(m.words) : l.words));
        out.push({
          type: "list_item",
          text: joinLines(g.lines, m.words),
          bbox: bbox(boundsOf(words.length ? words : g.lines[0]!.words)),
          ordered: m.ordered,
          depth: stack.length - 1,
          marker: m.text === UNREAD_NUMBER ? `${number}.` : m.text,
        });
        continue;
      }
      list = undefined;
      const words = g.lines.reduce((n, l) => n + l.words.length, 0);
      const level = levelOf(g.lines) ?? (boldHeading ? 3 : undefined);
      const box = bbox(boundsOf(g.lines));
      // A sentence over several lines is a paragraph in large print (a lead paragraph), not a heading.
      const sentence = g.lines.length > 1 && /[.!?]$/.test(g.lines[g.lines.length - 1]!.words.at(-1)!.text);
      if (level && g.lines.length <= MAX_HEADING_LINES && words <= MAX_HEADING_WORDS && !sentence && wordy(joinLines(g.lines, 0))) out.push({ type: "heading", text: joinLines(g.lines, 0), bbox: box, level });
      else out.push({ type: "paragraph", text: joinLines(g.lines, 0), bbox: box });
    }
  }
  return out;
}

/**
 * Whether a heading's text is words: at least half of its characters
 * letters and one word of three letters or more. A formula set large
 * ("x + 1.96y/var (x)", "FG, -x0)") or a stray large glyph ("„am", "Be")
 * is not a heading (they were 8 of the 21 headings read on the public file
 * Bug50936_1.doc).
 */
function wordy(text: string): boolean {
  const chars = [...text.replace(/\s+/g, "")];
  const letters = chars.filter((c) => /\p{L}/u.test(c)).length;
  return letters * 2 >= chars.length && /\p{L}{3}/u.test(text);
}

/**
 * A list marker tesseract did not read left of a line: within
 * {@link BULLET_REACH} ems of its first word, one group of ink (its pieces
 * less than {@link MARKER_PIECE_GAP_EMS} apart) with nothing else between it
 * and the line nor beyond it (so the end of a word in a column to the left
 * is not one). A blob no larger than {@link BULLET_MAX_EMS} across, at the
 * height of the letters, is a bullet (a checkbox is larger). A group as tall
 * as a digit standing on the baseline, wider than a bullet and at most
 * {@link MAX_NUMBER_EMS} across, is a number ("1.", "12.": tesseract drops a
 * column of them set apart by a tab, as LibreOffice and Word set a numbered
 * list); its number is not read, {@link structurePage} counts it
 * ({@link UNREAD_NUMBER}).
 */
function unreadMarker(line: Line, image: GreyImage): Marker | undefined {
  const em = line.em;
  const right = Math.round(line.x0 - 0.2 * em);
  const left = Math.max(0, Math.round(line.x0 - BULLET_REACH * em));
  const y0 = Math.max(0, Math.round(line.baseline - 0.85 * em));
  const y1 = Math.min(image.height, Math.round(line.baseline + 0.1 * em));
  if (right <= left || y1 <= y0) return undefined;
  const inked = (x: number) => {
    for (let y = y0; y < y1; y++) if (image.pixels[y * image.width + x]! < INK) return true;
    return false;
  };
  let x = right;
  while (x >= left && !inked(x)) x--;
  if (x < left) return undefined;
  const x1 = x + 1;
  // The group: ink columns with gaps narrower than a piece gap (the dot after a digit).
  const gapMax = MARKER_PIECE_GAP_EMS * em;
  let x0 = x1;
  for (let gap = 0; x >= left; x--) {
    if (inked(x)) {
      x0 = x;
      gap = 0;
    } else if (++gap > gapMax) break;
  }
  // Nothing further left within reach: a marker on its own.
  for (; x >= left; x--) if (inked(x)) return undefined;
  let top = y1;
  let bottom = y0;
  for (let y = y0; y < y1; y++) {
    for (let c = x0; c < x1; c++) {
      if (image.pixels[y * image.width + c]! < INK) {
        top = Math.min(top, y);
        bottom = Math.max(bottom, y + 1);
        break;
      }
    }
  }
  const w = x1 - x0;
  const h = bottom - top;
  const mid = (top + bottom) / 2;
  if (w <= BULLET_MAX_EMS * em && h <= BULLET_MAX_EMS * em) {
    if (Math.max(w, h) < BULLET_MIN_EMS * em) return undefined;
    if (mid < line.baseline - 0.65 * em || mid > line.baseline - 0.05 * em) return undefined;
    return { text: "•", ordered: false, x0, textX: line.x0, words: 0 };
  }
  // A number: a digit's height (0.6–0.8 em in Latin type) on the baseline, wider than a bullet.
  const onBaseline = Math.abs(bottom - line.baseline) <= 0.12 * em;
  if (onBaseline && h >= 0.55 * em && h <= 0.85 * em && w <= MAX_NUMBER_EMS * em) return { text: UNREAD_NUMBER, ordered: true, x0, textX: line.x0, words: 0 };
  return undefined;
}

/** True when ink stands left of a line where a list's marker stood: a bullet tesseract did not read. */
function inkBefore(line: Line, marker: Marker, image: GreyImage): boolean {
  const x0 = Math.max(0, Math.round(marker.x0 - 0.1 * line.em));
  const x1 = Math.min(image.width, Math.round(line.x0 - 0.15 * line.em));
  const y0 = Math.max(0, Math.round(line.baseline - 0.6 * line.em));
  const y1 = Math.min(image.height, Math.round(line.baseline));
  let ink = 0;
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) if (image.pixels[y * image.width + x]! < INK) ink++;
  return ink >= MIN_BULLET_INK * line.em * line.em;
}

/**
 * True when a table's first column holds only list markers (and empty cells
 * beside an item's wrapped lines): a list whose markers a tab sets apart, which
 * the layout finds as a column of its own.
 */
function isMarkerColumn(rows: readonly (readonly string[])[]): boolean {
  const first = rows.map((r) => (r[0] ?? "").trim());
  const markers = first.filter((c) => BULLET.test(c) || BLOB.test(c) || ORDERED.test(c));
  return markers.length >= 2 && markers.length + first.filter((c) => c === "").length === first.length;
}

/** A run of lines as one line of text (markdown reflows a paragraph anyway); `skip` words of the first line left out (a list marker). */
function joinLines(lines: readonly Line[], skip: number): string {
  return lines
    .map((l, i) => (i === 0 ? l.words.slice(skip) : l.words).map((w) => w.text).join(" "))
    .filter((s) => s !== "")
    .join(" ");
}

function bbox(b: Box): [number, number, number, number] {
  return [Math.round(b.x0), Math.round(b.y0), Math.round(b.x1), Math.round(b.y1)];
}

/**
 * GitHub-flavoured markdown of a page's blocks: headings with `#`, a blank
 * line between blocks, list items on consecutive lines (nested by four
 * spaces a level), tables as GFM tables; headers, footers and figures are
 * left out of the flow.
 */
export function renderMarkdown(blocks: readonly PageBlock[]): string {
  const parts: string[] = [];
  let inList = false;
  for (const b of blocks) {
    let md: string | undefined;
    switch (b.type) {
      case "heading":
        md = `${"#".repeat(b.level ?? 1)} ${escapeInline(b.text)}`;
        break;
      case "paragraph":
        md = escapeStart(escapeInline(b.text));
        break;
      case "list_item": {
        const n = b.ordered ? /\d+/.exec(b.marker ?? "")?.[0] : undefined;
        const bullet = n !== undefined ? `${Number(n)}${(b.marker ?? "").endsWith(")") ? ")" : "."}` : "-";
        // A lettered or roman marker has no GFM form: a bullet keeps it as text.
        const label = b.ordered && n === undefined ? `${escapeInline(b.marker ?? "")} ` : "";
        const item = `${"    ".repeat(b.depth ?? 0)}${bullet} ${label}${escapeStart(escapeInline(b.text))}`;
        if (inList) parts[parts.length - 1] += `\n${item}`;
        else parts.push(item);
        inList = true;
        continue;
      }
      case "table":
        md = b.cells && b.cells.length ? renderMarkdownTable(b.cells) : escapeInline(b.text);
        break;
      default:
        // Headers, footers and figures are not part of the text's flow.
        continue;
    }
    inList = false;
    if (md.trim() !== "") parts.push(md);
  }
  return parts.join("\n\n");
}

/** Characters that would start markdown inside a line: emphasis, code, strikethrough, HTML, escapes. */
function escapeInline(s: string): string {
  return s
    .replace(/[\\`*~]/g, (c) => `\\${c}`)
    .replace(/(^|[^\p{L}\p{N}])_|_(?=[^\p{L}\p{N}]|$)/gu, (m) => m.replace("_", "\\_"))
    .replace(/<(?=[A-Za-z/!?])/g, "\\<");
}

/** Characters that would make a line a heading, quote, list item or rule. */
function escapeStart(s: string): string {
  if (/^(#{1,6}(\s|$)|>|[-+]\s|=+\s*$|-+\s*$)/.test(s)) return `\\${s}`;
  return s.replace(/^(\d{1,9})([.)])(\s|$)/, "$1\\$2$3");
}
