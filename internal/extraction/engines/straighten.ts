/**
 * Turned and skewed pages, straightened before a local engine reads them
 * (docs/ocr.md "Turned and skewed pages"). Wraps every local engine
 * (`localEngines()` in ../index.ts), so images, PDF pages and office pages
 * all pass through it.
 *
 * 1. The cheap check, on every page: the page's pixels
 *    (`layout/orientation.ts`) give the skew, whether the lines run across
 *    or down the page, and which way up they stand (tens of milliseconds
 *    besides decoding the image).
 * 2. Only when that check is not sure the page is upright (it finds it
 *    turned, or its ascenders point up only weakly, {@link SURE_UP_VOTE}, or
 *    its profiles show no text lines, {@link MIN_SKEW_CONTRAST}), two trial
 *    readings decide: tesseract reads a square from the page's middle
 *    ({@link trialSquare}, the skew found taken out) as it is and turned
 *    180° (engines/tesseract.ts `trial`). Text read the right way up comes
 *    back with high word confidences, upside down as low-confidence garbage
 *    ({@link acrossTurn}). When the lines run down the square in those
 *    readings (tesseract reads a page turned 90° clockwise so), the square
 *    turned 90° and 270° is read as well, and the same rule decides
 *    ({@link sidewaysTurn}). A turn is acted on when it beats the page as
 *    sent by {@link TRIAL_MARGIN} points. Where the profiles found no line
 *    structure (a page filled by a photo), the skew is taken from the
 *    baselines of the trial's lines instead.
 * 3. The page is turned back and deskewed in one rotation by sharp (an
 *    image in its own colours, as PNG; a PDF page's grey pixels as PGM), and
 *    read; every box of the layout is mapped back into the page image as
 *    sent.
 *
 * The engine starts reading the page as sent while the check runs (tesseract
 * runs in a child process, the check in this one), and that reading is
 * answered when the check finds nothing to do, so an upright page waits for
 * nothing; when the page is straightened, the first reading is stopped
 * (its program killed: at once when the profiles find a skew to undo, after
 * the trials when they turn the page) and the straightened page is read.
 * With `local/tesseract` a confident reading of the page as sent also
 * settles a turn the profiles are unsure of ({@link SURE_READING_CONFIDENCE}).
 * The check's own CPU
 * time (decoding the image, the profiles) is still spent on every page, and
 * the trials' on the pages they are asked about (on 2 cores they share the
 * CPUs with that first reading): docs/benchmarks/turned-pages.md "Turned and skewed
 * pages" gives the figures.
 *
 * Decisions a reader may question (the trial readings and the early reading:
 * docs/adr/0007-straighten-pages-before-reading.md):
 * - A skew under {@link MIN_SKEW_DEGREES} is left alone: tesseract's own line
 *   finder follows it, and resampling a clean page costs time and sharpness.
 * - An image of a single text line (one side more than {@link LINE_ASPECT}
 *   times the other) is read as sent: its letters fool the profiles, and a
 *   line is what the engine reads best as it is.
 * - Any failure of the check (an image sharp cannot decode, such as BMP, a
 *   trial that reads too little text) reads the page as sent: straightening
 *   is an improvement, never a reason for an error.
 */
import { parsePgm } from "../../formats/index.ts";
import { decodeToPng, fromPixels, imageMetadata } from "../../platform/decoder/index.ts";
import { encodePgm, viewGrey } from "../layout/image.ts";
import { measureAngles, type Turn } from "../layout/orientation.ts";
import { FolioError } from "../../platform/errors/index.ts";
import type { TrialReading } from "./tesseract-trial.ts";
import { otsuThreshold, type GreyImage } from "../layout/rules.ts";
import type { Engine, ExtractOptions, LayoutBlock, PageInput, PageLayout, PageResult, TableCell } from "../types.ts";

/** Skews smaller than this are read as they are (module comment). */
export const MIN_SKEW_DEGREES = 1;
/**
 * Below this contrast of the profiles (orientation.ts `skewContrast`) their
 * skew and turn are not trusted and the trial readings decide. Measured on
 * the corpus's images in every orientation and skewed ±4°/12°: 1.42–3.8 on
 * every page and block with text lines, 1.03–1.07 on a magazine page filled
 * by a photo.
 */
