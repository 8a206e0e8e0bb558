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
 * 2. Only when that check finds the page turned (90°, 180° or 270°),
 *    tesseract's own orientation detection (`--psm 0`, about half a reading's
 *    time) is asked, on the page with its skew taken out. The page is turned
 *    back only when both agree on the axis (and tesseract is sure enough,
 *    {@link MIN_DETECTOR_CONFIDENCE}); across the axis of a sideways
 *    page (90° or 270°) tesseract's answer decides, and upside down needs
 *    both to say so. Each alone is wrong on some page of the corpus (a
 *    degraded table's columns look like lines to the profiles and tesseract
 *    calls it upside down; a coloured table's rules outvote its ascenders),
 *    never both in the same way there.
 * 3. The page is turned back and deskewed in one rotation by sharp (an
 *    image in its own colours, as PNG; a PDF page's grey pixels as PGM), and
 *    read; every box of the layout is mapped back into the page image as
 *    sent.
 *
 * The engine starts reading the page as sent while the check runs (tesseract
 * runs in a child process, the check in this one), and that reading is
 * answered when the check finds nothing to do, so an upright page waits for
 * nothing; when the page is straightened, the first reading is stopped
 * (its child killed) and the straightened page is read. The check's own CPU
 * time (decoding the image, the profiles) is still spent on every page:
 * docs/benchmarks.md "Turned and skewed pages" gives both figures.
 *
 * Decisions a reader may question (the two opinions and the early reading:
 * docs/adr/0007-straighten-pages-before-reading.md):
 * - A skew under {@link MIN_SKEW_DEGREES} is left alone: tesseract's own line
 *   finder follows it, and resampling a clean page costs time and sharpness.
 * - A page whose profiles show no line structure at any angle (a photo, a
 *   single word; {@link MIN_SKEW_CONTRAST}) is read as sent; an image of a
 *   single text line (one side more than {@link LINE_ASPECT} times the
 *   other) is read as sent: its letters fool the profiles, and tesseract's
 *   detector needs more text than a line holds.
 * - Any failure of the check (an image sharp cannot decode, such as BMP,
 *   tesseract's detector finding too little text) reads the page as sent:
 *   straightening is an improvement, never a reason for an error.
 */
import { parsePgm } from "../../formats/index.ts";
import { decodeToPng, fromPixels, imageMetadata } from "../../platform/decoder/index.ts";
import { decodeGrey, encodePgm } from "../layout/image.ts";
import { measureAngles, type Turn } from "../layout/orientation.ts";
import type { GreyImage } from "../layout/rules.ts";
import type { Engine, ExtractOptions, LayoutBlock, PageInput, PageLayout, PageResult } from "../types.ts";

/** Skews smaller than this are read as they are (module comment). */
export const MIN_SKEW_DEGREES = 1;
/**
 * Below this contrast of the profiles (orientation.ts `skewContrast`) neither
 * the skew nor the turn they find is trusted, and the page is read as sent.
 * Measured on the corpus's images in every orientation and skewed ±4°/12°:
 * 1.42–3.8 on every page and block with text lines, 1.03–1.07 on a magazine
 * page filled by a photo (where a skewed copy was otherwise called upside
 * down by both opinions).
 */
export const MIN_SKEW_CONTRAST = 1.3;
/**
 * Tesseract's orientation confidence (its own scale) under which its answer
 * does not count. OCRmyPDF turns pages on tesseract's word alone from 14;
 * here the profiles must agree as well, so the bar is lower. Measured on the
 * corpus's 15 pages turned 90/180/270 (docs/benchmarks.md "Turned and skewed
 * pages"): 3.4–34.5 where it was right, 0.5–4.1 where it was wrong on a
 * magazine page filled by a photo (which {@link MIN_SKEW_CONTRAST} keeps out),
 * and 0.63 on an upright receipt photographed on a dark table that both it
 * and the profiles call upside down.
 */
export const MIN_DETECTOR_CONFIDENCE = 2;
/** An image whose long side is more than this many times its short side is a single text line. */
export const LINE_ASPECT = 5;

/** What tesseract's orientation detection says of a page (engines/tesseract.ts `orientation`). */
export interface OrientationDetector {
  orientation(page: PageInput, signal: AbortSignal): Promise<{ degrees: Turn; confidence: number } | null>;
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
    private readonly detector: OrientationDetector,
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
      plan = await this.plan(page, signal);
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
    const map = r.blocks ? boxMapper(plan.how, await straightSize(straight, r.layout), plan.sent) : undefined;
    const blocks = map && r.blocks?.map((b) => ({ ...b, bbox: map(b.bbox) }));
    return withStraightening({ ...r, ...(back ? { layout: back } : {}), ...(blocks ? { blocks } : {}) }, plan.how);
  }

  /**
   * What to do with a page (module comment): how it is straightened and what
   * from (a PDF page's grey pixels, already turned; "original": the image as
   * sent, turned by {@link straightened}), or nothing to do (no `image`); and
   * the size of the page as sent.
   */
  async plan(page: PageInput, signal: AbortSignal): Promise<{ how: Straightening; image?: GreyImage | "original"; sent: { width: number; height: number } }> {
    let grey: GreyImage;
    try {
      grey = await decodeGrey(page.image);
    } catch {
      // Not an image sharp decodes (BMP): the engine reads it, or says why not.
      return { how: NONE, sent: { width: 0, height: 0 } };
    }
    signal.throwIfAborted();
    const sent = { width: grey.width, height: grey.height };
    if (Math.max(grey.width, grey.height) > LINE_ASPECT * Math.min(grey.width, grey.height)) return { how: NONE, sent };
    const m = measureAngles(grey);
    // Without text lines in the profiles (a page filled by a photo) neither their skew nor their turn means anything.
    if (!m || m.skewContrast < MIN_SKEW_CONTRAST) return { how: NONE, sent };
    const skew = Math.abs(m.skewDegrees) >= MIN_SKEW_DEGREES ? m.skewDegrees : 0;
    let rotation: Turn = 0;
    if (m.turn !== 0) {
      const level = skew ? await rotateGrey(grey, -skew) : grey;
      signal.throwIfAborted();
      const answer = await this.detector.orientation({ pageNumber: page.pageNumber, image: encodePgm(level), mimeType: "image/x-portable-graymap" }, signal);
      const osd = answer && answer.confidence >= MIN_DETECTOR_CONFIDENCE ? answer : null;
      if (osd && m.turn === 180 && osd.degrees === 180) rotation = 180;
      else if (osd && m.turn % 180 === 90 && osd.degrees % 180 === 90) rotation = osd.degrees;
    }
    if (rotation === 0 && skew === 0) return { how: NONE, sent };
    const how = { rotation, skewDegrees: skew };
    // A PDF page (PGM) is turned here; any other image by sharp from its own bytes, colours kept.
    return { how, image: parsePgm(page.image) ? await rotateGrey(grey, -(rotation + skew)) : "original", sent };
  }
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
