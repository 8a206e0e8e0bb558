/**
 * The page count of the PDF LibreOffice wrote, read from the file instead of
 * running `pdfinfo` (70–150 ms under gVisor: a process start, and poppler
 * reading the whole file). LibreOffice writes a plain PDF: one classic
 * cross-reference table starting at object 0, uncompressed objects, no
 * object streams, no incremental updates. So the count is three small reads
 * away: the trailer's `/Root` (the catalog), the catalog's `/Pages` (the
 * page tree's root) and that node's `/Count`, each object found through its
 * fixed-width (20-byte) cross-reference entry.
 *
 * Anything else (an updated or encrypted file, a cross-reference stream, a
 * reference that does not point at the object it names, an object that does
 * not fit in {@link MAX_OBJECT_BYTES}) is `undefined`: the caller asks
 * pdfinfo. Never throws.
 *
 * Bundled into the sandbox program: Node's built-ins only.
 */
import { open, type FileHandle } from "node:fs/promises";

/** The end of the file searched for `trailer` … `startxref` … `%%EOF`. */
const TAIL_BYTES = 4096;
/** Bytes of the cross-reference table's header read (`xref`, then `0 <n>`). */
const XREF_HEADER_BYTES = 64;
/** One cross-reference entry: `nnnnnnnnnn ggggg n` and a two-byte end of line. */
const XREF_ENTRY_BYTES = 20;
/** The page tree's root lists every page's reference (`123 0 R `): room for some 100,000 pages. */
const MAX_OBJECT_BYTES = 1024 * 1024;

/** The page count of a PDF, read from its page tree; undefined when the file is not the simple case (see the module comment). */
export async function quickPdfPageCount(path: string): Promise<number | undefined> {
  let file: FileHandle | undefined;
  try {
    file = await open(path, "r");
    const pdf = new PdfReader(file, (await file.stat()).size);
    const tail = await pdf.text(Math.max(0, pdf.size - TAIL_BYTES), TAIL_BYTES);
    const end = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(tail);
    const trailerAt = tail.lastIndexOf("trailer");
    if (!end || trailerAt < 0 || trailerAt > end.index) return undefined;
    const trailer = tail.slice(trailerAt, end.index);
    // An incremental update or encryption is not what LibreOffice writes here.
    if (/\/(?:Prev|Encrypt|XRefStm)\b/.test(trailer)) return undefined;
    const xrefAt = Number(end[1]);
    const catalog = await pdf.object(xrefAt, reference(trailer, "Root"));
    if (!catalog || !/\/Type\s*\/Catalog\b/.test(catalog)) return undefined;
    const tree = await pdf.object(xrefAt, reference(catalog, "Pages"));
    if (!tree || !/\/Type\s*\/Pages\b/.test(tree)) return undefined;
    const count = /\/Count\s+(\d{1,9})\b/.exec(tree);
    const pages = count ? Number(count[1]) : 0;
    return pages >= 1 ? pages : undefined;
  } catch {
    return undefined;
  } finally {
    await file?.close().catch(() => undefined);
  }
}

interface Reference {
  num: number;
  gen: number;
}

/** `/<key> <num> <gen> R` in a dictionary's text. */
function reference(dictionary: string, key: string): Reference | undefined {
  const m = new RegExp(`/${key}\\s+(\\d{1,9})\\s+(\\d{1,5})\\s+R\\b`).exec(dictionary);
  return m ? { num: Number(m[1]), gen: Number(m[2]) } : undefined;
}

class PdfReader {
  constructor(
    private readonly file: FileHandle,
    readonly size: number,
  ) {}

  /** Up to `length` bytes at `at`, as Latin-1 (PDF syntax is bytes). */
  async text(at: number, length: number): Promise<string> {
    const buffer = Buffer.alloc(Math.max(0, Math.min(length, this.size - at)));
    const { bytesRead } = await this.file.read(buffer, 0, buffer.length, at);
    return buffer.subarray(0, bytesRead).toString("latin1");
  }

  /** The text of object `ref` from `obj` to `endobj`, found through the table at `xrefAt`. */
  async object(xrefAt: number, ref: Reference | undefined): Promise<string | undefined> {
    if (!ref || xrefAt >= this.size) return undefined;
    const header = /^xref[ \t]*\r?\n(\d+)[ \t]+(\d+)[ \t]*\r?\n/.exec(await this.text(xrefAt, XREF_HEADER_BYTES));
    // One section from object 0, as LibreOffice writes it.
    if (!header || Number(header[1]) !== 0 || ref.num >= Number(header[2])) return undefined;
    const entry = /^(\d{10}) (\d{5}) n/.exec(await this.text(xrefAt + header[0].length + ref.num * XREF_ENTRY_BYTES, XREF_ENTRY_BYTES));
    if (!entry || Number(entry[2]) !== ref.gen) return undefined;
    const text = await this.text(Number(entry[1]), MAX_OBJECT_BYTES);
    const start = new RegExp(`^${ref.num}\\s+${ref.gen}\\s+obj\\b`).exec(text);
    const end = text.indexOf("endobj");
    return start && end > 0 ? text.slice(start[0].length, end) : undefined;
  }
}
