/**
 * Which language `local/tesseract` reads a page in: the codes a request may
 * name and the traineddata they stand for (ISO 639-1, region and script
 * forms, or traineddata names), the traineddata installed on this machine
 * (`tesseract --list-langs`), and, when the request names none, the choice
 * among them by reading the page. engines/tesseract.ts reads; this module
 * decides in which language.
 *
 * Decisions a reader may question:
 * - The language, when the request names none: the page is read in English
 *   first; when the words read are another installed language (franc, a
 *   trigram model, over the recognised text: engines/language.ts), it is
 *   read again in that language; when the words are read with low
 *   confidence, the other installed scripts (Fraktur) are tried and the most
 *   confident reading wins. One pass for an English page, two for another
 *   language.
 */
import { execFile } from "node:child_process";
import { FolioError } from "../../platform/errors/index.ts";
import type { AnalyzedPage } from "../layout/page.ts";
import { guessLanguage } from "./language.ts";
import { TESSERACT_COMMAND, tesseractEnv } from "./tesseract-server.ts";

/**
 * ISO 639-1 codes (and a few region/script forms) → tesseract traineddata
 * names. A request may also name traineddata directly ("deu", "chi_tra").
 */
export const ISO_TO_TESSERACT: Readonly<Record<string, string>> = Object.freeze({
  af: "afr", am: "amh", ar: "ara", as: "asm", az: "aze", be: "bel", bg: "bul", bn: "ben", bo: "bod", br: "bre",
  bs: "bos", ca: "cat", co: "cos", cs: "ces", cy: "cym", da: "dan", de: "deu", dv: "div", el: "ell", en: "eng",
  eo: "epo", es: "spa", et: "est", eu: "eus", fa: "fas", fi: "fin", fo: "fao", fr: "fra", fy: "fry", ga: "gle",
  gd: "gla", gl: "glg", gu: "guj", he: "heb", hi: "hin", hr: "hrv", ht: "hat", hu: "hun", hy: "hye", id: "ind",
  is: "isl", it: "ita", iu: "iku", ja: "jpn", jv: "jav", ka: "kat", kk: "kaz", km: "khm", kn: "kan", ko: "kor",
  ku: "kmr", ky: "kir", la: "lat", lb: "ltz", lo: "lao", lt: "lit", lv: "lav", mi: "mri", mk: "mkd", ml: "mal",
  mn: "mon", mr: "mar", ms: "msa", mt: "mlt", my: "mya", nb: "nor", ne: "nep", nl: "nld", no: "nor", oc: "oci",
  or: "ori", pa: "pan", pl: "pol", ps: "pus", pt: "por", qu: "que", ro: "ron", ru: "rus", sa: "san", sd: "snd",
  si: "sin", sk: "slk", sl: "slv", sq: "sqi", sr: "srp", su: "sun", sv: "swe", sw: "swa", ta: "tam", te: "tel",
  tg: "tgk", th: "tha", ti: "tir", tl: "tgl", to: "ton", tr: "tur", tt: "tat", ug: "uig", uk: "ukr", ur: "urd",
  uz: "uzb", vi: "vie", yi: "yid", yo: "yor", zh: "chi_sim",
  // Chinese script and region forms (BCP 47, case-insensitive).
  "zh-hans": "chi_sim", "zh-cn": "chi_sim", "zh-sg": "chi_sim",
  "zh-hant": "chi_tra", "zh-tw": "chi_tra", "zh-hk": "chi_tra", "zh-mo": "chi_tra",
  "sr-latn": "srp_latn", "uz-cyrl": "uzb_cyrl", "az-cyrl": "aze_cyrl",
});

/** traineddata → the code shown to users; the first ISO spelling listed above wins ("nor" → "nb"). */
const TESSERACT_TO_ISO: ReadonlyMap<string, string> = (() => {
  const m = new Map<string, string>();
  for (const [iso, name] of Object.entries(ISO_TO_TESSERACT)) if (!m.has(name)) m.set(name, iso);
  return m;
})();

/** traineddata that are not languages (orientation detection, legacy equations). */
const NOT_LANGUAGES = new Set(["osd", "equ"]);

/** Below this mean word confidence (0–1) the other scripts are tried. */
const LOW_CONFIDENCE = 0.75;
/** Another script's reading wins when its mean confidence is this much higher. */
const SCRIPT_MARGIN = 0.1;
/** A guessed language's reading is kept unless its confidence is this much lower than English's. */
const CONFIDENCE_MARGIN = 0.02;
/**
 * Scripts with traineddata of their own, tried on pages read with low
 * confidence, and on pages of the language they are written in below
 * {@link SCRIPT_LANGUAGE_CONFIDENCE}: German Fraktur.
 */
const OTHER_SCRIPTS: Readonly<Record<string, string>> = Object.freeze({ frk: "deu" });
/** A page found to be German and read with less confidence than this is tried in Fraktur too. */
const SCRIPT_LANGUAGE_CONFIDENCE = 0.9;

const languageCache = new Map<string, Promise<ReadonlySet<string>>>();

/**
 * The traineddata installed for `command` (`tesseract --list-langs`),
 * without `osd`/`equ`. Cached for the process after the first success (a
 * failure is not cached): installing a language needs a restart.
 */
