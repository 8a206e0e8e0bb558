/**
 * A column of bullets read as one tall word (bullets.ts), on words placed as
 * tesseract's TSV gives them; the real engine on a rendered list is covered
 * by `make eval-structure` (docs/benchmarks.md).
 */
import { describe, expect, it } from "vitest";
import { splitBulletColumns } from "./bullets.ts";
import { analyzePage } from "./page.ts";
import type { OcrWord } from "./words.ts";

let n = 0;
const word = (text: string, x0: number, y0: number, w: number, h: number, line: string, paragraph = "p"): OcrWord => ({ text, x0, y0, x1: x0 + w, y1: y0 + h, conf: 90, line, paragraph, index: n++ });

/** Four items at 30 px pitch, their bullets read as one word 11 px wide and 129 px tall after them (tesseract's order). */
function list(column = "ooooo0"): OcrWord[] {
  n = 0;
  const items = ["Analyse", "Erste", "Testmessungen", "Funktionskonzepte"].map((t, i) => word(t, 437, 1133 + 29 * i, t.length * 13, 23, `b9.l${i}`, `b9.p${i}`));
  return [word("Punkte:", 200, 1090, 90, 23, "b8.l1"), ...items, word(column, 386, 1133, 11, 129, "b10.l1", "b10.p1"), word("After", 200, 1300, 60, 23, "b11.l1")];
}

describe("a column of bullets read as one word", () => {
  it("becomes a bullet before each line beside it, the words renumbered in order", () => {
    const out = splitBulletColumns(list());
    expect(out.map((w) => w.text)).toEqual(["Punkte:", "•", "Analyse", "•", "Erste", "•", "Testmessungen", "•", "Funktionskonzepte", "After"]);
    expect(out.map((w) => w.index)).toEqual(out.map((_, i) => i));
    const bullet = out[3]!;
    expect([bullet.x0, bullet.x1, bullet.line]).toEqual([386, 397, "b9.l1"]);
    expect(bullet.y0).toBeGreaterThanOrEqual(1162);
    expect(bullet.y1).toBeLessThanOrEqual(1185);
  });

  it("leaves a word of ordinary shape, a tall word of other letters, and a column beside one line alone", () => {
    const plain = list("oo");
    plain[5] = { ...plain[5]!, y1: plain[5]!.y0 + 23 }; // an "oo" as tall as a word
    expect(splitBulletColumns(plain)).toBe(plain);
    const letters = list("Il1|");
    expect(splitBulletColumns(letters)).toBe(letters);
    const lone = list().filter((w) => !["Erste", "Testmessungen", "Funktionskonzepte"].includes(w.text));
    expect(splitBulletColumns(lone)).toBe(lone);
  });

  it("turns the page's text into bulleted lines", () => {
    const HEADER = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext";
    const words = list();
    const rows = words.map((w, i) => {
      const [b, l] = w.line.split(".");
      return `5\t1\t${b!.slice(1)}\t${w.paragraph.split(".")[1]?.slice(1) ?? 1}\t${l!.slice(1)}\t${i + 1}\t${w.x0}\t${w.y0}\t${w.x1 - w.x0}\t${w.y1 - w.y0}\t90\t${w.text}`;
    });
    const read = analyzePage([HEADER, "1\t1\t0\t0\t0\t0\t0\t0\t1654\t2339\t-1\t", ...rows].join("\n") + "\n");
    expect(read.text).not.toContain("ooooo0");
    expect(read.text).toContain("• Analyse");
    expect(read.text).toContain("• Funktionskonzepte");
  });
});