export const MIN_SKEW_CONTRAST = 1.3;
/**
 * The profiles alone call a page upright only when its ascenders point up by
 * at least this vote (orientation.ts `upVote`); below it, the trial readings
 * decide. Measured on the corpus's 22 images that are not single lines, in
 * four turns and skewed ±4°: the profiles were wrong at votes of 0.02–0.27 (a
 * dense table whose columns make sharper peaks than its rows, a coloured table
 * upside down whose rules outvote its ascenders, a receipt photographed on a
 * dark table) and right from 0.01 to 0.85; 8 of the 22 upright images fall
 * under it and pay for the trial (docs/benchmarks/turned-pages.md "Turned and skewed pages").
 */
export const SURE_UP_VOTE = 0.35;
/**
 * The trial square's side as a share of the page's shorter side, its least
 * and its most: about a sixth of an A4 page, text enough for a clear answer
 * (docs/benchmarks/turned-pages.md "Turned and skewed pages"). Every pixel of it is read
 * two to four times on the pages asked about, which in a long job is
 * throughput lost: a square of {@link SMALL_TRIAL_SHARE} of the side gave the
 * same verdicts by the same margins at twice the cost (docs/benchmarks/jobs.md
 * "Durable jobs"). That share stays the most of a small image (a receipt),
 * where half the side would hold too few words.
 */
export const TRIAL_SHARE = 0.5;
export const SMALL_TRIAL_SHARE = 0.7;
export const MIN_TRIAL_SIDE = 600;
export const MAX_TRIAL_SIDE = 1150;
/** Another turn must beat the page as sent by this many points of trial score (0–100) to be acted on. */
export const TRIAL_MARGIN = 15;
/** A trial that reads fewer letters and digits than this decides nothing. */
export const MIN_TRIAL_CHARS = 20;
/** An image whose long side is more than this many times its short side is a single text line. */
export const LINE_ASPECT = 5;

/**
 * The reading of the page as sent settles a turn the profiles are unsure of
 * (they find text lines across the page, upright, but with a weak vote) when
 * it reads at least {@link SURE_READING_LETTERS} letters with a mean word
 * confidence of at least this (engines/tesseract.ts); the trials are then not
 * read. Measured with tesseract on the corpus's 29 images in four turns
 * (docs/benchmarks/jobs-history.md "Resident tesseract"): pages read turned 180° or 270°
 * gave 0.14–0.47 (0.73 on an image of 41 letters), upright pages 0.60–0.96
 * (21 of 29 at 0.75 or more). A page turned 90° clockwise is read upright by
 * tesseract itself and reads as confidently as upright.
 */
export const SURE_READING_CONFIDENCE = 0.75;
/** Fewer letters than this in the reading as sent say nothing of its turn. */
export const SURE_READING_LETTERS = 100;

/** Trial readings of an image (engines/tesseract.ts `trial`). */
export interface TrialReader {
  trial(page: PageInput, language: string | undefined, signal: AbortSignal): Promise<TrialReading>;
}

/** How a page was straightened: the page as sent is the upright page turned clockwise by `rotation + skewDegrees`. */
export interface Straightening {
  rotation: Turn;
  skewDegrees: number;
}

const NONE: Straightening = Object.freeze({ rotation: 0, skewDegrees: 0 });

export class StraightenedEngine implements Engine {
  readonly id: string;

  constructor(
    /** The engine that reads the straightened page (`make eval-variants` times it alone). */
    readonly inner: Engine,
    private readonly reader: TrialReader,
    /**
     * Which of the inner engine's readings carry tesseract's mean word
     * confidence, so that a confident reading of the page as sent settles an
     * unsure turn ({@link SURE_READING_CONFIDENCE}); none by default. Never
     * PP-OCR's: it turns lines by itself and may read an upside-down line
     * with confidence.
     */
    private readonly readByTesseract?: (r: PageResult) => boolean,
  ) {
    this.id = inner.id;
  }

