/**
 * Which installed tesseract language a page's text is written in, from the
 * words a first reading recognised: franc's trigram model, limited to the
 * languages installed. Only languages written in the Latin script are
 * guessed this way (a first reading in English gives no usable text of
 * another script; docs/ocr.md "Language").
 */
import { franc } from "franc";

/** Fewer letters than this, in words of three letters or more ({@link EVIDENCE}), give no reliable guess. */
const MIN_LETTERS = 40;
/**
 * Only words of at least three letters are evidence: franc's model is
 * of letter trigrams, and a table's cells ("13 A", "14 B", "No.") are single
 * letters that have none. With them counted, a dense table of part numbers
 * with a dozen real words was guessed Italian and read in Italian, which
 * then kept it from PP-OCR (local/auto reads only English pages so): the
 * corpus's `scribe_table_05` skewed −4°, word F1 0.48 (docs/benchmarks.md).
 */
const EVIDENCE = /\p{L}{3,}/gu;

/** ISO 639-3 codes franc answers with → tesseract traineddata names, where they differ. */
const FRANC_TO_TESSERACT: Readonly<Record<string, string>> = Object.freeze({ zlm: "msa" });

/**
 * The traineddata name of the page's language, among `installed` (Latin
 * script ones), or null when the text is too short or the language is not
 * one of them.
 */
export function guessLanguage(text: string, installed: readonly string[]): string | null {
  const words = text.match(EVIDENCE) ?? [];
  if (words.join("").length < MIN_LETTERS) return null;
  // Not languages franc knows: Fraktur (a script) and tesseract's orientation data.
  const candidates = installed.filter((l) => /^[a-z]{3}$/.test(l) && l !== "frk" && l !== "osd");
  const francCodes = candidates.map((l) => Object.entries(FRANC_TO_TESSERACT).find(([, t]) => t === l)?.[0] ?? l);
  if (francCodes.length < 2) return null;
  const code = franc(words.join(" "), { only: francCodes, minLength: MIN_LETTERS });
  if (code === "und") return null;
  return FRANC_TO_TESSERACT[code] ?? code;
}
