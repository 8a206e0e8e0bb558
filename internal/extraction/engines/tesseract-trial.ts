/**
 * The orientation check's trial readings (engines/straighten.ts) summed up:
 * from tesseract's hOCR of an image (`TesseractEngine.trial` in
 * engines/tesseract.ts reads it), how confidently its words were read across
 * the image and down it, and the slope of its lines.
 */

/** What a trial reading says of the way its image is turned (engines/straighten.ts). */
export interface TrialReading {
  /** Letters and digits read. */
  chars: number;
  /**
   * The words running across the image (wider than tall) weighed by their
   * confidence, 0–100: their confidences summed per letter or digit, over
   * {@link chars}. High when the image is upright; an image read upside down
   * gets garbage at low confidence.
   */
  across: number;
  /**
   * The same for words running down the image (taller than wide): tesseract
   * reads the lines of a page turned 90° clockwise that way, with the
   * confidence of an upright page, and a page turned 270° as garbage.
   */
  down: number;
  /**
   * The median slope of the baselines of at least {@link MIN_TRIAL_LINES}
   * lines running across the image, in degrees clockwise; null with fewer.
   */
  skewDegrees: number | null;
}

/** Fewer lines across than this give no skew (a caption's slope is noise). */
const MIN_TRIAL_LINES = 3;
/** A word of fewer letters or digits than this has no clear direction: it counts half across and half down. */
const MIN_DIRECTED_CHARS = 3;

const HOCR_SPAN = /<span class='(ocr_line|ocr_caption|ocr_textfloat|ocr_header|ocrx_word)'[^>]*?title=(['"])([^'"]*)\2[^>]*>([^<]*)/g;
const HOCR_ENTITY = /&(?:#\d+|#x[0-9a-f]+|[a-z]+);/gi;

/** The {@link TrialReading} of tesseract's hOCR of an image. */
export function parseTrial(hocr: string): TrialReading {
  let chars = 0;
  let across = 0;
  let down = 0;
  const slopes: number[] = [];
  for (const m of hocr.matchAll(HOCR_SPAN)) {
    const title = m[3]!;
    const box = /bbox (\d+) (\d+) (\d+) (\d+)/.exec(title);
    if (!box) continue;
    const width = Number(box[3]) - Number(box[1]);
    const height = Number(box[4]) - Number(box[2]);
    if (m[1] !== "ocrx_word") {
      const baseline = /baseline (-?[\d.]+) /.exec(title);
      if (baseline && width > 2 * height) slopes.push(Number(baseline[1]));
      continue;
    }
    const conf = Number(/x_wconf (\d+)/.exec(title)?.[1] ?? Number.NaN);
    const n = (m[4]!.replace(HOCR_ENTITY, "x").match(/[\p{L}\p{N}]/gu) ?? []).length;
    if (!n || !Number.isFinite(conf)) continue;
    chars += n;
    if (n < MIN_DIRECTED_CHARS || width === height) {
      across += (conf * n) / 2;
      down += (conf * n) / 2;
    } else if (width > height) across += conf * n;
    else down += conf * n;
  }
  slopes.sort((a, b) => a - b);
  const slope = slopes.length >= MIN_TRIAL_LINES ? slopes[slopes.length >> 1]! : null;
  return {
    chars,
    across: chars ? across / chars : 0,
    down: chars ? down / chars : 0,
    skewDegrees: slope === null ? null : Math.round((Math.atan(slope) * 1800) / Math.PI) / 10 || 0,
  };
}
