/**
 * The warm-up conversions a pre-started LibreOffice runs before a sandbox
 * is checkpointed, so that every sandbox restored from the image starts
 * with the import filters, the PDF export, fonts and layout already loaded
 * and initialised.
 *
 * A running LibreOffice's first conversion does most of that work once: on
 * the host a first one-page DOCX took about 150 ms, each later one about
 * 25 ms (docs/benchmarks/conversion.md, "A warm LibreOffice"). The documents are made
 * here from text (an RTF with an embedded picture, a flat ODF presentation,
 * plain text) and converted through the formats Folio accepts: RTF to DOCX,
 * DOC and ODT, each of those to PDF, the presentation to PPTX and to PDF,
 * and the text to PDF. They are Folio's own, never a user's: the image is
 * shared by every sandbox restored from it.
 *
 * This module is bundled into the sandbox program: Node's built-ins and
 * its own folder's `png.ts` only.
 */
import type { ConversionFormat } from "../formats/index.ts";
import { encodePage } from "./png.ts";

/** One warm-up step: convert `source` (a file the step before wrote, or one of {@link warmUpSources}) to `target`. */
export interface WarmUpStep {
  source: string;
  /** LibreOffice's `--convert-to` argument: `ext` or `ext:Filter name`. */
  target: string;
  /** The input format when it must be named (plain text is read as UTF-8, as the jobs' text is). */
  format?: ConversionFormat;
}

/** The files the warm-up starts from, by name. */
export async function warmUpSources(): Promise<Record<string, string | Buffer>> {
  return { "warm.rtf": warmUpRtf(await warmUpPng()), "warm.fodp": warmUpFodp(), "warm.txt": "Folio warm-up.\nGrüße, ça va?\n" };
}

/**
 * In order: each format's import once, and PDF export from Writer and
 * Impress (what every job ends with).
 */
export const WARM_UP_STEPS: readonly WarmUpStep[] = [
  { source: "warm.rtf", target: "docx:MS Word 2007 XML" },
  { source: "warm.docx", target: "pdf" },
  { source: "warm.rtf", target: "doc:MS Word 97" },
  { source: "warm.doc", target: "pdf" },
  { source: "warm.rtf", target: "odt:writer8" },
  { source: "warm.odt", target: "pdf" },
  { source: "warm.rtf", target: "pdf" },
  { source: "warm.txt", target: "pdf", format: "TXT" },
  { source: "warm.fodp", target: "pptx:Impress MS PowerPoint 2007 XML" },
  { source: "warm.pptx", target: "pdf" },
];

/** A small RGB PNG (a blue frame around an orange square): the picture import and its rendering. */
async function warmUpPng(width = 48, height = 32): Promise<Buffer> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const frame = x < 4 || y < 4 || x >= width - 4 || y >= height - 4;
      pixels.set(frame ? [20, 60, 200] : [250, 140, 20], (y * width + x) * 3);
    }
  }
  return (await encodePage({ width, height, channels: 3, pixels }, { dpi: 96 })).png;
}

/** A4 RTF: a heading, styled text, a bulleted list, a table and a picture. */
function warmUpRtf(png: Buffer): string {
  return (
    "{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0\\fswiss DejaVu Sans;}{\\f1\\froman DejaVu Serif;}}" +
    "{\\colortbl;\\red20\\green60\\blue200;}" +
    "\\paperw11906\\paperh16838\\margl1134\\margr1134\\margt1134\\margb1134\\f0\\fs24 " +
    "{\\b\\fs36\\cf1 Folio warm-up\\par}" +
    "{\\f1 Plain, {\\b bold}, {\\i italic} and {\\ul underlined} text; Gr\\u252?\\'fc\\u223?\\'dfe.\\par}" +
    "{\\pntext\\'b7\\tab}One\\par{\\pntext\\'b7\\tab}Two\\par" +
    "\\trowd\\cellx3000\\cellx6000 A1\\cell B1\\cell\\row\\trowd\\cellx3000\\cellx6000 A2\\cell B2\\cell\\row\\pard " +
    `{\\pict\\pngblip\\picw48\\pich32\\picwgoal1134\\pichgoal756 ${png.toString("hex")}}\\par` +
    "}"
  );
}

/** A flat ODF presentation: one slide with a title, a text box and a shape. */
function warmUpFodp(): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
 xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:automatic-styles><style:page-layout style:name="PM1"><style:page-layout-properties fo:page-width="28cm" fo:page-height="15.75cm" style:print-orientation="landscape"/></style:page-layout>
<style:style style:name="gr1" style:family="graphic"><style:graphic-properties draw:fill="solid" draw:fill-color="#fa8c14"/></style:style></office:automatic-styles>
<office:master-styles><style:master-page style:name="Default" style:page-layout-name="PM1"/></office:master-styles>
<office:body><office:presentation><draw:page draw:name="page1" draw:master-page-name="Default">
<draw:frame svg:x="2cm" svg:y="1cm" svg:width="24cm" svg:height="3cm"><draw:text-box><text:p>Folio warm-up</text:p></draw:text-box></draw:frame>
<draw:frame svg:x="2cm" svg:y="5cm" svg:width="14cm" svg:height="6cm"><draw:text-box><text:p>A slide with text</text:p><text:p>and a shape.</text:p></draw:text-box></draw:frame>
<draw:rect draw:style-name="gr1" svg:x="18cm" svg:y="5cm" svg:width="6cm" svg:height="6cm"/>
</draw:page></office:presentation></office:body>
</office:document>
`;
}