  async extractPage(page: PageInput, options: ExtractOptions, signal: AbortSignal): Promise<PageResult> {
    // The page as sent is read while the check runs (module comment); dropped when the page is straightened.
    const stop = new AbortController();
    const asSent = this.inner.extractPage(page, options, AbortSignal.any([signal, stop.signal]));
    asSent.catch(() => {});
    let plan: Awaited<ReturnType<StraightenedEngine["plan"]>>;
    try {
      // A page found skewed is read again straightened whatever the trials say: its reading as sent is dropped at once.
      const decides = this.readByTesseract;
      // Settles either way (undefined when the reading fails or is dropped): nobody may be left with a rejection.
      const reading = decides && asSent.then(
        (r) => (decides(r) ? r : undefined),
        () => undefined,
      );
      plan = await this.plan(page, signal, options.language, reading, () => stop.abort());
    } catch (err) {
      stop.abort(err);
      throw err;
    }
    if (!plan.image) return withStraightening(await asSent, NONE);
    // Nobody awaits this reading any more: the reason is never seen.
    stop.abort();
    const straight = await straightened(page, plan.image, -(plan.how.rotation + plan.how.skewDegrees));
    const r = await this.inner.extractPage(straight, options, signal);
    const back = r.layout ? mapLayout(r.layout, plan.how, plan.sent) : undefined;
    // The structure's boxes (output_format json) go back into the page as sent like the layout's.
    // So do its tables' cells (result.tables, and a json table block's table_cells).
    const hasCells = r.tables.some((t) => t.cells.some((c) => c.bbox));
    const map = r.blocks || hasCells ? boxMapper(plan.how, await straightSize(straight, r.layout), plan.sent) : undefined;
    const cells = (cs: readonly TableCell[]) => cs.map((c) => (c.bbox && map ? { ...c, bbox: map(c.bbox) } : c));
    const blocks = map && r.blocks?.map((b) => ({ ...b, bbox: map(b.bbox), ...(b.table_cells ? { table_cells: cells(b.table_cells) } : {}) }));
    const tables = hasCells ? r.tables.map((t) => ({ ...t, cells: cells(t.cells) })) : r.tables;
    return withStraightening({ ...r, tables, ...(back ? { layout: back } : {}), ...(blocks ? { blocks } : {}) }, plan.how);
  }

  /**
   * What to do with a page (module comment): how it is straightened and what
   * from (a PDF page's grey pixels, already turned; "original": the image as
   * sent, turned by {@link straightened}), or nothing to do (no `image`); and
   * the size of the page as sent.
   */
  async plan(
    page: PageInput,
    signal: AbortSignal,
    language?: string,
    asSent?: Promise<PageResult | undefined>,
    /** Called as soon as the page is known to be straightened (a skew to undo): the reading as sent is of no use. */
    straightening?: () => void,
  ): Promise<{ how: Straightening; image?: GreyImage | "original"; sent: { width: number; height: number } }> {
    let grey: GreyImage;
    try {
      // Only read here: rotations and the trials' square are copies.
      grey = await viewGrey(page.image);
    } catch {
      // Not an image sharp decodes (BMP): the engine reads it, or says why not.
      return { how: NONE, sent: { width: 0, height: 0 } };
    }
    signal.throwIfAborted();
    const sent = { width: grey.width, height: grey.height };
    if (Math.max(grey.width, grey.height) > LINE_ASPECT * Math.min(grey.width, grey.height)) return { how: NONE, sent };
    const m = measureAngles(grey);
    // Too little ink to tell anything: a blank page.
    if (!m) return { how: NONE, sent };
    // Without text lines in the profiles (a page filled by a photo) neither their skew nor their turn means anything.
    const trusted = m.skewContrast >= MIN_SKEW_CONTRAST;
    let skew = trusted && Math.abs(m.skewDegrees) >= MIN_SKEW_DEGREES ? m.skewDegrees : 0;
    if (skew) straightening?.();
    let rotation: Turn = 0;
    // A page to deskew is read again anyway: its reading as sent is not waited for.
    const upright = trusted && m.turn === 0 && (m.upVote >= SURE_UP_VOTE || (!skew && asSent !== undefined && readsUpright(await asSent.catch(() => undefined))));
    signal.throwIfAborted();
    if (!upright) {
      const level = skew ? await rotateGrey(grey, -skew) : grey;
      signal.throwIfAborted();
      const verdict = await this.trial(level, page.pageNumber, language, signal);
      rotation = verdict.rotation;
      if (!trusted && verdict.skewDegrees !== null && Math.abs(verdict.skewDegrees) >= MIN_SKEW_DEGREES) skew = verdict.skewDegrees;
    }
    if (rotation === 0 && skew === 0) return { how: NONE, sent };
    const how = { rotation, skewDegrees: skew };
    // A PDF page (PGM) is turned here; any other image by sharp from its own bytes, colours kept.
    return { how, image: parsePgm(page.image) ? await rotateGrey(grey, -(rotation + skew)) : "original", sent };
  }

