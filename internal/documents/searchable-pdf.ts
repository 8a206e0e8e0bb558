/**
 * A searchable PDF (docs/ocr.md "Searchable PDF"): the document's own pages
 * with an invisible text layer placed on each word a local engine read, so
 * that any viewer can select and search the text, as OCRmyPDF's output does.
 *
 * Transport-free: the caller hands over the document (its kind and bytes),
 * the pages as they were sent to the engine (page number, size in pixels,
 * and the image itself where the page is built from it) and each page's
 * words with their boxes in pixels of that image; the answer is the PDF.
 *
 * - A PDF keeps its pages as they are (copied with pdf-lib, content
 *   untouched); the text is drawn over them. Its page images were rendered
 *   from each page's CropBox turned by its /Rotate, so a box in pixels maps
 *   back to user space through that box and that turn. A PDF pdf-lib cannot
 *   open (encrypted, damaged beyond its parser) falls back to image pages.
 * - An image, an office document's rendered pages, and that fallback become
 *   image pages: the image at its resolution, the text over it.
 *
 * The text is Helvetica (a standard font, nothing embedded), whose WinAnsi
 * encoding covers Latin scripts only: other characters become "?", so a
 * Greek or CJK page gets a text layer of question marks where its words are.
 */
import {
  PDFDocument,
  StandardFonts,
  TextRenderingMode,
  beginText,
  endText,
  popGraphicsState,
  pushGraphicsState,
  setCharacterSqueeze,
  setFontAndSize,
  setTextMatrix,
  setTextRenderingMode,
  showText,
  type PDFFont,
  type PDFImage,
  type PDFPage,
} from "pdf-lib";
import { PAGE_DPI, hasPngSignature, parsePgm } from "../formats/index.ts";
import { decodeToPng, fromPixels, imageMetadata } from "../platform/decoder/index.ts";
import { FolioError } from "../platform/errors/index.ts";

/** The resolution of an image that does not state its own: the one every other page is rendered at. */
export const DEFAULT_IMAGE_DPI = PAGE_DPI;

/** What the searchable PDF is built from; a {@link DocumentKind} of the sniffed input. */
export type SearchableKind = "pdf" | "image" | "office";

export interface SearchableWord {
  text: string;
  /** [x0, y0, x1, y1] in pixels of the page image as sent to the engine (y down). */
  bbox: readonly [number, number, number, number];
}

export interface SearchablePage {
  /** The page's number in the document, from 1. */
  pageNumber: number;
  /** The page image's size in pixels, as sent to the engine: the words' boxes are in these pixels. */
  width: number;
  height: number;
  /**
   * The page image as sent (PNG, JPEG, PGM, or any format sharp reads):
   * needed for image and office pages, and for a PDF whose own pages
   * cannot be copied ({@link canCopyPdfPages}); ignored otherwise.
   */
  image?: Buffer;
  /** The image's resolution when the caller knows it (rendered pages); absent: the image's own, else {@link DEFAULT_IMAGE_DPI}. */
  dpi?: number;
  /**
   * How far the page as sent was found turned clockwise from upright (the
   * engine's `rotation`): its words run in that direction on the image.
   */
  rotation?: 0 | 90 | 180 | 270;
  /** The page's words in reading order. */
  words: readonly SearchableWord[];
}

export interface SearchableInput {
  kind: SearchableKind;
  /** The document's bytes (only a PDF's are read). */
  document: Buffer;
  /** Exactly the pages of the answer, in its order. */
  pages: readonly SearchablePage[];
}

/**
 * True when pdf-lib opens the PDF and finds the `pageCount` pages poppler
 * counted, so its own pages can be kept; false means image pages, so the
 * caller must keep the page images.
 */
export async function canCopyPdfPages(bytes: Buffer, pageCount: number): Promise<boolean> {
  return (await openPdf(bytes))?.getPageCount() === pageCount;
}

/**
 * A page image as it is worth keeping until the PDF is built: a PDF's raw
 * grey page (4 MB for A4) as PNG, anything else as it is.
 */
export async function compactPageImage(bytes: Buffer): Promise<Buffer> {
  const pgm = parsePgm(bytes);
  if (!pgm) return bytes;
  return fromPixels(pgm.pixels, { width: pgm.width, height: pgm.height, channels: 1 }).png().toBuffer();
}

