/**
 * The declared font set in real gVisor sandboxes (root, runsc, LibreOffice,
 * poppler): families documents ask for are laid out with their metric
 * twins or the replacement table's choice, and a font installed on the host
 * afterwards changes no pixel of a sandbox's pages.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { backendForTests } from "./runsc.testkit.ts";

const { backend } = backendForTests("fonts");

const TEXT = "Sphinx of black quartz, judge my vow: 0123456789. ".repeat(6);

/** An RTF with one paragraph of {@link TEXT} in each family, in order (`\froman` or `\fswiss` as given). */
function rtf(families: readonly (readonly [string, "roman" | "swiss"])[]): Buffer {
  const table = families.map(([name, kind], i) => `{\\f${i}\\f${kind} ${name};}`).join("");
  const body = families.map((_, i) => `\\pard\\f${i}\\fs24 ${TEXT}\\par`).join("\n");
  return Buffer.from(`{\\rtf1\\ansi\\deff0{\\fonttbl${table}}\\paperw11906\\paperh16838\n${body}\n}`, "latin1");
}

async function pixelsOf(document: Buffer): Promise<Buffer[]> {
  const result = await backend.convert({ document, format: "RTF", maxPages: 5, timeoutMs: 60_000 });
  return Promise.all(result.pages.map((p) => sharp(p).raw().toBuffer()));
}

/**
 * A copy of a TrueType font under another family name: a new `name` table
 * (Windows Unicode records for family, subfamily, full and PostScript name)
 * appended to the file, the table directory pointed at it. Glyphs, metrics
 * and everything else are the original's.
 */
function renamedFont(ttf: Buffer, family: string): Buffer {
  const names: [number, string][] = [
    [1, family],
    [2, "Regular"],
    [4, family],
    [6, family.replace(/\s+/g, "")],
  ];
  const strings = names.map(([, s]) => Buffer.from(s, "utf16le").swap16());
  const header = Buffer.alloc(6 + 12 * names.length);
  header.writeUInt16BE(0, 0);
  header.writeUInt16BE(names.length, 2);
  header.writeUInt16BE(header.length, 4);
  let offset = 0;
  names.forEach(([id], i) => {
    const at = 6 + 12 * i;
    header.writeUInt16BE(3, at); // platform: Windows
    header.writeUInt16BE(1, at + 2); // encoding: Unicode BMP
    header.writeUInt16BE(0x409, at + 4); // language: en-US
    header.writeUInt16BE(id, at + 6);
    header.writeUInt16BE(strings[i]!.length, at + 8);
    header.writeUInt16BE(offset, at + 10);
    offset += strings[i]!.length;
  });
  const table = Buffer.concat([header, ...strings]);
  const out = Buffer.concat([ttf, Buffer.alloc((4 - (ttf.length % 4)) % 4), table]);
  const tables = out.readUInt16BE(4);
  for (let i = 0; i < tables; i++) {
    const record = 12 + 16 * i;
    if (out.toString("latin1", record, record + 4) !== "name") continue;
    out.writeUInt32BE(out.length - table.length, record + 8);
    out.writeUInt32BE(table.length, record + 12);
    return out;
  }
  throw new Error("the font has no name table");
}

describe("office documents' fonts in a runsc sandbox", () => {
  it("lays out the families Word documents use with their metric twins and the replacement table's choices, pixel for pixel", async () => {
    const asked = [
      ["Calibri", "swiss"],
      ["Cambria", "roman"],
      ["Arial", "swiss"],
      ["Times New Roman", "roman"],
      ["Courier New", "swiss"],
      ["Arial Narrow", "swiss"],
      ["Calibri Light", "swiss"],
      ["Tahoma", "swiss"],
      ["Georgia", "roman"],
      ["Book Antiqua", "roman"],
    ] as const;
    const twins = [
      ["Carlito", "swiss"],
      ["Caladea", "roman"],
      ["Liberation Sans", "swiss"],
      ["Liberation Serif", "roman"],
      ["Liberation Mono", "swiss"],
      ["Liberation Sans Narrow", "swiss"],
      ["Carlito", "swiss"],
      ["Liberation Sans", "swiss"],
      ["Caladea", "roman"],
      ["P052", "roman"],
    ] as const;
    const [got, want] = [await pixelsOf(rtf(asked)), await pixelsOf(rtf(twins))];
    expect(got.length).toBe(want.length);
    got.forEach((page, i) => expect(Buffer.compare(page, want[i]!), `page ${i + 1}: ${asked.map((a) => a[0]).join(", ")} against ${twins.map((t) => t[0]).join(", ")}`).toBe(0));
    // And the twins are not all one font: the same text in DejaVu Sans is another page.
    const dejavu = await pixelsOf(rtf(twins.map(() => ["DejaVu Sans", "swiss"] as const)));
    expect(Buffer.compare(dejavu[0]!, want[0]!)).not.toBe(0);
  }, 120_000);

  it("gives byte-identical pages after a font the document asks for is installed on the host", async () => {
    const family = `Folio Probe ${Math.random().toString(36).slice(2, 8)}`;
    const document = rtf([[family, "roman"], ["Calibri", "swiss"]]);
    const convert = async () => (await backend.convert({ document, format: "RTF", maxPages: 5, timeoutMs: 60_000 })).pages;
    const before = await convert();

    // Installed as a package would install it: a folder under /usr/share/fonts and the system cache refreshed.
    const dir = `/usr/share/fonts/truetype/folio-test-${process.pid}-${Date.now()}`;
    mkdirSync(dir, { recursive: true });
    try {
      writeFileSync(join(dir, "probe.ttf"), renamedFont(readFileSync("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"), family));
      execFileSync("fc-cache", [dir]);
      // The host sees it (so a sandbox that saw the host's fonts would use it)…
      expect(execFileSync("fc-match", ["--format=%{file}", family], { encoding: "utf8" })).toBe(join(dir, "probe.ttf"));
      // …and the sandbox's pages are the same bytes.
      const after = await convert();
      expect(after.length).toBe(before.length);
      after.forEach((png, i) => expect(Buffer.compare(png, before[i]!), `page ${i + 1} changed with ${family} installed on the host`).toBe(0));
    } finally {
      rmSync(dir, { recursive: true, force: true });
      execFileSync("fc-cache", ["/usr/share/fonts"]);
    }
  }, 120_000);
});
