/** The jobs benchmark's scanned PDF (bench/jobs.ts, "The PDF"): corpus page images, one a page, built with pdf-lib and cached by page count. */
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { PDFDocument } from "pdf-lib";
import sharp from "sharp";
import { ROOT } from "./common.ts";

const ARTIFACTS = join(ROOT, "test-artifacts");
const CORPUS = resolve(ROOT, process.env.FOLIO_EVAL_CORPUS ?? "../shared/corpus/ocr");

/**
 * A page image's pixels are taken as 200 DPI, the resolution Folio renders
 * PDF pages at (PAGE_DPI): a page is its image's size at 200 DPI, so both
 * Folio and the CLI baseline get the scan's own pixels back, unresampled
 * (most of the corpus's pages are A4 or Letter at 200 DPI already).
 */
export const SCAN_DPI = 200;
/**
 * The images are stored as baseline JPEG (colour kept, transparency on
 * white), as a scanner's JPEG mode writes them: about 470 KB a page with
 * these pages, so 1,000 pages stay under FOLIO_JOB_MAX_BYTES (500 MiB).
 */
export const JPEG_QUALITY = 75;
/** Bumped when the recipe changes, so a cached PDF of an older recipe is not reused. */
const RECIPE = "v1";

/** The corpus README's "page" rows (`| \`file\` | page | …`), in file-name order. */
function scannedPages(): string[] {
  const readme = join(CORPUS, "..", "README.md");
  if (!existsSync(readme)) throw new Error(`${readme} is missing: the corpus README says which images are pages`);
  const names = new Set<string>();
  for (const line of readFileSync(readme, "utf8").split("\n")) {
    const m = /^\|\s*`([^`]+\.(?:png|jpg|jpeg|tif|tiff))`\s*\|\s*page\s*\|/.exec(line);
    if (m && existsSync(join(CORPUS, m[1]!))) names.add(m[1]!);
  }
  if (names.size === 0) throw new Error(`no page image of ${CORPUS} is listed in ${readme}`);
  return [...names].sort();
}

/** test-artifacts/jobs-scan-<pages>p-<recipe>.pdf, built when missing: one corpus page image per page, in turn. */
export async function scannedPdf(pages: number): Promise<{ path: string; bytes: number; images: string[]; built: boolean }> {
  const images = scannedPages();
  const path = join(ARTIFACTS, `jobs-scan-${pages}p-${RECIPE}.pdf`);
  if (existsSync(path)) return { path, bytes: readFileSync(path).length, images, built: false };
  await mkdir(ARTIFACTS, { recursive: true });
  const jpegs = await Promise.all(
    images.map(async (name) => {
      const { data, info } = await sharp(join(CORPUS, name)).flatten({ background: "#ffffff" }).jpeg({ quality: JPEG_QUALITY }).toBuffer({ resolveWithObject: true });
      return { data, width: info.width, height: info.height };
    }),
  );
  const doc = await PDFDocument.create();
  doc.setProducer("folio bench/jobs.ts (pdf-lib)");
  for (let i = 0; i < pages; i++) {
    const jpeg = jpegs[i % jpegs.length]!;
    // Its own image object on every page, as a scan has: a repeated image is not shared.
    const image = await doc.embedJpg(jpeg.data);
    const size = { width: (jpeg.width * 72) / SCAN_DPI, height: (jpeg.height * 72) / SCAN_DPI };
    doc.addPage([size.width, size.height]).drawImage(image, { x: 0, y: 0, ...size });
  }
  const bytes = await doc.save({ useObjectStreams: false });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, bytes);
  await rename(tmp, path);
  return { path, bytes: bytes.length, images, built: true };
}