  /**
   * The trial readings of a page (module comment): its ink's square as it is
   * and turned 180°, read side by side; when those find its lines running
   * down the square (or too little text either way), the square turned 90°
   * and 270° as well. A trial tesseract cannot read leaves the page as sent.
   */
  async trial(grey: GreyImage, pageNumber: number, language: string | undefined, signal: AbortSignal): Promise<{ rotation: Turn; skewDegrees: number | null }> {
    const square = trialSquare(grey);
    const read = (img: GreyImage) => this.reader.trial({ pageNumber, image: encodePgm(img), mimeType: "image/x-portable-graymap" }, language, signal);
    try {
      const [asSent, flipped] = await Promise.all([read(square), read(turned180(square))]);
      const first = acrossTurn(asSent, flipped);
      if (first !== "sideways") return first;
      const quarter = turned90(square);
      const [clockwise, anticlockwise] = await Promise.all([read(quarter), read(turned180(quarter))]);
      return sidewaysTurn(asSent, clockwise, anticlockwise);
    } catch (err) {
      signal.throwIfAborted();
      if (err instanceof FolioError && (err.code === "invalid_request" || err.code === "internal_error")) return { rotation: 0, skewDegrees: null };
      throw err;
    }
  }
}

/** A reading of the page as sent that settles its turn: see {@link SURE_READING_CONFIDENCE}. */
export function readsUpright(r: Pick<PageResult, "text" | "confidence"> | undefined): boolean {
  if (!r || (r.confidence ?? 0) < SURE_READING_CONFIDENCE) return false;
  return (r.text.match(/\p{L}/gu)?.length ?? 0) >= SURE_READING_LETTERS;
}

/**
 * What the first two trial readings say (module comment): `asSent` of the
 * square as it is, `flipped` of it turned 180°. Upside down when `flipped`
 * reads across better than `asSent` by {@link TRIAL_MARGIN}; "sideways" when
 * the lines run down the square in both (tesseract reads a page turned 90°
 * clockwise as lines running down it, with an upright page's confidence), or
 * when neither reads {@link MIN_TRIAL_CHARS}; else upright. The skew is the
 * baselines' of the reading chosen (a line's slope is the same upside down).
 */
export function acrossTurn(asSent: TrialReading, flipped: TrialReading): { rotation: 0 | 180; skewDegrees: number | null } | "sideways" {
  if (asSent.chars < MIN_TRIAL_CHARS && flipped.chars < MIN_TRIAL_CHARS) return "sideways";
  if (Math.max(asSent.down, flipped.down) > Math.max(asSent.across, flipped.across)) return "sideways";
  if (flipped.chars >= MIN_TRIAL_CHARS && flipped.across >= asSent.across + TRIAL_MARGIN) return { rotation: 180, skewDegrees: flipped.skewDegrees };
  return { rotation: 0, skewDegrees: asSent.chars >= MIN_TRIAL_CHARS ? asSent.skewDegrees : null };
}