/** The searchable PDF of the pages given (see the module comment). */
export async function buildSearchablePdf(input: SearchableInput): Promise<Buffer> {
  const out = await PDFDocument.create({ updateMetadata: false });
  out.setProducer("Folio");
  const font = await out.embedFont(StandardFonts.Helvetica);
  const opened = input.kind === "pdf" ? await openPdf(input.document) : null;
  const source = opened && input.pages.every((p) => p.pageNumber <= opened.getPageCount()) ? opened : null;
  if (source) {
    const copied = await out.copyPages(
      source,
      input.pages.map((p) => p.pageNumber - 1),
    );
    copied.forEach((page, i) => {
      out.addPage(page);
      drawWords(page, font, input.pages[i]!, pdfPageFrame(page, input.pages[i]!));
    });
  } else {
    for (const p of input.pages) {
      // A caller's bug (it did not keep the page images canCopyPdfPages said it would need), or pdf-lib found fewer pages than poppler.
      if (!p.image) throw new FolioError("internal_error", `searchable PDF: page ${p.pageNumber} has no page image to build an image page from`);
      const { image, dpi } = await embedImage(out, p.image, p.dpi);
      const width = (image.width * 72) / dpi;
      const height = (image.height * 72) / dpi;
      const page = out.addPage([width, height]);
      page.drawImage(image, { x: 0, y: 0, width, height });
      drawWords(page, font, p, { x: 0, y: 0, width, height, turn: 0, scaleX: width / p.width, scaleY: height / p.height });
    }
  }
  return Buffer.from(await out.save({ useObjectStreams: true }));
}

/**
 * The PDF as pdf-lib reads it, or null when it cannot: encrypted (it would
 * load with ignoreEncryption, but the copied streams would stay encrypted
 * under a key the copy no longer has), or damaged so that pdf-lib finds no
 * pages where poppler did (pdf-lib's parser is lenient: it may "load"
 * garbage as an empty document).
 */
async function openPdf(bytes: Buffer): Promise<PDFDocument | null> {
  try {
    const doc = await PDFDocument.load(bytes, { updateMetadata: false });
    return doc.getPageCount() > 0 ? doc : null;
  } catch {
    return null;
  }
}

/**
 * Where a page image lies in user space: the rectangle it shows (a PDF
 * page's CropBox, an image page's MediaBox), the clockwise turn it was shown
 * with (/Rotate), and points per pixel along the image's axes.
 */
interface Frame {
  x: number;
  y: number;
  width: number;
  height: number;
  turn: 0 | 90 | 180 | 270;
  scaleX: number;
  scaleY: number;
}

/** pdftoppm renders the CropBox (MediaBox when absent) turned clockwise by /Rotate; the image's pixels span exactly that. */
function pdfPageFrame(page: PDFPage, p: SearchablePage): Frame {
  const box = page.getCropBox();
  const turn = (((page.getRotation().angle % 360) + 360) % 360) as Frame["turn"];
  const quarter = turn === 90 || turn === 270;
  const shownWidth = quarter ? box.height : box.width;
  const shownHeight = quarter ? box.width : box.height;
  return { ...box, turn: [0, 90, 180, 270].includes(turn) ? turn : 0, scaleX: shownWidth / p.width, scaleY: shownHeight / p.height };
}

/** A point of the image (pixels, y down) in user space. */
function toUserSpace(f: Frame, px: number, py: number): [number, number] {
  const u = px * f.scaleX;
  const v = py * f.scaleY;
  switch (f.turn) {
    case 0:
      return [f.x + u, f.y + f.height - v];
    case 90: // the page's left edge is shown on top
      return [f.x + v, f.y + u];
    case 180:
      return [f.x + f.width - u, f.y + v];
    case 270: // the page's right edge is shown on top
      return [f.x + f.width - v, f.y + f.height - u];
  }
}

/** Helvetica's descender below the baseline, as a fraction of the font size (its AFM: -207/1000). */
const DESCENT = 0.207;

/**
 * Draws each word as invisible text over its box, line by line: one font
 * size (from the line's height) and one baseline per line, as text
 * extraction groups a line by them; each word starts where its box does
 * and is squeezed or stretched (Tz) to the box's width, with a space after
 * every word but a line's last so text extraction keeps words apart.
 */
