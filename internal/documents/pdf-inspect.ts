/**
 * What `pdf.ts` learns about a PDF before rendering it: the page count and
 * page sizes from `pdfinfo`, and from the sizes the resolution each page is
 * rendered at within the pixel budget, as the runs of pages each pdftoppm
 * process renders.
 */
import type { PageSelection } from "../formats/pages.ts";
import type { PdfPageSize } from "./pdf.ts";
import { tool, unreadable, type Deadline } from "./poppler.ts";

export interface PdfInfo {
  pageCount: number;
  /** Pages from..min(pageCount, to) of {@link inspect}, at index page - 1. */
  sizes: PdfPageSize[];
}

/**
 * The pages whose sizes are read: those a selection can render, or the
 * first `maxPages` (more is refused anyway). An open range counts
 * `maxPages` pages from its start: a longer one is refused.
 */
export function inspectedSpan(pages: PageSelection | undefined, maxPages: number): { from: number; to: number } {
  if (!pages?.length) return { from: 1, to: maxPages };
  const last = pages.at(-1)!;
  return { from: pages[0]!.first, to: last.last ?? last.first + maxPages - 1 };
}

export async function inspect(file: string, from: number, to: number, d: Deadline): Promise<PdfInfo> {
  let stdout: string;
  try {
    // -f/-l: per-page sizes; pdfinfo clamps -l to the real page count.
    ({ stdout } = await tool("pdfinfo", ["-f", String(from), "-l", String(to), file], { read: [file] }, d));
  } catch (err) {
    throw d.translate(err);
  }
  const pages = /^Pages:\s+(\d+)\s*$/m.exec(stdout);
  if (!pages) throw unreadable("pdfinfo reported no page count");
  const sizes: PdfPageSize[] = [];
  const rotations = new Map<number, number>();
  for (const m of stdout.matchAll(/^Page\s+(\d+)\s+rot:\s+(-?\d+)/gm)) rotations.set(Number(m[1]), Number(m[2]));
  for (const m of stdout.matchAll(/^Page\s+(\d+)\s+size:\s+([\d.]+)\s+x\s+([\d.]+)\s+pts/gm)) {
    const n = Number(m[1]);
    const w = Number(m[2]);
    const h = Number(m[3]);
    const turned = Math.abs(rotations.get(n) ?? 0) % 180 === 90;
    sizes[n - 1] = turned ? { width: h, height: w } : { width: w, height: h };
  }
  return { pageCount: Number(pages[1]), sizes };
}

export interface ResolutionRun {
  first: number;
  last: number;
  dpi: number;
}

/** Consecutive pages grouped by the resolution each can be rendered at within the pixel budget. */
export function resolutionRuns(sizes: readonly PdfPageSize[], pages: readonly number[], dpi: number, maxPixels: number): ResolutionRun[] {
  const runs: ResolutionRun[] = [];
  for (const n of pages) {
    const s = sizes[n - 1];
    let pageDpi = dpi;
    if (s && s.width > 0 && s.height > 0) {
      const pixels = Math.ceil((s.width * dpi) / 72) * Math.ceil((s.height * dpi) / 72);
      if (pixels > maxPixels) pageDpi = dpiWithin(s, maxPixels);
    }
    const prev = runs.at(-1);
    if (prev && prev.dpi === pageDpi && prev.last === n - 1) prev.last = n;
    else runs.push({ first: n, last: n, dpi: pageDpi });
  }
  return runs;
}

/**
 * The highest resolution (pdftoppm takes fractional DPI; 3 decimals here) at
 * which the page's pixel size, rounded up as pdftoppm does, stays within the
 * budget: the largest k = dpi/72 with (w·k + 1)(h·k + 1) <= maxPixels.
 */
function dpiWithin(size: PdfPageSize, maxPixels: number): number {
  const { width: w, height: h } = size;
  const k = (-(w + h) + Math.sqrt((w + h) ** 2 + 4 * w * h * (maxPixels - 1))) / (2 * w * h);
  return Math.max(0.001, Math.floor(k * 72 * 1000) / 1000);
}

/** pdftoppm's arguments for one run of pages, written as `<prefix>-<n>.png` or `.pgm` (`-gray`). */
export function pdftoppmArgs(run: ResolutionRun, format: "png" | "pgm", file: string, prefix: string): string[] {
  return ["-q", "-cropbox", "-r", String(run.dpi), "-f", String(run.first), "-l", String(run.last), format === "png" ? "-png" : "-gray", file, prefix];
}