/**
 * The turn of a page the first trials found sideways (or could not read),
 * from the square turned 90° clockwise (`clockwise`: upright if the page was
 * sent turned 270°) and 270° (`anticlockwise`: upright if it was sent turned
 * 90°): the one that reads across best, by {@link TRIAL_MARGIN} over the other
 * and over the square as sent; else the page is left as sent.
 */
export function sidewaysTurn(asSent: TrialReading, clockwise: TrialReading, anticlockwise: TrialReading): { rotation: Turn; skewDegrees: number | null } {
  const [rotation, best, other] = clockwise.across >= anticlockwise.across ? ([270, clockwise, anticlockwise] as const) : ([90, anticlockwise, clockwise] as const);
  if (best.chars >= MIN_TRIAL_CHARS && best.across >= other.across + TRIAL_MARGIN && best.across >= asSent.across + TRIAL_MARGIN) {
    return { rotation, skewDegrees: best.skewDegrees };
  }
  return { rotation: 0, skewDegrees: asSent.chars >= MIN_TRIAL_CHARS ? asSent.skewDegrees : null };
}

/**
 * The square read by the trials: {@link TRIAL_SHARE} of the page's shorter
 * side (from {@link MIN_TRIAL_SIDE}, but at most {@link SMALL_TRIAL_SHARE} of
 * it, to {@link MAX_TRIAL_SIDE}), centred on the page's ink (the
 * median row and column of its ink edges, so that a letter with a few
 * lines at the top is read where its lines are), within the page.
 */
export function trialSquare(img: GreyImage): GreyImage {
  const shorter = Math.min(img.width, img.height);
  const side = Math.max(1, Math.min(Math.round(shorter * SMALL_TRIAL_SHARE), MAX_TRIAL_SIDE, Math.max(MIN_TRIAL_SIDE, Math.round(shorter * TRIAL_SHARE))));
  const { x, y } = inkMedian(img);
  const left = Math.min(img.width - side, Math.max(0, Math.round(x - side / 2)));
  const top = Math.min(img.height - side, Math.max(0, Math.round(y - side / 2)));
  const pixels = new Uint8Array(side * side);
  for (let r = 0; r < side; r++) pixels.set(img.pixels.subarray((top + r) * img.width + left, (top + r) * img.width + left + side), r * side);
  return { width: side, height: side, pixels };
}

/**
 * The median column and row of a page's ink edges: where a pixel and the
 * next in its row fall on different sides of Otsu's threshold (every 4th
 * row). Text is dense in them; a dark table around a photographed receipt
 * or a solid fill has them only on its border. The page's centre without any.
 */
function inkMedian(img: GreyImage): { x: number; y: number } {
  const t = otsuThreshold(img.pixels);
  const cols = new Uint32Array(img.width);
  const rows = new Uint32Array(img.height);
  let n = 0;
  for (let y = 0; y < img.height; y += 4) {
    const row = y * img.width;
    let dark = img.pixels[row]! <= t;
    for (let x = 1; x < img.width; x++) {
      const d = img.pixels[row + x]! <= t;
      if (d === dark) continue;
      dark = d;
      cols[x]!++;
      rows[y]!++;
      n++;
    }
  }
  if (!n) return { x: img.width / 2, y: img.height / 2 };
  const median = (counts: Uint32Array) => {
    let seen = 0;
    for (let i = 0; i < counts.length; i++) if ((seen += counts[i]!) * 2 >= n) return i;
    return counts.length / 2;
  };
  return { x: median(cols), y: median(rows) };
}

/** A square image turned 90° clockwise: its row y becomes column side − 1 − y. */
function turned90(img: GreyImage): GreyImage {
  const n = img.width;
  const pixels = new Uint8Array(n * n);
  for (let y = 0; y < n; y++) for (let x = 0; x < n; x++) pixels[x * n + (n - 1 - y)] = img.pixels[y * n + x]!;
  return { width: n, height: n, pixels };
}

/** An image turned 180°: its pixels in reverse order. */
function turned180(img: GreyImage): GreyImage {
  return { width: img.width, height: img.height, pixels: img.pixels.slice().reverse() };
}