export function installedTraineddata(command = TESSERACT_COMMAND): Promise<ReadonlySet<string>> {
  let cached = languageCache.get(command);
  if (!cached) {
    cached = listLanguages(command);
    languageCache.set(command, cached);
    cached.catch(() => languageCache.delete(command));
  }
  return cached;
}

/**
 * The language codes a request can use on this machine, sorted: the ISO
 * 639-1 code where one maps to an installed traineddata ("de", "en"), else
 * the traineddata name itself ("frk").
 */
export async function installedLanguages(command = TESSERACT_COMMAND): Promise<string[]> {
  const names = await installedTraineddata(command);
  return [...new Set([...names].map((n) => TESSERACT_TO_ISO.get(n) ?? n))].sort();
}

function listLanguages(command: string): Promise<ReadonlySet<string>> {
  return new Promise((resolve, reject) => {
    execFile(command, ["--list-langs"], { env: tesseractEnv(), timeout: 10_000, killSignal: "SIGKILL", encoding: "utf8" }, (err, stdout, stderr) => {
      if (err) {
        reject(new FolioError("service_unavailable", "tesseract is not installed or not runnable on this service", { cause: err }));
        return;
      }
      // Old versions print the list on stderr; the first line is a header ending in a colon.
      const names = `${stdout}\n${stderr}`
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => /^[A-Za-z0-9_]+(\/[A-Za-z0-9_]+)?$/.test(l) && !NOT_LANGUAGES.has(l));
      resolve(new Set(names));
    });
  });
}

/**
 * The traineddata name for a request's `options.language`: an ISO 639-1 code
 * ("de"), a region/script form ("zh-TW", "pt_BR"), a traineddata name
 * ("deu"), or several joined by "+" as tesseract does ("en+de" → "eng+deu").
 * Absent: English when installed, else the first installed language. Unknown
 * or not installed: a 400 on `options.language` naming the installed
 * languages.
 */
export async function tesseractLanguage(hint: string | undefined, command = TESSERACT_COMMAND): Promise<string> {
  const installed = await installedTraineddata(command);
  if (hint === undefined || hint.trim() === "") {
    if (installed.has("eng")) return "eng";
    const first = [...installed].sort()[0];
    if (!first) throw new FolioError("service_unavailable", "tesseract has no language data installed on this service");
    return first;
  }
  const names: string[] = [];
  for (const part of hint.split("+")) {
    const name = traineddataFor(part.trim(), installed);
    const shown = `'${part.trim().slice(0, 40)}'`;
    if (!name) {
      throw new FolioError("invalid_request", `language ${shown} is not an ISO 639-1 code or tesseract language name; installed: ${(await installedLanguages(command)).join(", ")}`, {
        param: "options.language",
      });
    }
    if (!installed.has(name)) {
      throw new FolioError("invalid_request", `language ${shown} is not installed; installed: ${(await installedLanguages(command)).join(", ")}`, {
        param: "options.language",
      });
    }
    if (!names.includes(name)) names.push(name);
  }
  return names.join("+");
}

/** A known traineddata name for one code, installed or not; undefined when unknown. */
function traineddataFor(code: string, installed: ReadonlySet<string>): string | undefined {
  const lower = code.toLowerCase().replace(/_/g, "-");
  const mapped = ISO_TO_TESSERACT[lower] ?? ISO_TO_TESSERACT[lower.split("-")[0] ?? ""];
  if (mapped) return mapped;
  // A traineddata name as tesseract spells it: "deu", "chi_tra", "script/Latin".
  for (const candidate of [code, code.toLowerCase()]) if (installed.has(candidate) || TESSERACT_TO_ISO.has(candidate)) return candidate;
  return undefined;
}

/**
 * A page read in the language it turns out to be in, when the request names
 * none (see the module comment): `read` reads it in one traineddata of those
 * installed for `command`. Answers the most confident reading and the
 * traineddata it used.
 */
export async function readAnyLanguage(read: (lang: string) => Promise<AnalyzedPage>, command = TESSERACT_COMMAND): Promise<{ page: AnalyzedPage; language: string }> {
  const installed = await installedTraineddata(command);
  const first = await tesseractLanguage(undefined, command);
  let best = await read(first);
  let bestLang = first;
  const guess = guessLanguage(best.text, [...installed]);
  if (guess && guess !== first) {
    const again = await read(guess);
    // The language model should read its own language at least as confidently.
    if ((again.confidence ?? 0) >= (best.confidence ?? 0) - CONFIDENCE_MARGIN) {
      best = again;
      bestLang = guess;
    }
  }
  for (const [script, usedFor] of Object.entries(OTHER_SCRIPTS)) {
    const conf = best.confidence ?? 0;
    if (conf >= LOW_CONFIDENCE && !(usedFor === bestLang && conf < SCRIPT_LANGUAGE_CONFIDENCE)) continue;
    if (!installed.has(script) || script === bestLang) continue;
    const other = await read(script);
    if ((other.confidence ?? 0) >= conf + SCRIPT_MARGIN) {
      best = other;
      bestLang = script;
    }
  }
  return { page: best, language: bestLang };
}