function drawWords(page: PDFPage, font: PDFFont, p: SearchablePage, frame: Frame): void {
  const charset = new Set(font.getCharacterSet());
  const words = p.words.map((w) => ({ text: winAnsiText(w.text, charset), bbox: w.bbox })).filter((w) => w.text !== "" && w.bbox[2] > w.bbox[0] && w.bbox[3] > w.bbox[1]);
  if (words.length === 0) return;
  // Adding the font normalizes the page, which (pdf-lib's autoNormalizeCTM, on by default) wraps its
  // content in q … Q: a copied page whose content leaves the graphics state changed cannot move the text.
  const fontKey = page.node.newFontDictionary("FolioOcr", font.ref);
  const ops = [pushGraphicsState(), beginText(), setTextRenderingMode(TextRenderingMode.Invisible)];
  // The direction the words run in user space: their turn on the image, less the page's turn for showing.
  const textTurn = ((((p.rotation ?? 0) - frame.turn) % 360) + 360) % 360;
  const across = textTurn === 0 || textTurn === 180;
  for (const line of linesOf(words, p.rotation ?? 0)) {
    const boxes = line.map((w) => userBox(frame, w.bbox));
    // The line's extent across the text: from the lowest descender to the highest ascender.
    const low = Math.min(...boxes.map((b) => (across ? b.y0 : b.x0)));
    const high = Math.max(...boxes.map((b) => (across ? b.y1 : b.x1)));
    const size = high - low;
    const rise = DESCENT * size;
    line.forEach((w, i) => {
      const b = boxes[i]!;
      const length = across ? b.x1 - b.x0 : b.y1 - b.y0;
      const shown = i < line.length - 1 ? `${w.text} ` : w.text;
      const natural = font.widthOfTextAtSize(w.text, size);
      const squeeze = natural > 0 ? (100 * length) / natural : 100;
      // Text matrix [a b c d e f]: the text's direction, the way up of its letters, and the start of its baseline.
      const matrix: [number, number, number, number, number, number] =
        textTurn === 0
          ? [1, 0, 0, 1, b.x0, low + rise]
          : textTurn === 90 // runs down the page, tops of letters to the right
            ? [0, -1, 1, 0, low + rise, b.y1]
            : textTurn === 180
              ? [-1, 0, 0, -1, b.x1, high - rise]
              : [0, 1, -1, 0, high - rise, b.y0];
      ops.push(setFontAndSize(fontKey, size), setCharacterSqueeze(squeeze), setTextMatrix(...matrix), showText(font.encodeText(shown)));
    });
  }
  ops.push(endText(), popGraphicsState());
  page.pushOperators(...ops);
}

/** A word's box in user space. */
function userBox(frame: Frame, bbox: SearchableWord["bbox"]): { x0: number; y0: number; x1: number; y1: number } {
  const [ax, ay] = toUserSpace(frame, bbox[0], bbox[1]);
  const [bx, by] = toUserSpace(frame, bbox[2], bbox[3]);
  return { x0: Math.min(ax, bx), y0: Math.min(ay, by), x1: Math.max(ax, bx), y1: Math.max(ay, by) };
}

/** The words, in reading order, cut into lines: a word starts a new line unless it follows the last one along the text and overlaps it across. */
function linesOf<W extends { bbox: SearchableWord["bbox"] }>(words: readonly W[], turn: number): W[][] {
  const lines: W[][] = [];
  for (const w of words) {
    const line = lines.at(-1);
    const last = line?.at(-1);
    if (line && last && sameLine(last.bbox, w.bbox, turn)) line.push(w);
    else lines.push([w]);
  }
  return lines;
}

/** The next word continues the line when it starts after this one, along the text's direction on the image, and their boxes overlap by half across it. */
function sameLine(a: SearchableWord["bbox"], b: SearchableWord["bbox"], turn: number): boolean {
  const along = turn === 0 || turn === 180 ? 0 : 1;
  const across = 1 - along;
  const overlap = Math.min(a[across + 2]!, b[across + 2]!) - Math.max(a[across]!, b[across]!);
  const shorter = Math.min(a[across + 2]! - a[across]!, b[across + 2]! - b[across]!);
  const forward = turn === 0 || turn === 90 ? b[along]! >= a[along]! : b[along]! <= a[along]!;
  return forward && overlap > shorter / 2;
}

/** The word in characters Helvetica's WinAnsi encoding has: compatibility forms spelled out (ﬁ → fi), anything else "?". */
export function winAnsiText(text: string, charset: ReadonlySet<number>): string {
  let out = "";
  for (const ch of text.normalize("NFKC")) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) continue;
    out += charset.has(cp) ? ch : "?";
  }
  return out.trim();
}

/**
 * The page image embedded as it is when PDF can carry it (PNG, JPEG);
 * anything else (TIFF, WebP, GIF, BMP, a PDF's grey PGM) as PNG first.
 */
async function embedImage(doc: PDFDocument, bytes: Buffer, knownDpi: number | undefined): Promise<{ image: PDFImage; dpi: number }> {
  const pgm = parsePgm(bytes);
  // A client's image is read by the decoder's child process (platform/decoder), never here.
  const meta = pgm ? undefined : await imageMetadata(bytes);
  const dpi = knownDpi ?? (meta?.density && meta.density > 0 ? meta.density : DEFAULT_IMAGE_DPI);
  const isPng = hasPngSignature(bytes);
  const isJpeg = bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
  try {
    if (isPng) return { image: await doc.embedPng(bytes), dpi };
    if (isJpeg) return { image: await doc.embedJpg(bytes), dpi };
  } catch {
    // A PNG or JPEG pdf-lib's decoder does not take (16-bit, arithmetic coding…): as PNG through sharp below.
  }
  const png = pgm ? await fromPixels(pgm.pixels, { width: pgm.width, height: pgm.height, channels: 1 }).png().toBuffer() : (await decodeToPng(bytes)).png;
  return { image: await doc.embedPng(png), dpi };
}
