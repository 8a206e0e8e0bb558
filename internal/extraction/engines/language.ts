/**
 * Which installed tesseract language a page's text is written in, from the
 * words a first reading recognised: franc's trigram model, limited to the
 * languages installed. Only languages written in the Latin script are
 * guessed this way (a first reading in English gives no usable text of
 * another script; docs/ocr.md "Language").
 */
import { franc } from "franc";

/** Fewer letters than this give no reliable guess. */
const MIN_LETTERS = 40;

/** ISO 639-3 codes franc answers with → tesseract traineddata names, where they differ. */
const FRANC_TO_TESSERACT: Readonly<Record<string, string>> = Object.freeze({ zlm: "msa" });

/**
 * The traineddata name of the page's language, among `installed` (Latin
 * script ones), or null when the text is too short or the language is not
 * one of them.
 */
export function guessLanguage(text: string, installed: readonly string[]): string | null {
  const letters = text.replace(/[^\p{L}]/gu, "").length;
  if (letters < MIN_LETTERS) return null;
  const candidates = installed.filter((l) => /^[a-z]{3}$/.test(l) && l !== "frk");
  const francCodes = candidates.map((l) => Object.entries(FRANC_TO_TESSERACT).find(([, t]) => t === l)?.[0] ?? l);
  if (francCodes.length < 2) return null;
  const code = franc(text, { only: francCodes, minLength: MIN_LETTERS });
  if (code === "und") return null;
  return FRANC_TO_TESSERACT[code] ?? code;
}