/**
 * The page turned clockwise by `degrees`: grey pixels as PGM (a PDF page), or
 * the image as sent turned by sharp and written as a PNG (fast compression:
 * it is read at once), so that its colours reach the engine as they would
 * upright.
 */
async function straightened(page: PageInput, grey: GreyImage | "original", degrees: number): Promise<PageInput> {
  if (grey !== "original") return { pageNumber: page.pageNumber, image: encodePgm(grey), mimeType: "image/x-portable-graymap" };
  const { png } = await decodeToPng(page.image, { rotate: degrees, compressionLevel: 1 });
  return { pageNumber: page.pageNumber, image: png, mimeType: "image/png" };
}

/** The reading with what was done to the page, in the result and in its layout. */
function withStraightening(r: PageResult, how: Straightening): PageResult {
  return {
    ...r,
    rotation: how.rotation,
    skewDegrees: how.skewDegrees,
    ...(r.layout ? { layout: { ...r.layout, rotation: how.rotation, skew_degrees: how.skewDegrees } } : {}),
  };
}

/**
 * Grey pixels turned clockwise by `degrees` (negative: counter-clockwise) by
 * sharp, on a canvas grown to hold them, the corners filled white.
 */
export async function rotateGrey(img: GreyImage, degrees: number): Promise<GreyImage> {
  const { data, info } = await fromPixels(img.pixels, { width: img.width, height: img.height, channels: 1 })
    .rotate(degrees, { background: { r: 255, g: 255, b: 255 } })
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels === 1) return { width: info.width, height: info.height, pixels: new Uint8Array(data.buffer, data.byteOffset, data.length) };
  const px = new Uint8Array(info.width * info.height);
  for (let i = 0; i < px.length; i++) px[i] = data[i * info.channels]!;
  return { width: info.width, height: info.height, pixels: px };
}

/**
 * A layout read on the straightened page, in pixels of the page as sent: each
 * box's corners turned back around the pages' centres (the straightened
 * canvas is centred on the sent page's centre), the box around them, clipped
 * to the page.
 */
export function mapLayout(layout: PageLayout, how: Straightening, sent: { width: number; height: number }): PageLayout {
  const box = boxMapper(how, layout, sent);
  const blocks: LayoutBlock[] = layout.blocks.map((b) => ({
    ...b,
    bbox: box(b.bbox),
    ...(b.words ? { words: b.words.map((w) => ({ ...w, bbox: box(w.bbox) })) } : {}),
  }));
  return { ...layout, width: sent.width, height: sent.height, blocks };
}

/** The size of the straightened page that was read: its layout's when there is one, else its image's. */
async function straightSize(page: PageInput, layout: PageLayout | undefined): Promise<{ width: number; height: number }> {
  if (layout) return layout;
  const pgm = parsePgm(page.image);
  if (pgm) return pgm;
  const m = await imageMetadata(page.image);
  return { width: m.width, height: m.height };
}

/**
 * Turns a box read on the straightened page (`read`: its size) back into the
 * page as sent (see {@link mapLayout}).
 */
function boxMapper(how: Straightening, read: { width: number; height: number }, sent: { width: number; height: number }) {
  const a = ((how.rotation + how.skewDegrees) * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const c2x = read.width / 2;
  const c2y = read.height / 2;
  const cx = sent.width / 2;
  const cy = sent.height / 2;
  const clip = (v: number, max: number) => Math.min(max, Math.max(0, Math.round(v)));
  const box = (b: [number, number, number, number]): [number, number, number, number] => {
    const xs: number[] = [];
    const ys: number[] = [];
    for (const [x, y] of [
      [b[0], b[1]],
      [b[2], b[1]],
      [b[0], b[3]],
      [b[2], b[3]],
    ] as const) {
      const dx = x - c2x;
      const dy = y - c2y;
      // Clockwise by `a` in image coordinates (y grows downwards).
      xs.push(cx + dx * cos - dy * sin);
      ys.push(cy + dx * sin + dy * cos);
    }
    return [clip(Math.min(...xs), sent.width), clip(Math.min(...ys), sent.height), clip(Math.max(...xs), sent.width), clip(Math.max(...ys), sent.height)];
  };
  return box;
}
