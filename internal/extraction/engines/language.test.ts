/**
 * guessLanguage: which installed language a first reading's text is written
 * in. Pure (franc's model, no tesseract): the installed list is given.
 */
import { describe, expect, it } from "vitest";
import { guessLanguage } from "./language.ts";

const INSTALLED = ["deu", "eng", "fra", "frk", "ita", "nld", "osd", "por", "spa"];

describe("guessLanguage", () => {
  it("names the language of prose", () => {
    expect(guessLanguage("Die Kommission hat heute beschlossen, die Förderung der ländlichen Gemeinden fortzusetzen und zu erweitern.", INSTALLED)).toBe("deu");
    expect(guessLanguage("Le conseil municipal a décidé de prolonger les travaux de la bibliothèque pendant toute la saison prochaine.", INSTALLED)).toBe("fra");
    expect(guessLanguage("The committee decided today to continue the support of rural communities and to widen it next year.", INSTALLED)).toBe("eng");
  });

  it("guesses nothing from a table's single letters: only words of three letters or more are evidence", () => {
    // A parts table as a scan's first reading gives it (the corpus's scribe_table_05): over 100 letters, nearly all
    // single ones; with them counted, franc called it Italian.
    const rows = Array.from({ length: 90 }, (_, i) => `${i + 1} ${13 + (i % 2)} ${"AB"[i % 3 === 0 ? 1 : 0]}`);
    const text = ["15", "Part No.", "OLANDA", "Table No.", ...rows, "Part No.", "Table No."].join("\n");
    expect(text.replace(/[^\p{L}]/gu, "").length).toBeGreaterThan(100);
    expect(guessLanguage(text, INSTALLED)).toBeNull();
  });

  it("guesses nothing from too little text or from one installed language", () => {
    expect(guessLanguage("Rechnung Nr. 42", INSTALLED)).toBeNull();
    expect(guessLanguage("Die Kommission hat heute beschlossen, die Förderung der ländlichen Gemeinden fortzusetzen.", ["eng", "osd"])).toBeNull();
  });
});
